"""Training infrastructure (issue 15): shipped models used unless --retrain, training as a backend task, TensorBoard
logs, torch's thread count, and the package data that ships models."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path, PurePosixPath

import pytest

pytest.importorskip("stable_baselines3")

from baselines import benchmark as bench  # noqa: E402
from baselines.cli import main  # noqa: E402
from baselines.eval import protocol as settings  # noqa: E402
from baselines.rl import agent as rl_agent  # noqa: E402
from baselines.rl import config as rl_config  # noqa: E402
from baselines.rl import manifest  # noqa: E402
from baselines.rl import runs as rl_runs  # noqa: E402
from baselines.rl import store as rl_store  # noqa: E402
from baselines.rl import train as rl  # noqa: E402
from baselines.rl.store import obtain_policies  # noqa: E402

ENV = "ClusterSLA-v1"
STEPS = 512


pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker


@pytest.fixture(scope="module")
def tiny_run_files():
    """A tiny PPO run of the benchmark's config for ENV, as TrainTask returns it."""
    return rl.TrainTask(ENV, "ppo", STEPS).run()


@pytest.fixture
def shipped(tmp_path, monkeypatch, tiny_run_files):
    root = tmp_path / "package_models"
    rl_runs.write_run_files(tiny_run_files, root / ENV / "ppo" / "seed0")
    monkeypatch.setattr(rl_runs, "SHIPPED_MODELS_DIR", root)
    return root / ENV / "ppo" / "seed0"


def test_a_train_task_returns_a_complete_run(tiny_run_files):
    assert {"model.zip", "vecnormalize.pkl", "meta.json", "config.yml", "training.csv"} <= set(tiny_run_files)
    meta = json.loads(tiny_run_files["meta.json"])
    assert meta["vectorization"] == "native" and meta["threads"] == 1 and meta["total_timesteps"] >= STEPS


def test_a_matching_shipped_model_is_used_unless_retrain(shipped, tmp_path):
    def obtain(models, **kwargs):
        ((policy, facts),) = obtain_policies(ENV, "ppo", {}, kwargs.pop("steps", STEPS), [0], models_dir=models,
                                             progress=False, **kwargs)  # fmt: skip
        return policy, facts

    policy, facts = obtain(tmp_path / "cache")
    assert facts["source"] == "shipped" and facts["path"] == str(shipped) and facts["training_seed"] == 0
    assert policy.model == (shipped / "model.zip").read_bytes()
    assert not (tmp_path / "cache").exists()  # nothing was trained
    _, facts = obtain(tmp_path / "cache", retrain=True)
    assert facts["source"] == "trained" and (tmp_path / "cache" / f"ppo-{ENV}" / "seed0" / "model.zip").is_file()
    # Asked for more steps than the shipped run had: trained (the cache now matches the smaller request only).
    _, facts = obtain(tmp_path / "other", steps=10 * STEPS)
    assert facts["source"] == "trained"


def test_benchmark_quick_evaluates_the_shipped_model_without_training(shipped, tmp_path, monkeypatch):
    monkeypatch.setitem(settings.EVALUATION_SEEDS, "quick", range(2))
    monkeypatch.setitem(settings.SETTINGS, ENV, dataclasses.replace(settings.SETTINGS[ENV], rl_steps_quick=STEPS))

    def no_training(*args, **kwargs):
        raise AssertionError("the benchmark trained although a matching model ships with the package")

    monkeypatch.setattr(rl, "train", no_training)
    report = bench.benchmark(tmp_path / "out", quick=True, progress=False, env_ids=[ENV])
    assert f"| {ENV} |" in report.read_text() and "| shipped |" in report.read_text()
    with pytest.raises(AssertionError, match="trained although"):
        bench.benchmark(tmp_path / "again", quick=True, progress=False, env_ids=[ENV], retrain=True)


def test_the_cli_passes_retrain_and_threads(monkeypatch, tmp_path, capsys):
    seen = {}
    monkeypatch.setattr(bench, "benchmark", lambda out, **kwargs: seen.update(kwargs) or tmp_path / "report.md")
    monkeypatch.setattr("baselines.eval.report.headline_text", lambda report: "")
    assert main(["benchmark", "--quick", "--retrain", "--threads", "2", "--out", str(tmp_path)]) == 0
    assert seen["retrain"] is True and seen["threads"] == 2
    assert main(["train", ENV, "--threads", "0"]) == 2
    assert "--threads: must be a positive integer, got 0" in capsys.readouterr().err


