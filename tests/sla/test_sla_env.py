"""ClusterSLA-v1 as a Gymnasium env: spaces and modes (observations rebuilt from info, check_env in every mode), info
consistency, the episode summary, info levels, rewards, bad input, trace files."""

from __future__ import annotations

import copy
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cluster_envs.common.seeding import episode_streams
from cluster_envs.sla.config import TRACE_PRESETS
from cluster_envs.sla.env import PRESETS, ClusterSLAEnv
from cluster_envs.sla.model import standin_shares

ENV = "ClusterSLA-v1"


# β of each preset as documented in the spec's preset table (§3.1); "mean": the public mean shares (the stand-in's
# tenant weights, a replay's history window: cluster_envs.sla.model).
PRESET_SLA = {
    "paper": (0.2, 0.3, 0.5),
    "paper_a16": (0.2, 0.3, 0.5),
    "default": (0.2, 0.3, 0.5),
    "paper_real_standin": "mean",
    "example_1_1": (0.5, 0.2, 0.3),
    "proportionality_3_4": (0.5, 0.3, 0.2),
    "production": (1 / 128,) * 128,
    "alibaba_gpu_2023": "mean",  # built from the trace files in test_sla_trace.py
    "azure_llm_2023": "mean",  # and these in test_sla_azure.py
    "azure_llm_2023_sizes": "mean",
}


def test_every_preset_has_a_documented_sla():
    assert set(PRESET_SLA) == set(PRESETS)


@pytest.mark.parametrize("preset", [name for name in PRESETS if name not in TRACE_PRESETS])
def test_every_preset_builds_with_the_documented_size_and_sla(preset):
    env = gym.make(ENV, preset=preset).unwrapped
    expected_n = {"paper_real_standin": 6, "production": 128}.get(preset, 3)
    assert env.observation_space.shape == (3 * expected_n,)
    expected_sla = PRESET_SLA[preset]
    if preset in ("paper", "paper_a16"):  # 3·10⁶ steps: generating the loads is exercised by the slow tests
        assert env.config.sla == expected_sla
        return
    env.reset(seed=0)
    assert env.loads.shape == (expected_n, env.config.horizon)
    if expected_sla == "mean":  # the stand-in: its tenant weights, the users' expected shares of the load
        expected_sla = standin_shares(
            episode_streams(np.random.default_rng(0), ClusterSLAEnv.stream_names)["tenants"], expected_n
        )
        means = env.loads.mean(axis=1)
        np.testing.assert_allclose(env.problem.sla, means / means.sum(), atol=0.02)  # what the loads realise
    np.testing.assert_allclose(env.problem.sla, expected_sla, rtol=1e-12)


def test_paper_synthetic_loads_are_critically_loaded_in_expectation():
    env = gym.make(ENV, horizon=600_000).unwrapped
    env.reset(seed=0)
    period = 100_000
    loads = env.loads
    assert loads[0, :period].sum() == 0  # user 1 idle in P1
    assert loads[1, 1:period].sum() == 0 and loads[2, 0] == 0  # burst then stream
    per_period = loads.reshape(3, 6, period).sum(axis=(0, 2)) / period
    np.testing.assert_allclose(per_period, 1.0, atol=0.02)


def _expected_observation(info, sla_bar, obs_mode, sla_tol, time):
    """The documented observation pieces, in their box order, rebuilt from a step's full ``info`` (spec §3.2)."""
    deficit = info["sla_deficit"]
    parts = {"active": info["active"], "alloc": info["alloc"], "sla": sla_bar}
    if obs_mode == "binary+sla":
        parts["sla_flag"] = deficit > sla_tol
    if obs_mode == "full":
        parts["log_queue"] = np.log1p(info["queue"])
        parts["log_load"] = np.log1p(info["load"])  # L_t: the load of the step just executed
        parts["signed_log_deficit"] = np.sign(deficit) * np.log1p(np.abs(deficit))
    if time is not None:
        parts["time"] = [time]
    return {key: np.asarray(value, dtype=np.float64) for key, value in parts.items()}


