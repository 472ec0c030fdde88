"""Fault injection on trained runs (issue 28): a damaged or swapped run is never evaluated. Each run carries a
manifest (``baselines.rl.manifest``); a run that does not verify is refused with its path and the reason, and the
caller falls back to the next run that serves, or trains and says so first, with an estimate of the time."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("stable_baselines3")

from baselines.eval import protocol  # noqa: E402
from baselines.rl import agent, manifest, runs, store  # noqa: E402  # noqa: E402
from baselines.rl.config import RunConfig  # noqa: E402
from baselines.rl.manifest import DamagedRunError  # noqa: E402

ENV, ALGO = "ClusterSLA-v1", "ppo"
SHIPPED = runs.SHIPPED_MODELS_DIR / ENV / ALGO


def _truncate(run):
    data = (run / "model.zip").read_bytes()
    (run / "model.zip").write_bytes(data[: len(data) // 2])


def _swap_model(run):  # seed 1's model and statistics under seed 0's meta.json
    for name in ("model.zip", "vecnormalize.pkl"):
        shutil.copyfile(SHIPPED / "seed1" / name, run / name)


def _swap_all(run):  # seed 1's whole folder, manifest included, copied into seed0/
    for path in (SHIPPED / "seed1").iterdir():
        shutil.copyfile(path, run / path.name)


DAMAGES = {
    "vecnormalize.pkl missing": (lambda run: (run / "vecnormalize.pkl").unlink(), "vecnormalize.pkl is missing"),
    "model.zip truncated": (_truncate, "model.zip differs from the manifest"),
    "vecnormalize.pkl garbage": (
        lambda run: (run / "vecnormalize.pkl").write_bytes(b"junk"),
        "vecnormalize.pkl differs",
    ),
    "meta.json empty": (lambda run: (run / "meta.json").write_text("{}"), "meta.json differs"),
    "config.yml broken": (lambda run: (run / "config.yml").write_text("{: ["), "config.yml differs"),
    "manifest missing": (lambda run: (run / "manifest.json").unlink(), "it has no manifest.json"),
    "manifest garbage": (lambda run: (run / "manifest.json").write_text("[]"), "is not a manifest"),
    "seed 1's model in seed0/": (_swap_model, "model.zip differs from the manifest"),
    "seed 1's folder in seed0/": (_swap_all, "the run of training seed 1 in the folder of seed 0"),
    "an unlisted vecnormalize.pkl": (
        lambda run: (
            manifest.write(run),
            (run / "vecnormalize.pkl").unlink(),
            manifest.write(run),
            shutil.copyfile(SHIPPED / "seed0" / "vecnormalize.pkl", run / "vecnormalize.pkl"),
        ),
        "vecnormalize.pkl is not in the manifest",
    ),
}


@pytest.fixture
def models(tmp_path):
    """A models folder holding a copy of the shipped runs of seeds 0 and 1 (as the cache lays them out)."""
    for seed in (0, 1):
        shutil.copytree(SHIPPED / f"seed{seed}", store.cache_run(tmp_path, ENV, ALGO, seed))
    return tmp_path


def test_every_shipped_run_verifies_and_serves_its_benchmark_entry():
    from baselines.rl.store import check_runs, seed_folders

    folders = sorted(runs.SHIPPED_MODELS_DIR.glob("*/*"))
    assert folders
    for folder in folders:
        found = seed_folders(folder)
        assert found and all(manifest.problems(path) == [] for path in found.values()), folder
        check_runs(folder.parent.name, folder.name, found)  # raises with every reason


def test_a_manifest_states_the_runs_identity():
    stated = json.loads((SHIPPED / "seed0" / "manifest.json").read_text())
    assert stated["identity"] == {"env_id": ENV, "env_version": 1, "env_kwargs": {"action_mode": "normalize"},
                                  "algo": ALGO, "training_seed": 0, "total_timesteps": 200_192}  # fmt: skip
    assert set(stated["files"]) == {"model.zip", "vecnormalize.pkl", "config.yml", "meta.json", "training.csv"}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_or_swapped_run_is_refused_with_its_path_and_reason(models, damage):
    run = store.cache_run(models, ENV, ALGO, 0)
    apply, reason = DAMAGES[damage]
    apply(run)
    assert any(reason in why for why in manifest.problems(run)), manifest.problems(run)
    with pytest.raises(DamagedRunError, match=f"the run in {run} is refused: .*{reason}"):
        agent.SavedPolicy.from_dir(run)


@pytest.mark.parametrize("damage", ["vecnormalize.pkl missing", "model.zip truncated", "seed 1's folder in seed0/"])
def test_a_damaged_run_falls_back_to_the_shipped_one_saying_so(models, damage, capsys, monkeypatch):
    run = store.cache_run(models, ENV, ALGO, 0)
    DAMAGES[damage][0](run)
    monkeypatch.setattr(store, "run_tasks", _no_training)
    setting = protocol.require_setting(ENV)
    ((policy, facts),) = store.obtain_policies(ENV, ALGO, setting.env_kwargs, None, [0], models_dir=models,
                                               progress=False)  # fmt: skip
    assert facts["source"] == "shipped" and facts["path"] == str(SHIPPED / "seed0")
    assert policy.model == (SHIPPED / "seed0" / "model.zip").read_bytes()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"cluster-envs: not using the models folder run {run}: ") and DAMAGES[damage][1] in line


def test_the_shipped_runs_serve_compare_by_default_not_the_cache(models, monkeypatch, capsys):
    """`compare ClusterSLA-v1 --rl ppo` without --models: the shipped runs (the entry's rl_steps), not the YAML's
    n_timesteps trained, and not what a cache holds (here: seed 1's run copied over seed 0's)."""
    monkeypatch.chdir(models.parent)
    cache = store.cache_run(None, ENV, ALGO, 0)
    shutil.copytree(SHIPPED / "seed1", cache)
    monkeypatch.setattr(store, "run_tasks", _no_training)
    setting = protocol.require_setting(ENV)
    runs = store.obtain_policies(ENV, ALGO, setting.env_kwargs, None, range(5), progress=False)
    assert [facts["source"] for _, facts in runs] == ["shipped"] * 5
    assert [facts["path"] for _, facts in runs] == [str(SHIPPED / f"seed{k}") for k in range(5)]
    assert capsys.readouterr().err == ""


def test_benchmark_quick_evaluates_the_shipped_runs_not_the_cache(tmp_path, monkeypatch, capsys):
    """`benchmark --quick` after a `compare` that filled the default cache with valid runs: the shipped runs serve
    (the quick table evaluated the cache's runs, and its SLA PPO cell moved, issue 28)."""
    monkeypatch.chdir(tmp_path)  # the default cache, results/models/, of this test alone
    for seed in (0, 1):
        shutil.copytree(SHIPPED / f"seed{seed}", store.cache_run(None, ENV, ALGO, seed))
    monkeypatch.setattr(store, "run_tasks", _no_training)
    setting = protocol.require_setting(ENV)
    runs = store.obtain_policies(ENV, ALGO, setting.env_kwargs, setting.rl_steps_quick, range(2), train_missing=False,
                                 progress=False)  # fmt: skip
    assert [(facts["source"], facts["path"]) for _, facts in runs] == [("shipped", str(SHIPPED / f"seed{k}"))
                                                                       for k in (0, 1)]  # fmt: skip


class Trained(Exception):
    pass


def _no_training(tasks, **kwargs):
    if tasks:
        raise Trained([(task.seed, task.steps) for task in tasks])
    return []


def test_rl_steps_asks_for_runs_of_that_many_steps_and_says_why_it_trains(monkeypatch, capsys):
    """--rl-steps 8192 does not evaluate the shipped 200,192-step runs: it trains, after one line per run not used
    and one line with the estimate."""
    monkeypatch.setattr(store, "run_tasks", _no_training)
    setting = protocol.require_setting(ENV)
    with pytest.raises(Trained) as trained:
        store.obtain_policies(ENV, ALGO, setting.env_kwargs, 8192, [0, 1], progress=False)
    assert trained.value.args == ([(0, 8192), (1, 8192)],)
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [f"cluster-envs: not using the shipped run {SHIPPED / f'seed{k}'}: it trained 200,192 steps, "
                         "not the 8,192 asked for" for k in (0, 1)]  # fmt: skip
    assert lines[2].startswith(f"cluster-envs: training {ALGO} on {ENV} for seeds [0, 1] (8,192 steps each; ")
    assert "about" in lines[2] and "steps per CPU-second measured before" in lines[2] and len(lines) == 3


def test_exact_steps_is_what_training_for_them_gives():
    setting = protocol.require_setting(ENV)
    config = RunConfig.resolve(ALGO, ENV, setting.env_kwargs)
    assert store.mismatches(SHIPPED / "seed0", config, 200_000, 0) == []  # 391 rollouts of 4 x 128 steps
    assert store.mismatches(SHIPPED / "seed0", config, 199_681, 0) == []  # also 391 rollouts
    assert store.mismatches(SHIPPED / "seed0", config, 199_680, 0) != []  # exactly 390 rollouts
    assert store.mismatches(SHIPPED / "seed0", config, 200_193, 0) != []  # 392 rollouts
    assert store.mismatches(SHIPPED / "seed0", config, 150_000, 0) != []
    assert store.mismatches(SHIPPED / "seed0", config, 150_000, 0, at_least=True) == []  # benchmark --quick


def test_repoint_moves_a_verified_run_to_the_new_version_and_rewrites_its_manifest(tmp_path):
    run = tmp_path / ENV / ALGO / "seed0"
    shutil.copytree(SHIPPED / "seed0", run)
    with pytest.raises(ValueError, match="another version of the run's id"):
        manifest.repoint(run, "ClusterApprox-v2")
    assert manifest.problems(run) == []  # refused before anything changed
    out = manifest.repoint(run, "ClusterSLA-v9")
    assert out == tmp_path / "ClusterSLA-v9" / ALGO / "seed0" and not (tmp_path / ENV).exists()
    assert manifest.problems(out) == []
    stated = json.loads((out / "manifest.json").read_text())["identity"]
    assert (stated["env_id"], stated["env_version"]) == ("ClusterSLA-v9", 9)
    assert list(runs.saved_config(out)) == ["ClusterSLA-v9"]
    for name in ("model.zip", "vecnormalize.pkl", "training.csv"):  # the weights and their record are untouched
        assert (out / name).read_bytes() == (SHIPPED / "seed0" / name).read_bytes()
    (out / "model.zip").write_bytes(b"junk")
    with pytest.raises(DamagedRunError, match="model.zip differs"):
        manifest.repoint(out, "ClusterSLA-v10")


def test_the_manifest_command_writes_the_manifest_of_every_run_under_a_folder(models, capsys):
    from baselines.cli import main

    run = store.cache_run(models, ENV, ALGO, 0)
    (run / manifest.MANIFEST_FILE).unlink()
    assert manifest.problems(run)
    assert main(["manifest", str(models)]) == 0
    assert manifest.problems(run) == [] and f"wrote {run / manifest.MANIFEST_FILE}" in capsys.readouterr().out
    assert main(["manifest", str(models / "no such folder")]) == 2
    assert "not found" in capsys.readouterr().err
