"""baselines/rl/diagnostics.py: one row per rollout with the update SB3 logged before it, the normalizer's statistics
and the rollout's action shares, through ``baselines.tuning.ablation``'s ``diagnose``."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from baselines.rl.diagnostics import ROLLOUT_KEYS, TRAIN_KEYS, action_shares, diagnostics_callback  # noqa: E402
from baselines.rl.train import make_vec_env  # noqa: E402
from baselines.tuning.ablation import Variant, make_env, new_model, setup, train_and_evaluate  # noqa: E402

SMALL = {"n_envs": 2, "n_steps": 16, "batch_size": 32, "n_epochs": 2, "learning_rate": 1e-3}
# ClusterApprox-v1 with a MultiDiscrete action (a job slot or idle per machine), the discrete statistics' case
DISCRETE = {"horizon": 30, "action_mode": "work_conserving"}


def _rows(path):
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_a_row_per_rollout_with_the_previous_update_and_the_rollouts_actions(tmp_path):
    path = tmp_path / "diag.csv"
    variant = Variant("small", env_kwargs=DISCRETE, hyperparams=SMALL)
    train_and_evaluate("ClusterApprox-v1", variant, 0, [64, 96], [0], diagnose=path)
    choices = int(make_env(setup("ClusterApprox-v1", variant)).action_space.nvec.max())  # K + 1 per machine
    rows = _rows(path)
    assert [int(r["timesteps"]) for r in rows] == [32, 64, 96]  # 2 copies x 16 steps per rollout, one row each
    assert list(rows[0])[:3] == ["variant", "train_seed", "timesteps"]
    assert set(rows[0]) >= {f"train/{k}" for k in TRAIN_KEYS} | set(ROLLOUT_KEYS)
    assert np.isnan(float(rows[0]["train/approx_kl"]))  # no update before the first rollout
    for row in rows[1:]:
        assert float(row["train/learning_rate"]) == pytest.approx(SMALL["learning_rate"])
        assert np.isfinite(float(row["train/approx_kl"])) and float(row["train/entropy_loss"]) < 0
    for row in rows:
        assert 0 <= float(row["action0_share"]) <= 1 and 0 <= float(row["greedy_action0_share"]) <= 1
        assert 1 / choices <= float(row["max_prob"]) <= 1
        assert float(row["reward_scale"]) > 0 and float(row["raw_reward"]) >= 0  # utility increments


def test_probing_checkpoints_does_not_change_training(tmp_path):
    """The sampled play of ``checkpoint_probe`` draws from torch's generator and restores it: a diagnosed run's
    curve is the plain run's, and its greedy value is the curve's."""
    path = tmp_path / "diag.csv"
    variant = Variant("small", env_kwargs={"horizon": 30}, hyperparams=SMALL)
    plain = train_and_evaluate("ClusterApprox-v1", variant, 0, [32, 64, 96], [0, 1])
    diagnosed = train_and_evaluate("ClusterApprox-v1", variant, 0, [32, 64, 96], [0, 1], diagnose=path)
    assert [r["value"] for r in diagnosed] == [r["value"] for r in plain]
    probes = _rows(tmp_path / "diag-checkpoints.csv")
    assert [int(p["timesteps"]) for p in probes] == [32, 64, 96]
    for probe, steps in zip(probes, (32, 64, 96), strict=True):
        values = [r["value"] for r in plain if r["timesteps"] == steps]
        assert float(probe["greedy_value"]) == pytest.approx(float(np.mean(values)))
        for key in ("greedy_action0", "greedy_repeat", "sampled_action0", "sampled_repeat"):
            assert 0 <= float(probe[key]) <= 1


def test_action_shares_count_zeros_and_repeats():
    actions = np.array([[[0, 2]], [[0, 1]], [[3, 1]]])  # 3 steps, 1 copy, 2 components
    shares = action_shares(actions)
    assert shares == {"action0": 2 / 6, "repeat": 2 / 4}
    assert all(np.isnan(v) for v in action_shares(actions.astype(float)).values())  # a Box action


def _trained(env_id, env_kwargs, path):
    """A small model trained 64 steps on ``env_id``'s native env with the callback writing to ``path``, its env, and
    the callback's last row."""
    s = setup(env_id, Variant("small", env_kwargs=env_kwargs, hyperparams=SMALL))
    vec_env, _ = make_vec_env(s.config, seed=7)
    model = new_model(s.config, vec_env, seed=0)
    model.learn(total_timesteps=64, callback=diagnostics_callback(path))
    return model, vec_env, _rows(path)[-1]


def test_the_last_row_is_the_models_rollout_buffer_and_normalizer(tmp_path):
    model, vec_env, row = _trained("ClusterApprox-v1", DISCRETE, tmp_path / "diag.csv")
    buffer, normalizer = model.rollout_buffer, model.get_vec_normalize_env()
    assert float(row["action0_share"]) == pytest.approx(float(np.mean(buffer.actions == 0)))
    assert float(row["return_mean"]) == pytest.approx(float(buffer.returns.mean()), rel=1e-5)
    # the update after the last rollout does not move the normalizer's statistics
    assert float(row["reward_scale"]) == pytest.approx(float(np.sqrt(normalizer.ret_rms.var + normalizer.epsilon)))
    vec_env.close()


def test_a_box_action_reports_its_bounds_not_discrete_shares(tmp_path):
    _, vec_env, row = _trained("ClusterSLA-v1", {"horizon": 48}, tmp_path / "diag.csv")
    assert 0 <= float(row["action_low_share"]) <= 1 and 0 <= float(row["action_high_share"]) <= 1
    assert np.isnan(float(row["action0_share"])) and np.isfinite(float(row["train/std"]))
    vec_env.close()


def test_the_table_puts_each_checkpoint_next_to_the_last_logged_update_of_its_run():
    from baselines.rl.diagnostics import markdown

    def update(variant, seed, steps, kl):
        return {"variant": variant, "train_seed": seed, "timesteps": str(steps), "train/approx_kl": str(kl),
                "train/entropy_loss": str(-steps / 1000), "max_prob": "0.5"}  # fmt: skip

    updates = [update("a", "0", 100, "nan"), update("a", "0", 200, 0.01), update("a", "0", 300, "nan"),
               update("a", "0", 400, 0.03), update("b", "0", 200, 0.02)]  # fmt: skip
    probes = [{"variant": "a", "train_seed": "0", "timesteps": "300", "greedy_value": "12.5"}]
    table = markdown(updates, probes).splitlines()
    assert len(table) == 3  # header, rule, one checkpoint
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    row = dict(zip(header, cells, strict=True))
    # the update at 200 (the one at 300 logged nothing, the one at 400 comes after, b is another run)
    assert row["approx. KL"] == "0.0100" and row["entropy loss"] == "-0.20"
    assert row["greedy value"] == "12.5" and row["sampled value"] == "—"