def _assert_observation(obs, expected, observation_format):
    if observation_format == "dict":
        assert list(obs) == list(expected)
        for key, value in expected.items():
            np.testing.assert_allclose(obs[key], value, rtol=1e-6, atol=0, err_msg=key)
    else:
        np.testing.assert_allclose(obs, np.concatenate(list(expected.values())), rtol=1e-6, atol=0)


@pytest.mark.parametrize("obs_mode", ["binary", "binary+sla", "full"])
@pytest.mark.parametrize("observation_format", ["flat", "dict"])
@pytest.mark.parametrize("include_time", [False, True])
def test_observation_modes_stay_in_their_spaces_and_match_the_steps_info(obs_mode, observation_format, include_time):
    """Every piece of the observation is rebuilt from the same step's ``info``: the flag 1[D_t > sla_tol] (with a
    non-zero sla_tol), log1p(Q_{t+1}), log1p(L_t) of the step just executed and sign(D_t)·log1p(|D_t|)."""
    horizon, sla_tol = 600, 0.3
    env = gym.make(ENV, horizon=horizon, observation_mode=obs_mode, observation_format=observation_format,
                   include_time=include_time, sla_tol=sla_tol)  # fmt: skip
    obs, reset_info = env.reset(seed=1)
    sla_bar = reset_info["sla"] / max(1.0, reset_info["sla"].sum())
    at_reset = {"active": np.zeros(3), "alloc": np.full(3, 1 / 3), "queue": np.zeros(3), "load": np.zeros(3),
                "sla_deficit": np.zeros(3)}  # fmt: skip
    _assert_observation(obs, _expected_observation(at_reset, sla_bar, obs_mode, sla_tol, 0.0 if include_time else None),
                        observation_format)  # fmt: skip
    env.action_space.seed(1)
    threshold_decided = 0  # steps where 1[D > sla_tol] differs from 1[D > 0]
    for _ in range(horizon):
        assert env.observation_space.contains(obs)
        obs, _, _, _, info = env.step(env.action_space.sample())
        time = info["t"] / horizon if include_time else None
        _assert_observation(obs, _expected_observation(info, sla_bar, obs_mode, sla_tol, time), observation_format)
        threshold_decided += bool(((info["sla_deficit"] > 0) & (info["sla_deficit"] <= sla_tol)).any())
    assert env.observation_space.contains(obs)
    assert threshold_decided > 0


@pytest.mark.parametrize("obs_mode", ["binary", "binary+sla", "full"])
@pytest.mark.parametrize("observation_format", ["flat", "dict"])
@pytest.mark.parametrize("action_mode", ["normalize", "sub_simplex", "softmax"])
def test_gymnasium_env_checker_in_every_mode(obs_mode, observation_format, action_mode):
    """gymnasium's ``check_env`` with warnings as errors, except the two warnings that are by design."""
    env = gym.make(
        ENV, horizon=60, observation_mode=obs_mode, observation_format=observation_format, action_mode=action_mode
    ).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if obs_mode == "full":  # log1p(Q), log1p(L) and the signed log deficit are unbounded (spec §3.2: high = +inf)
            warnings.filterwarnings("ignore", message=r".*A Box observation space (maximum|minimum) value is")
        if action_mode == "softmax":  # logits Box(-10, 10) (spec §3.3), wider than [-1, 1] for Gaussian policies
            warnings.filterwarnings("ignore", message=r".*we recommend using a symmetric and normalized space")
        check_env(env, skip_render_check=False)


def test_paper_observation_is_feedback_own_allocation_and_sla():
    env = gym.make(ENV, horizon=60).unwrapped
    obs, _ = env.reset(seed=2)
    np.testing.assert_allclose(obs, [0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 0.2, 0.3, 0.5], rtol=1e-7)
    obs, _, _, _, info = env.step(np.array([0.5, 0.25, 0.25]))
    np.testing.assert_array_equal(obs[:3], info["queue"] > 0)
    np.testing.assert_allclose(obs[3:6], [0.5, 0.25, 0.25])


