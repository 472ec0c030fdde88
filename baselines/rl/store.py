"""The trained runs behind an RL row: one run per training seed, each found in the model cache, among the runs shipped
with the package, or trained.

The run of ``algo`` on ``env_id`` with training seed ``k`` lives in ``<models_dir>/<algo>-<env_id>/seed<k>/`` (the
cache, default ``results/models``) or in ``baselines/rl/models/<env_id>/<algo>/seed<k>/`` (shipped, package data;
``baselines.rl.ship`` puts it there). A run serves a request when it matches it (``matches``): the same training seed,
env kwargs and resolved hyperparameters (e.g. not from before an edit of ``hyperparams/<algo>.yml``), and at least the
steps asked for. The runs that no folder serves are trained together as tasks of the chosen backend
(``baselines.rl.train.TrainTask``), so ``workers`` local processes or a Ray cluster train them in parallel, and
saved in the cache.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.eval.backends import run_tasks
from baselines.eval.outputs import MODELS_DIR
from baselines.eval.protocol import instance_kwargs, require_setting, training_seed
from baselines.rl.train import (
    RunConfig,
    SavedPolicy,
    TrainTask,
    as_json_value,
    as_yaml_value,
    saved_config,
    shipped_run,
    shipped_seeds,
    write_run_files,
)


def cache_run(models_dir: str | Path | None, env_id: str, algo: str, seed: int) -> Path:
    """The cache folder of the run of ``algo`` on ``env_id`` with training seed ``seed``."""
    return Path(models_dir or MODELS_DIR) / f"{algo}-{env_id.split(':')[-1]}" / f"seed{seed}"


def training_seeds(seeds: int | Sequence[int]) -> list[int]:
    """``n`` -> the training seeds 0 .. n-1; a sequence -> its seeds (distinct, non-negative, at least one)."""
    seeds = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seeds or len(set(seeds)) != len(seeds) or any(not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"rl_seeds must give distinct non-negative training seeds (at least one), got {seeds}")
    return seeds


def obtain_policies(
    env_id: str,
    algo: str,
    env_kwargs: Mapping[str, Any],
    steps: int | None,
    seeds: Sequence[int],
    *,
    models_dir: str | Path | None = None,
    train_missing: bool = True,
    retrain: bool = False,
    threads: int = 1,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: bool = True,
) -> list[tuple[SavedPolicy, dict[str, Any]]]:
    """A policy of ``algo`` for ``env_id`` per training seed and its training facts, in seed order.

    Unless ``retrain``, the run of a seed is the cache's if it matches, else the shipped one if it matches; the seeds
    no folder serves are trained (``steps``; None: the YAML's ``n_timesteps``) as tasks of ``backend`` with ``threads``
    torch threads each, and saved in the cache (overwritten). With ``train_missing=False`` (``benchmark --quick``) the
    runs served are used as they are, at most ``len(seeds)`` of them, among ``seeds`` and the seeds shipped (a shipped
    run of another training seed counts too); the caller reports their number. Training then happens only when no
    run is served at all, and then for every seed."""
    config = RunConfig.resolve(algo, env_id, env_kwargs)
    wanted = config.n_timesteps if steps is None else steps
    # --quick: the runs shipped with other training seeds count too (e.g. a learning curve's seed 5)
    candidates = seeds if train_missing else sorted({*seeds, *shipped_seeds(env_id, algo)})
    found: dict[int, tuple[str, Path]] = {}
    for seed in candidates:
        sources = {} if retrain else {"cache": cache_run(models_dir, env_id, algo, seed),
                                      "shipped": shipped_run(env_id, algo, seed)}  # fmt: skip
        source = next((name for name, path in sources.items() if matches(path, config, wanted, seed)), None)
        if source is not None and len(found) < len(seeds):
            found[seed] = (source, sources[source])
    missing = [s for s in seeds if s not in found and (train_missing or not found)]
    overrides = tuple(sorted(dict(env_kwargs).items()))
    tasks = [
        TrainTask(
            env_id,
            algo,
            wanted,
            seed=seed,
            env_overrides=overrides,
            threads=threads,
            progress=progress and backend == "local" and (workers == 1 or len(missing) == 1),
        )  # fmt: skip
        for seed in missing
    ]
    runs = run_tasks(tasks, workers=workers, backend=backend, address=address, progress=progress and len(tasks) > 1,
                     desc=f"train {algo} × {len(tasks)} seeds", unit="run")  # fmt: skip
    for seed, files in zip(missing, runs, strict=True):
        found[seed] = ("trained", write_run_files(files, cache_run(models_dir, env_id, algo, seed)))
    return [
        (SavedPolicy.from_dir(path, name=algo), run_facts(env_id, config, path, source))
        for source, path in (found[seed] for seed in sorted(found))
    ]


def run_facts(env_id: str, config: RunConfig, path: Path, source: str) -> dict[str, Any]:
    """What a report records of a run: its training seed, folder and source, the instances it trained on (RL trains
    on envs reset with seeds from ``first_env_seed`` up, each then continuing its own RNG, on the instance the env
    kwargs fix where a kwarg fixes it), its steps and training speed."""
    meta = json.loads((path / "meta.json").read_text())
    kwarg = require_setting(env_id).instance_kwarg
    return {
        "training_seed": meta["seed"],
        "path": str(path),
        "source": source,
        "reused": source != "trained",
        "training_instances": {
            "first_env_seed": training_seed(meta["seed"]),
            "n_envs": config.n_envs,
            **instance_kwargs(env_id, config.env_kwargs, kwarg, None),
        },
        "total_timesteps": meta["total_timesteps"],
        "train_seconds": meta["train_seconds"],
        "steps_per_second": meta["steps_per_second"],
        "steps_per_cpu_second": meta.get("steps_per_cpu_second", float("nan")),
        "vectorization": meta.get("vectorization", "dummy"),
    }


def matches(path: Path | None, config: RunConfig, steps: int, seed: int) -> bool:
    """Whether the run in ``path`` was trained with ``config`` (env kwargs and resolved hyperparameters) and training
    seed ``seed`` for at least ``steps`` steps."""
    return not mismatches(path, config, steps, seed)


def mismatches(path: Path | None, config: RunConfig, steps: int, seed: int) -> list[str]:
    """Why the run in ``path`` does not serve ``config`` with training seed ``seed`` and ``steps`` steps (empty when
    it does): each difference in words, for ``baselines.rl.ship``'s refusals."""
    meta_path = None if path is None else Path(path) / "meta.json"
    if meta_path is None or not meta_path.is_file():
        return [f"{path} holds no trained run (no meta.json)"]
    meta = json.loads(meta_path.read_text())
    found = []
    if (meta["env_id"].split(":")[-1], meta["algo"]) != (config.env_id.split(":")[-1], config.algo):
        found.append(f"it is {meta['algo']} on {meta['env_id']}, not {config.algo} on {config.env_id}")
    if meta["seed"] != seed:
        found.append(f"its training seed is {meta['seed']}, not {seed}")
    if meta["env_kwargs"] != as_json_value(config.env_kwargs):
        found.append(f"its env kwargs are {meta['env_kwargs']}, the settings' {as_json_value(config.env_kwargs)}")
    if meta["total_timesteps"] < steps:
        found.append(f"it trained {meta['total_timesteps']:,} steps, fewer than {steps:,}")
    if saved_config(Path(path)) != as_yaml_value(config.as_yaml_dict()):
        found.append("its config.yml differs from today's hyperparameters (hyperparams/<algo>.yml and settings)")
    return found