def test_threads_and_tensorboard(tmp_path, monkeypatch):
    """``threads`` reaches torch (recorded, not applied: two threads would only slow a loaded test machine), and SB3
    logs the episode statistics to TensorBoard."""
    pytest.importorskip("tensorboard")
    import torch
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with pytest.raises(ValueError, match="threads"):
        rl.train(ENV, steps=STEPS, out_dir=tmp_path / "bad", threads=0, progress=False)
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    rl.train(ENV, steps=STEPS, env_overrides={"horizon": 120}, out_dir=tmp_path / "run", threads=2, progress=False)
    assert calls == [2] and json.loads((tmp_path / "run" / "meta.json").read_text())["threads"] == 2
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    assert "rollout/ep_rew_mean" in events.Tags()["scalars"]  # VecMonitor's episode statistics reach SB3's logger


def test_the_package_data_ships_model_folders(tiny_run_files):
    """pyproject's package data covers a run folder at models/<env_id>/<algo>/ (not its TensorBoard logs)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["baselines"]
    shipped = {name for name in tiny_run_files if any(PurePosixPath("rl", "models", ENV, "ppo", "seed0", name).match(p)
                                                       for p in patterns)}  # fmt: skip
    assert {"model.zip", "vecnormalize.pkl", "meta.json", "config.yml"} <= shipped
    assert not any(name.startswith("tensorboard") for name in shipped)


def test_ship_run_keeps_the_policy_and_shrinks_the_archive(tiny_run_files, tmp_path):
    run = rl_runs.write_run_files(tiny_run_files, tmp_path / "run")
    shipped = rl_store.ship_run(run, tmp_path / "package_models")
    assert shipped == tmp_path / "package_models" / ENV / "ppo" / "seed0"  # the run's training seed
    files = sorted(n for n in (*manifest.RUN_FILES, manifest.MANIFEST_FILE) if (run / n).is_file())
    assert sorted(p.name for p in shipped.iterdir()) == files and manifest.problems(shipped) == []
    assert (shipped / "model.zip").stat().st_size < (run / "model.zip").stat().st_size
    policy, again = rl_agent.load_agent(run), rl_agent.load_agent(shipped)
    for name, param in policy.model.policy.state_dict().items():
        assert (param == again.model.policy.state_dict()[name]).all(), name


@pytest.mark.parametrize(
    ("env_id", "algo", "seed"),
    [(*p.parts[-3:-1], int(p.name.removeprefix("seed"))) for p in sorted(rl_runs.SHIPPED_MODELS_DIR.glob("*/*/seed*"))],
)
def test_every_shipped_model_serves_the_quick_benchmark(env_id, algo, seed):
    """`benchmark --quick` loads it rather than training: its folder's training seed, the same env kwargs and
    hyperparameters, enough steps, and the benchmark's RL row asks for this algorithm."""
    from baselines.rl.store import mismatches

    setting = settings.require_setting(env_id)
    assert algo == setting.rl_algo
    config = rl_config.RunConfig.resolve(algo, env_id, setting.env_kwargs)
    shipped = rl_runs.shipped_run(env_id, algo, seed)
    assert mismatches(shipped, config, setting.rl_steps_quick, seed, at_least=True) == []
    assert (rl_runs.shipped_run(env_id, algo, seed) / "model.zip").stat().st_size < 400_000


def test_every_benchmark_id_ships_a_run():
    """Until every training seed ships, `benchmark --quick` evaluates what does (and says how many)."""
    for env_id, setting in settings.SETTINGS.items():
        assert rl_runs.shipped_seeds(env_id, setting.rl_algo), env_id


@pytest.fixture
def three_seeds(monkeypatch):
    """ENV's entry with 3 training seeds and the tiny runs' budget (so a STEPS run serves every command)."""
    entry = dataclasses.replace(settings.SETTINGS[ENV], rl_steps=STEPS, rl_steps_quick=STEPS, rl_seeds=3)
    monkeypatch.setitem(settings.SETTINGS, ENV, entry)
    monkeypatch.setitem(settings.EVALUATION_SEEDS, "quick", range(2))


class Trained(Exception):
    pass


def _no_training(monkeypatch):
    """Make training raise Trained with the training seeds it was asked for."""
    import baselines.rl.store

    def run_tasks(tasks, **kwargs):
        if tasks:
            raise Trained([task.seed for task in tasks])
        return []

    monkeypatch.setattr(baselines.rl.store, "run_tasks", run_tasks)


def test_quick_evaluates_the_shipped_seeds_and_says_how_many(shipped, three_seeds, tmp_path, monkeypatch):
    """One of three training seeds ships: --quick evaluates it without training and the headline and report say
    1 of 3; the full benchmark (train_missing) trains the two missing seeds, and only them."""
    _no_training(monkeypatch)
    report = bench.benchmark(tmp_path / "quick", quick=True, progress=False, env_ids=[ENV], models_dir=tmp_path / "m")
    assert "steps × 1 training seed (of 3) |" in report.read_text()
    env_report = (tmp_path / "quick" / ENV / "report.md").read_text()
    assert "`ppo` has 1 (0) of the 3 requested" in env_report
    assert "one run: intervals over evaluation seeds only" in env_report
    with pytest.raises(Trained) as trained:
        bench.benchmark(tmp_path / "full", progress=False, env_ids=[ENV], models_dir=tmp_path / "m")
    assert trained.value.args == ([1, 2],)