@pytest.mark.parametrize(("mode", "action", "expected"), [
    ("normalize", [2.0, 1.0, 1.0], [0.5, 0.25, 0.25]),
    ("normalize", [0.0, 0.0, 0.0], [1 / 3] * 3),
    ("normalize", [-1.0, 1.0, 3.0], [0.0, 0.25, 0.75]),
    ("sub_simplex", [0.2, 0.1, 0.3], [0.2, 0.1, 0.3]),
    ("sub_simplex", [0.6, 0.6, 0.3], [0.4, 0.4, 0.2]),
    ("sub_simplex", [2.0, -1.0, 0.0], [1.0, 0.0, 0.0]),
    ("softmax", [0.0, 0.0, np.log(2.0)], [0.25, 0.25, 0.5]),
])  # fmt: skip
def test_action_modes_map_actions_to_allocations(mode, action, expected):
    env = gym.make(ENV, horizon=60, action_mode=mode).unwrapped
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array(action))
    np.testing.assert_allclose(info["alloc"], expected, atol=1e-12)
    assert info["action_projected"] == (mode != "softmax" and not np.allclose(action, expected, atol=1e-6))


def test_info_is_consistent_with_a_recomputation_from_the_trajectory():
    env = gym.make(ENV, horizon=1200).unwrapped
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    cum_work, cum_load, static_queue = np.zeros(3), np.zeros(3), np.zeros(3)
    share = np.array([0.2, 0.3, 0.5])
    opt_queue, static_cum = 0.0, np.zeros(3)
    for _ in range(1200):
        _, _, _, truncated, info = env.step(rng.dirichlet(np.ones(3)))
        cum_work += info["work"]
        cum_load += info["load"]
        demand = static_queue + info["load"]
        static_cum += np.minimum(share, demand)
        static_queue = demand - np.minimum(share, demand)
        opt_queue = max(0.0, opt_queue + info["load"].sum() - 1.0)  # Lindley form of OPT_1
        np.testing.assert_allclose(info["cum_work"], cum_work, atol=1e-9)
        np.testing.assert_allclose(info["static_cum_work"], static_cum, atol=1e-9)
        np.testing.assert_allclose(info["sla_deficit"], static_cum - cum_work, atol=1e-9)
        assert info["opt_cum_work"] == pytest.approx(cum_load.sum() - opt_queue, abs=1e-8)
        assert info["regret"] == pytest.approx(info["opt_cum_work"] - cum_work.sum(), abs=1e-9)
        assert info["queue_l2"] == pytest.approx(np.linalg.norm(info["queue"]))
    assert truncated
    summary = info["episode_summary"]
    assert summary["total_work"] == pytest.approx(cum_work.sum())
    assert summary["regret"] == pytest.approx(info["regret"])


def _lindley_cum_work(aggregate_load: np.ndarray, capacity: float) -> np.ndarray:
    """OPT_c(t) for every t by the Lindley recursion (spec §2.6), independent of the env's closed form."""
    queue, served, out = 0.0, 0.0, []
    for load in aggregate_load:
        work = min(capacity, queue + load)
        queue += load - work
        served += work
        out.append(served)
    return np.array(out)


def _static_cum_work(loads: np.ndarray, share: np.ndarray) -> np.ndarray:
    """W'_t (T, N): each user alone on a server of rate ``share[i]`` (spec §2.6 (O2))."""
    queue, cum, out = np.zeros(loads.shape[0]), np.zeros(loads.shape[0]), []
    for load in loads.T:
        work = np.minimum(share, queue + load)
        queue += load - work
        cum += work
        out.append(cum.copy())
    return np.array(out)


