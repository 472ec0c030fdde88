"""The trained runs behind an RL row: one run per training seed, each found in the model cache, among the runs shipped
with the package, or trained.

The run of ``algo`` on ``env_id`` with training seed ``k`` lives in ``<models_dir>/<algo>-<env_id>/seed<k>/`` (the
cache, default ``results/models``) or in ``baselines/rl/models/<env_id>/<algo>/seed<k>/`` (shipped, package data;
``cluster-envs ship`` puts it there, see below). A run serves a request when it matches it (``matches``): the same
training seed, env kwargs and resolved hyperparameters (e.g. not from before an edit of ``hyperparams/<algo>.yml``),
and at least the steps asked for. The runs that no folder serves are trained together as tasks of the chosen backend
(``baselines.rl.train.TrainTask``), so ``workers`` local processes or a Ray cluster train them in parallel, and
saved in the cache.

Shipping trained runs with the package: ``baselines/rl/models/<env_id>/<algo>/seed<k>/``, one per training seed, the
runs ``benchmark --quick`` evaluates without training and the full benchmark loads instead of training
(``obtain_policies``).

Two ways in, both checked against today's settings entry and YAML before anything is copied:

- ``cluster-envs ship <env_id> --from DIR``: ship the runs ``DIR/seed<k>/`` (as ``cluster-envs train`` or
  ``baselines.rl.runs.save_run`` write them) of every seed found, or of ``--seeds``;
- ``cluster-envs ship <env_id> --train --seeds 0-4``: train the missing ones first at the entry's
  ``rl_steps``, as tasks of the chosen backend (``--workers``, ``--backend ray``), into the model cache, and ship those.

A run is refused, with every reason, when it is another id or algorithm, its training seed is not its folder's, its
env kwargs or ``config.yml`` differ from what the benchmark would train today, or it trained fewer steps than the
entry's ``rl_steps``. ``--prune`` removes the shipped seeds of the id and algorithm that this call did not ship.
Each shipped ``model.zip`` is slimmed (``slim_model_zip``).
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.eval.backends import run_tasks
from baselines.eval.outputs import MODELS_DIR
from baselines.eval.protocol import instance_kwargs, parse_seeds, require_setting, training_seed
from baselines.rl.agent import SavedPolicy
from baselines.rl.config import RunConfig
from baselines.rl.runs import (
    SHIPPED_MODELS_DIR,
    as_json_value,
    as_yaml_value,
    read_meta,
    saved_config,
    shipped_run,
    shipped_seeds,
    write_run_files,
)
from baselines.rl.train import TrainTask


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
    it does): each difference in words, for ``ship``'s refusals."""
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


SHIPPED_FILES = ("model.zip", "vecnormalize.pkl", "config.yml", "meta.json", "training.csv")


def ship_run(run: str | Path, root: str | Path | None = None) -> Path:
    """Copy the run saved by ``train`` in ``run`` to ``root/<env_id>/<algo>/seed<k>`` (``k``: its training seed;
    default root: the package's shipped models) as a small archive: the files ``baselines.rl.store`` matches and
    loads, with ``model.zip`` slimmed (:func:`slim_model_zip`). TensorBoard logs and the curve's figure stay behind.
    ``ship`` checks a run against the protocol before it calls this."""
    import shutil

    run = Path(run)
    meta = read_meta(run)
    out = Path(root or SHIPPED_MODELS_DIR) / meta["env_id"].split(":")[-1] / meta["algo"] / f"seed{meta['seed']}"
    if out.exists() and out.resolve() == run.resolve():
        raise ValueError(f"run={str(run)!r} is the shipped folder itself; it is shipped already")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in SHIPPED_FILES:
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    slim_model_zip(out / "model.zip")
    return out


def slim_model_zip(path: Path) -> None:
    """Rewrite an SB3 ``model.zip`` with the optimizer's running moments zeroed and every member deflated: SB3
    stores them uncompressed, and Adam's two moments per weight are two thirds of the archive. The policy's
    weights are unchanged, so the agent acts exactly as before; training resumed from it (``--load``) restarts
    Adam's moments from zero."""
    import io
    import zipfile

    import torch

    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    name = "policy.optimizer.pth"
    if name in members:
        state = torch.load(io.BytesIO(members[name]), map_location="cpu", weights_only=False)
        for moments in state.get("state", {}).values():
            for key, value in moments.items():
                if torch.is_tensor(value) and key != "step":
                    value.zero_()
        buffer = io.BytesIO()
        torch.save(state, buffer)
        members[name] = buffer.getvalue()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)