def test_a_shipped_run_of_another_training_seed_serves_quick(tmp_path, monkeypatch, tiny_run_files, three_seeds):
    """A learning curve's run (seed 5) shipped as seed5/ counts for --quick, which asks for seeds 0-2."""
    root = tmp_path / "package_models"
    meta = {**json.loads(tiny_run_files["meta.json"]), "seed": 5}
    rl_runs.write_run_files({**tiny_run_files, "meta.json": json.dumps(meta).encode()}, root / ENV / "ppo" / "seed5")
    manifest.write(root / ENV / "ppo" / "seed5")  # the run of seed 5, complete
    monkeypatch.setattr(rl_runs, "SHIPPED_MODELS_DIR", root)
    _no_training(monkeypatch)
    ((_, facts),) = obtain_policies(ENV, "ppo", {}, STEPS, [0, 1, 2], models_dir=tmp_path / "m", train_missing=False)
    assert facts["training_seed"] == 5 and facts["source"] == "shipped"
    with pytest.raises(Trained):  # the full benchmark's seeds are 0-2 exactly
        obtain_policies(ENV, "ppo", {}, STEPS, [0, 1, 2], models_dir=tmp_path / "m", progress=False)


def test_ship_from_a_folder_of_seed_runs(tiny_run_files, three_seeds, tmp_path, capsys):
    source, root = tmp_path / "runs", tmp_path / "package_models"
    rl_runs.write_run_files(tiny_run_files, source / "seed0")
    rl_runs.write_run_files(tiny_run_files, root / ENV / "ppo" / "seed7")  # an old run (its meta says seed 0)
    assert main(["ship", ENV, "--from", str(source), "--root", str(root), "--prune"]) == 0
    assert f"shipped {root / ENV / 'ppo' / 'seed0'}" in capsys.readouterr().out
    assert sorted(p.name for p in (root / ENV / "ppo").iterdir()) == ["seed0"]  # seed7 pruned
    assert (root / ENV / "ppo" / "seed0" / "model.zip").stat().st_size < (source / "seed0" / "model.zip").stat().st_size


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"folder": "seed3"}, "the run of training seed 0 in the folder of seed 3"),
        ({"meta": {"env_kwargs": {"action_mode": "softmax"}}}, "its env kwargs are"),
        ({"meta": {"total_timesteps": 100}}, "it trained 100 steps, not the 512 asked for"),
        ({"config": ("n_epochs: 10", "n_epochs: 3")}, "config.yml differs"),
        ({"meta": {"algo": "a2c"}}, "it is a2c on ClusterSLA-v1, not ppo"),
    ],
)
def test_ship_refuses_a_run_that_does_not_serve_the_benchmark(tiny_run_files, three_seeds, tmp_path, capsys, edit,
                                                              reason):  # fmt: skip
    files = dict(tiny_run_files)
    meta = {**json.loads(files["meta.json"]), **edit.get("meta", {})}
    files["meta.json"] = json.dumps(meta).encode()
    if "config" in edit:
        files["config.yml"] = files["config.yml"].decode().replace(*edit["config"]).encode()
    source, root = tmp_path / "runs", tmp_path / "package_models"
    manifest.write(rl_runs.write_run_files(files, source / edit.get("folder", "seed0")))  # complete, not the entry's
    assert main(["ship", ENV, "--from", str(source), "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not shipped" in err[0] and reason in err[0], err
    assert not root.exists()


def test_ship_trains_the_missing_seeds_then_ships(tiny_run_files, three_seeds, tmp_path):
    """--train: the cache's matching run of seed 0 is reused, seed 1 is trained (a backend task), both ship."""
    from baselines.rl import store as ship

    cache = tmp_path / "models"
    rl_runs.write_run_files(tiny_run_files, cache / f"ppo-{ENV}" / "seed0")
    shipped = ship.ship(ENV, train=True, seeds=[0, 1], models_dir=cache, root=tmp_path / "pkg", progress=False)
    assert shipped == [tmp_path / "pkg" / ENV / "ppo" / f"seed{k}" for k in (0, 1)]
    metas = [json.loads((path / "meta.json").read_text()) for path in shipped]
    assert [m["seed"] for m in metas] == [0, 1]
    assert metas[0]["train_seconds"] == json.loads(tiny_run_files["meta.json"])["train_seconds"]  # not retrained
    with pytest.raises(ValueError, match="exactly one of source"):
        ship.ship(ENV, source=tmp_path, train=True, seeds=[0])