@pytest.mark.parametrize(("kwargs", "loads"), [
    ({"action_mode": "normalize", "reward_mode": "work_sla"}, None),
    ({"action_mode": "sub_simplex", "reward_mode": "neg_regret", "sla": (0.1, 0.2, 0.3), "sla_tol": 0.05}, None),
    ({"action_mode": "softmax", "reward_mode": "work_sla_level", "sla_tol": 0.3, "eps_ref": 0.1}, None),
    ({"sla": (0.1, 0.1, 0.1)}, "light"),  # every user gets more than its share: D_t < 0 at every step
    ({}, "zero"),  # OPT = 0: work_ratio is 1 by convention
])  # fmt: skip
def test_episode_summary_is_recomputed_from_the_steps_infos(kwargs, loads):
    """Every ``episode_summary`` key from the per-step infos of one episode: the totals and OPT_1, OPT_{1-ε} by
    the Lindley recursion on the loads, the SLA deficits against the static benchmarks with shares s and
    (1 - 2 eps_ref)·s rebuilt from the loads (maxima over t = 0..T, D_0 = 0 as in spec §3.5), the fraction of
    steps with some D_t(i) > sla_tol (some user not ``sla_ok``) and the queue norms from ``info["queue"]``."""
    horizon = 120
    env = gym.make(ENV, horizon=horizon, **kwargs).unwrapped
    options = {}
    if loads == "light":
        options = {"loads": np.full((3, horizon), 0.3)}
    elif loads == "zero":
        options = {"loads": np.zeros((3, horizon))}
    _, reset_info = env.reset(seed=6, options=options)
    cfg = env.config
    rng = np.random.default_rng(6)
    infos = []
    for _ in range(horizon):
        action = rng.uniform(-3, 3, 3) if cfg.action_mode == "softmax" else rng.dirichlet(np.ones(3))
        *_, truncated, info = env.step(action)
        infos.append(info)
    assert truncated
    summary = info["episode_summary"]
    load = np.array([i["load"] for i in infos]).T  # (N, T)
    work = np.array([i["work"] for i in infos])  # (T, N)
    cum_work = np.cumsum(work, axis=0)
    share = reset_info["sla"] / max(1.0, reset_info["sla"].sum())
    deficit = _static_cum_work(load, share) - cum_work
    relaxed = _static_cum_work(load, (1 - 2 * cfg.eps_ref) * share) - cum_work
    np.testing.assert_allclose([i["sla_deficit"] for i in infos], deficit, atol=1e-9)
    np.testing.assert_allclose([i["sla_deficit_relaxed"] for i in infos], relaxed, atol=1e-9)
    opt = _lindley_cum_work(load.sum(axis=0), 1.0)[-1]
    opt_eps = _lindley_cum_work(load.sum(axis=0), 1.0 - cfg.eps_ref)[-1]
    total = float(sum(i["total_work"] for i in infos))
    queue_l2 = np.linalg.norm([i["queue"] for i in infos], axis=1)
    expected = {
        "total_work": work.sum(),
        "opt_total_work": opt,
        "opt_eps_total_work": opt_eps,
        "regret": opt - total,
        "work_ratio": total / opt if opt > 0 else 1.0,
        "max_sla_deficit": max(0.0, deficit.max()),
        "max_sla_deficit_relaxed": max(0.0, relaxed.max()),
        "sla_violation_fraction": np.mean([(d > cfg.sla_tol).any() for d in deficit]),
        "final_queue_l2": queue_l2[-1],
        "mean_queue_l2": queue_l2.mean(),
        "max_queue_l2": queue_l2.max(),
    }
    assert set(summary) == set(expected)
    for key, value in expected.items():
        assert summary[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    assert total == pytest.approx(work.sum(), rel=1e-12)
    assert summary["sla_violation_fraction"] == pytest.approx(np.mean([not i["sla_ok"].all() for i in infos]))
    assert (reset_info["opt_total_work"], reset_info["opt_eps_total_work"]) == pytest.approx((opt, opt_eps))


@pytest.mark.parametrize("mode", ["work", "work_sla", "neg_regret", "neg_regret_sla", "work_sla_level"])
def test_returns_telescope_as_documented(mode):
    env = gym.make(ENV, horizon=600, reward_mode=mode, reward_kappa=0.7).unwrapped
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    total, level_penalty = 0.0, 0.0
    for _ in range(600):
        _, reward, _, _, info = env.step(rng.dirichlet(np.ones(3)))
        total += reward
        level_penalty += 0.7 * np.array([0.2, 0.3, 0.5])[info["sla_deficit"] > 1.0].sum()
    work = info["cum_work"].sum()
    sla_term = 0.7 * np.maximum(info["sla_deficit"], 0).sum()
    expected = {
        "work": work,
        "work_sla": work - sla_term,
        "neg_regret": -info["regret"],
        "neg_regret_sla": -info["regret"] - sla_term,
        "work_sla_level": work - level_penalty,
    }[mode]
    assert total == pytest.approx(expected, abs=1e-8)


def test_callable_reward_and_scenario():
    def scenario(rng, n_users, horizon, sla, level=0.4):
        return np.full((n_users, horizon), level)

    env = gym.make(ENV, horizon=10, scenario=scenario, scenario_kwargs={"level": 0.5}, reward_mode=lambda info: -1.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.ones(3))
    assert reward == -1.0
    np.testing.assert_allclose(info["load"], 0.5)


def test_minimal_info_keeps_only_the_cheap_keys():
    env = gym.make(ENV, horizon=12, info_level="minimal")
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.ones(3))
    assert set(info) == {"work", "active", "queue", "sla_deficit"}