def seed_folders(source: Path) -> dict[int, Path]:
    """The run folders ``source/seed<k>/`` by training seed."""
    found = {p.name.removeprefix("seed"): p for p in source.glob("seed*") if p.is_dir()}
    return {int(k): p for k, p in sorted(found.items()) if k.isdigit()}


def check_runs(env_id: str, algo: str, runs: dict[int, Path]) -> None:
    """Refuse (``ValueError``, every reason of every run) unless each run serves the benchmark: the entry's env kwargs
    and today's hyperparameters, its own training seed, at least the entry's ``rl_steps``."""
    setting = require_setting(env_id)
    config = RunConfig.resolve(algo, env_id, setting.env_kwargs)
    problems = [f"seed{k} ({path}): {'; '.join(why)}" for k, path in runs.items()
                if (why := mismatches(path, config, setting.rl_steps, k))]  # fmt: skip
    if problems:
        raise ValueError(
            f"not shipped, the runs do not serve the benchmark's {algo} row of {env_id}: " + " | ".join(problems)
        )


def ship(
    env_id: str,
    algo: str | None = None,
    *,
    source: str | Path | None = None,
    seeds: Sequence[int] | None = None,
    train: bool = False,
    root: str | Path | None = None,
    prune: bool = False,
    models_dir: str | Path | None = None,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    threads: int = 1,
    progress: bool = True,
) -> list[Path]:
    """Ship the runs of ``env_id`` and ``algo`` (default: the entry's ``rl_algo``) into ``root`` (default: the
    package's models) and return their folders, by training seed. From ``source`` (its ``seed<k>`` folders, or those
    of ``seeds``), or with ``train`` the ``seeds`` trained (or found matching in the cache ``models_dir``) first."""
    setting = require_setting(env_id)
    env_id, algo = env_id.split(":")[-1], algo or setting.rl_algo
    if (source is None) == (not train):
        raise ValueError("give exactly one of source (--from DIR) and train (--train)")
    if train:
        if not seeds:
            raise ValueError("train needs the training seeds (--seeds, e.g. 0-4)")
        trained = obtain_policies(env_id, algo, setting.env_kwargs, setting.rl_steps, seeds, models_dir=models_dir,
                                  workers=workers, backend=backend, address=address, threads=threads,
                                  progress=progress)  # fmt: skip
        runs = {facts["training_seed"]: Path(facts["path"]) for _, facts in trained}
    else:
        source = Path(source)
        found = seed_folders(source)
        missing = sorted(set(seeds or ()) - set(found))
        if not found or missing:
            raise ValueError(f"source={str(source)!r} has no run folder seed<k>/ for seeds {missing or 'any'}")
        runs = {k: found[k] for k in (seeds or found)}
    check_runs(env_id, algo, runs)
    folder = Path(root or SHIPPED_MODELS_DIR) / env_id / algo
    shipped = [path if path.resolve().parent == folder.resolve() else ship_run(path, root) for path in runs.values()]
    if prune:
        kept = {path.resolve() for path in shipped}
        for stale in (p for p in folder.glob("seed*") if p.is_dir() and p.resolve() not in kept):
            shutil.rmtree(stale)
    return shipped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs ship``."""
    parser.add_argument("env_id", help="an env id with an entry in baselines/eval/protocol.yml")
    parser.add_argument("--algo", default=None, help="the RL algorithm (default: the entry's rl_algo)")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--from", dest="source", metavar="DIR", help="ship the runs DIR/seed<k>/")
    how.add_argument("--train", action="store_true", help="train the --seeds at the entry's rl_steps, then ship")
    parser.add_argument("--seeds", default=None, help="training seeds, e.g. 0-4 (default with --from: every seed<k>)")
    parser.add_argument("--root", default=None, help=f"where to ship (default: {SHIPPED_MODELS_DIR})")
    parser.add_argument("--prune", action="store_true", help="remove shipped seeds of the id and algo not shipped now")
    parser.add_argument(
        "--models", default=None, metavar="DIR", help="model cache for --train (default: results/models)"
    )
    parser.add_argument("--workers", type=int, default=1, help="training runs in parallel (--train)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--address", default=None, help="Ray cluster address")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per training run")


def run_from_args(args: argparse.Namespace) -> None:
    """``cluster-envs ship``: ship the runs and print each folder with its size."""
    shipped = ship(args.env_id, args.algo, source=args.source, train=args.train, root=args.root,
                   seeds=parse_seeds(args.seeds) if args.seeds else None, prune=args.prune,
                   models_dir=args.models, workers=args.workers, backend=args.backend, address=args.address,
                   threads=args.threads)  # fmt: skip
    for path in shipped:
        size = sum(p.stat().st_size for p in path.iterdir())
        print(f"shipped {path} ({size / 1000:.0f} kB)")