@pytest.mark.parametrize("kwargs", [
    {},
    {"observation_mode": "full", "observation_format": "dict", "action_mode": "softmax",
     "reward_mode": "neg_regret_sla"},
    {"observation_mode": "binary+sla", "include_time": True, "action_mode": "sub_simplex",
     "reward_mode": "work_sla_level"},
])  # fmt: skip
def test_minimal_info_gives_the_same_trajectory_and_summary_as_full(kwargs):
    """``info_level`` only thins ``info``: observations, rewards, flags, the minimal keys' values and the episode
    summary are those of ``"full"`` (kept over the whole episode, so a later step cannot change an earlier info)."""
    horizon = 120
    full = gym.make(ENV, horizon=horizon, **kwargs)
    minimal = gym.make(ENV, horizon=horizon, info_level="minimal", **kwargs)
    steps = {"full": [full.reset(seed=8)], "minimal": [minimal.reset(seed=8)]}
    full.action_space.seed(8)
    for _ in range(horizon):
        action = full.action_space.sample()
        steps["full"].append(full.step(action))
        steps["minimal"].append(minimal.step(action))
    assert steps["full"][-1][3] and steps["minimal"][-1][3]
    minimal_keys = {"work", "active", "queue", "sla_deficit"}
    for t, (a, b) in enumerate(zip(steps["full"], steps["minimal"], strict=True)):
        obs_a, obs_b = (a[0], b[0]) if isinstance(a[0], dict) else ({"": a[0]}, {"": b[0]})
        assert obs_a.keys() == obs_b.keys()
        for key in obs_a:
            np.testing.assert_array_equal(obs_b[key], obs_a[key], err_msg=f"step {t} {key}")
        if t == 0:
            assert b[1].keys() == a[1].keys() and all(np.array_equal(b[1][k], a[1][k]) for k in a[1])  # reset info
            continue
        assert b[1:4] == a[1:4], t  # reward, terminated, truncated
        assert set(b[4]) - {"episode_summary"} == minimal_keys, t
        for key in minimal_keys:
            np.testing.assert_array_equal(b[4][key], a[4][key], err_msg=f"step {t} {key}")
    assert steps["minimal"][-1][4]["episode_summary"] == steps["full"][-1][4]["episode_summary"]


def test_reset_options_loads_override_the_scenario():
    env = gym.make(ENV, horizon=6).unwrapped
    loads = np.tile([[0.5], [0.0], [0.7]], 6)
    env.reset(seed=0, options={"loads": loads})
    np.testing.assert_array_equal(env.loads, loads)
    with pytest.raises(ValueError, match="loads"):
        env.reset(options={"loads": loads[:, :3]})
    with pytest.raises(ValueError, match="loads"):
        env.reset(options={"loads": -loads})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"load": loads})


def test_reset_option_scenario_kwargs_is_this_episodes_generator_arguments():
    """The option gives the loads the env built with those ``scenario_kwargs`` gives for the same seed (merged over
    the config's), for that episode only; a bad one is refused before the episode or the seed stream changes."""
    env = gym.make(ENV, horizon=60).unwrapped
    env.reset(seed=4, options={"scenario_kwargs": {"shape": 3.0}})
    np.testing.assert_array_equal(env.loads, _loads(ENV, seed=4, horizon=60, scenario_kwargs={"shape": 3.0}))
    assert not np.array_equal(env.loads, _loads(ENV, seed=4, horizon=60))
    env.reset(seed=4)  # the next episode is the config's again
    np.testing.assert_array_equal(env.loads, _loads(ENV, seed=4, horizon=60))
    before = env.loads.copy()
    with pytest.raises(ValueError, match="unknown scenario_kwargs"):
        env.reset(seed=5, options={"scenario_kwargs": {"shpae": 3.0}})
    with pytest.raises(ValueError, match="scenario_kwargs\\['shape'\\]"):
        env.reset(seed=5, options={"scenario_kwargs": {"shape": -1.0}})
    with pytest.raises(ValueError, match="not both"):
        env.reset(seed=5, options={"scenario_kwargs": {}, "loads": before})
    with pytest.raises(ValueError, match="must be a dict"):
        env.reset(seed=5, options={"scenario_kwargs": 3.0})
    np.testing.assert_array_equal(env.loads, before)


def _loads(env_id: str, seed: int, **kwargs) -> np.ndarray:
    env = gym.make(env_id, **kwargs).unwrapped
    env.reset(seed=seed)
    return env.loads.copy()


def test_empty_tol_is_a_floating_point_tolerance():
    """A queue at or below ``empty_tol`` is emptied, so a large value would discard work: capped at 1e-6."""
    with pytest.raises(ValueError, match="empty_tol"):
        gym.make(ENV, empty_tol=0.5)
    env = gym.make(ENV, horizon=60, empty_tol=1e-6).unwrapped
    env.reset(seed=0)
    for _ in range(60):
        env.step(np.ones(3))
    conserved = env.simulator.cum_load - env.simulator.cum_work - env.simulator.queue
    assert np.abs(conserved).max() <= 60 * 1e-6


def test_next_load_after_the_last_step_is_a_clear_error():
    env = gym.make(ENV, horizon=6).unwrapped
    env.reset(seed=0)
    for _ in range(6):
        np.testing.assert_array_equal(env.next_load, env.loads[:, env.simulator.t])
        env.step(np.ones(3))
    with pytest.raises(RuntimeError, match="episode ended"):
        _ = env.next_load


def test_render_rgb_array_draws_one_bar_pair_per_user():
    env = gym.make(ENV, horizon=6, render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.array([1.0, 0.0, 0.0]))
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    blue = (image == np.array([31, 119, 180], dtype=np.uint8)).all(axis=2)
    assert blue[:, :40].sum() > 0 and blue[:, 40:].sum() == 0  # only user 1 is allocated


def test_render_ansi_shows_every_user():
    env = gym.make(ENV, horizon=6, render_mode="ansi")
    env.reset(seed=0)
    env.step(np.ones(3))
    text = env.render()
    assert "t=1/6" in text and text.count("user") == 3


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"sla": (-0.1, 0.6, 0.5)}, "sla"),
    ({"sla": (0.5, 0.5)}, "sla"),
    ({"sla": (0.0, 0.0, 0.0)}, "sla"),
    ({"horizon": 1001}, "horizon"),
    ({"horizon": 0}, "horizon"),
    ({"n_users": 1}, "n_users"),
    ({"n_users": 4, "sla": (0.25,) * 4}, "n_users"),
    ({"action_mode": "clip"}, "action_mode"),
    ({"observation_mode": "everything"}, "observation_mode"),
    ({"reward_mode": "profit"}, "reward_mode"),
    ({"eps_ref": 0.0}, "eps_ref"),
    ({"reward_kappa": float("nan")}, "reward_kappa"),
    ({"scenario": "azure"}, "scenario"),
    ({"scenario_kwargs": {"gamma_shape": 3}}, "scenario_kwargs"),
    ({"scenario": "example_1_1", "horizon": 100}, "horizon"),
    ({"sla": "mean"}, "sla"),
    ({"sla": 0.5}, "sla"),
    ({"render_mode": "video"}, "render_mode"),  # gymnasium also warns about it
    ({"info_level": "debug"}, "info_level"),
])  # fmt: skip
@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")
def test_bad_kwargs_are_clear_errors(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        gym.make(ENV, **kwargs)


@pytest.mark.parametrize("action", [[np.inf, 0, 0], [np.nan, 0.5, 0.5], [0.5, 0.5], [[0.2, 0.3, 0.5]]])
def test_malformed_actions_are_rejected_and_leave_the_env_unchanged(action):
    env = gym.make(ENV, horizon=60).unwrapped
    env.reset(seed=0)
    env.step(np.array([0.2, 0.3, 0.5]))
    twin = copy.deepcopy(env)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array(action))
    for _ in range(10):
        a, b = env.step(np.array([0.3, 0.3, 0.4])), twin.step(np.array([0.3, 0.3, 0.4]))
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]


def test_stepping_past_the_horizon_or_before_reset_is_an_error():
    env = ClusterSLAEnv(horizon=6)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.ones(3))
    env.reset(seed=0)
    for _ in range(6):
        env.step(np.ones(3))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.ones(3))


# -- trace files -------------------------------------------------------------------------------------


def _trace(n=3, horizon=50, seed=0):
    return np.random.default_rng(seed).gamma(2.0, 0.2, size=(n, horizon))


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".csv"])
@pytest.mark.parametrize("transpose", [False, True])
def test_trace_files_load_in_either_orientation(tmp_path, suffix, transpose):
    data = _trace()
    stored = data.T if transpose else data
    path = tmp_path / f"trace{suffix}"
    if suffix == ".npy":
        np.save(path, stored)
    elif suffix == ".npz":
        np.savez(path, loads=stored)
    else:
        np.savetxt(path, stored, delimiter=",")
    env = gym.make(ENV, sla="mean", horizon=40, scenario="trace",
                   scenario_kwargs={"path": str(path), "start": 5, "scale": "none"}).unwrapped  # fmt: skip
    env.reset(seed=0)
    np.testing.assert_allclose(env.loads, data[:, 5:45], rtol=1e-12)
    means = data[:, :5].mean(axis=1)  # the history window before the replayed one
    np.testing.assert_allclose(env.problem.sla, means / means.sum())


def test_trace_rho_scaling(tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, _trace())
    env = gym.make(ENV, horizon=50, scenario="trace", scenario_kwargs={"path": str(path), "rho": 0.9}).unwrapped
    env.reset(seed=0)
    assert env.loads.sum(axis=0).mean() == pytest.approx(0.9)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no file at"),
    ("a,b,c\n1,2,3\n", "not a readable numeric trace"),
    ("0.1,0.2\n0.3,0.4\n", "neither axis"),
    ("0.1,-0.2,0.3\n0.1,0.2,0.3\n", "negative"),
    ("0.1,nan,0.3\n0.1,0.2,0.3\n", "NaN"),
    ("", "non-empty"),
])  # fmt: skip
def test_bad_trace_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "trace.csv"
    if content is not None:
        path.write_text(content)
    error = FileNotFoundError if content is None else ValueError
    with pytest.raises(error, match=message):
        gym.make(ENV, horizon=2, scenario="trace", scenario_kwargs={"path": str(path)})


def test_trace_shorter_than_horizon_is_an_error(tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, _trace(horizon=30))
    with pytest.raises(ValueError, match="horizon"):
        gym.make(ENV, horizon=60, scenario="trace", scenario_kwargs={"path": str(path)})
