"""The trained runs behind an RL row: one run per training seed, each found among the runs shipped with the package,
in a model folder, or trained.

The run of ``algo`` on ``env_id`` with training seed ``k`` lives in ``baselines/rl/models/<env_id>/<algo>/seed<k>/``
(shipped, package data; ``cluster-envs ship`` puts it there, see below) or in
``<models_dir>/<algo>-<env_id>/seed<k>/`` (a model folder, default the cache ``results/models``). Which run a
benchmark uses (the rule of docs/benchmark.md): the shipped run, so that the published table is reproducible from a
fresh clone, unless ``retrain`` (train every seed) or an explicit ``models_dir`` (its run first, then the shipped
one); without either, the cache serves only what nothing shipped serves. A run serves a request when its manifest
verifies (``baselines.rl.manifest``: no file missing, changed or swapped) and it matches the request (``mismatches``):
the same training seed, env kwargs and resolved hyperparameters (e.g. not from before an edit of
``hyperparams/<algo>.yml``), and the steps asked for (those that training for them gives, ``trains_steps``; at least
those for ``benchmark --quick``). Each run not used is named on stderr with the reason, in one line. The runs that no
folder serves are trained together as tasks of the chosen backend (``baselines.rl.train.TrainTask``), so ``workers``
local processes or a Ray cluster train them in parallel, and saved in the model folder; one line says so first, with
an estimate of the CPU time.

Shipping trained runs with the package: ``baselines/rl/models/<env_id>/<algo>/seed<k>/``, one per training seed, the
runs ``benchmark --quick`` evaluates without training and the full benchmark loads instead of training
(``obtain_policies``).

Two ways in, both checked against today's settings entry and YAML before anything is copied:

- ``cluster-envs ship <env_id> --from DIR``: ship the runs ``DIR/seed<k>/`` (as ``cluster-envs train`` or
  ``baselines.rl.runs.save_run`` write them) of every seed found, or of ``--seeds``;
- ``cluster-envs ship <env_id> --train --seeds 0-4``: train the missing ones first at the entry's
  ``rl_steps``, as tasks of the chosen backend (``--workers``, ``--backend ray``), into the model cache, and ship those.

A run is refused, with every reason, when it is another id or algorithm, its training seed is not its folder's, its
env kwargs or ``config.yml`` differ from what the benchmark would train today, it did not train the entry's
``rl_steps``, or its manifest does not verify. ``--prune`` removes the shipped seeds of the id and algorithm that this
call did not ship.
Each shipped ``model.zip`` is slimmed (``slim_model_zip``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.eval.backends import run_tasks
from baselines.eval.outputs import MODELS_DIR
from baselines.eval.protocol import env_setting, instance_kwargs, parse_seeds, require_setting, training_seed
from baselines.rl import manifest
from baselines.rl import runs as trained_runs
from baselines.rl.agent import SavedPolicy
from baselines.rl.config import RunConfig, algo_class
from baselines.rl.runs import (
    SHIPPED_MODELS_DIR,
    as_json_value,
    as_yaml_value,
    read_meta,
    saved_config,
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

    Unless ``retrain``, the run of a seed is the first that serves it (see the module doc) of: ``models_dir``'s when
    given, the shipped one, the default cache's when ``models_dir`` is not given. The seeds no folder serves are
    trained (``steps``; None: the settings entry's ``rl_steps``, else the YAML's ``n_timesteps``) as tasks of
    ``backend`` with ``threads`` torch threads each, and saved in the model folder (overwritten). With
    ``train_missing=False`` (``benchmark --quick``) the runs served are used as they are, at most ``len(seeds)`` of
    them, among ``seeds`` and the seeds shipped (a shipped run of another training seed counts too); the caller
    reports their number, and a run of at least ``steps`` steps serves (the quick budget is what is trained when
    nothing is there, not a reason to train beside the shipped runs). Training then happens only when no run is served
    at all, and then for every seed."""
    config = RunConfig.resolve(algo, env_id, env_kwargs)
    setting = env_setting(env_id)
    wanted = steps if steps is not None else (setting.rl_steps if setting is not None else config.n_timesteps)
    # --quick: the runs shipped with other training seeds count too (e.g. a learning curve's seed 5)
    candidates = seeds if train_missing else sorted({*seeds, *shipped_seeds(env_id, algo)})
    found: dict[int, tuple[str, Path]] = {}
    refused: list[Path] = []
    for seed in candidates:
        if retrain or len(found) >= len(seeds):
            break
        for source, path in run_sources(models_dir, env_id, algo, seed):
            why = manifest.problems(path) if path.is_dir() else []
            why = why or mismatches(path, config, wanted, seed, at_least=not train_missing)
            if not why:
                found[seed] = (source, path)
                break
            if path.is_dir():
                refused.append(path)
                say(f"not using the {source} run {path}: {'; '.join(why)}")
    missing = [s for s in seeds if s not in found and (train_missing or not found)]
    if missing:
        say(training_line(env_id, algo, config, wanted, missing, refused, retrain))
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


def run_sources(models_dir: str | Path | None, env_id: str, algo: str, seed: int) -> list[tuple[str, Path]]:
    """The folders that may hold the run of ``seed``, in the order of the rule (module doc), by name."""
    shipped = ("shipped", trained_runs.SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo / f"seed{seed}")
    if models_dir is not None:
        return [("models folder", cache_run(models_dir, env_id, algo, seed)), shipped]
    return [shipped, ("cached", cache_run(None, env_id, algo, seed))]


def say(message: str) -> None:
    """One line on stderr, as the CLI writes its notes."""
    print(f"cluster-envs: {message}", file=sys.stderr, flush=True)


def trains_steps(config: RunConfig, steps: int) -> range:
    """The totals a run trained for ``steps`` steps may have: SB3 stops at the first rollout (on-policy: ``n_envs``
    × ``n_steps`` steps) or env step (off-policy: ``n_envs`` steps) that reaches ``steps``."""
    import inspect

    n_steps = config.model_kwargs.get("n_steps")
    if n_steps is None:
        n_steps = inspect.signature(algo_class(config.algo).__init__).parameters.get("n_steps")
        n_steps = 1 if n_steps is None else n_steps.default
    chunk = config.n_envs * int(n_steps)
    return range(steps, steps + chunk)


def training_line(env_id: str, algo: str, config: RunConfig, steps: int, seeds: Sequence[int],
                  refused: Sequence[Path], retrain: bool) -> str:  # fmt: skip
    """What is trained and why, with the CPU time the known runs of ``algo`` on ``env_id`` predict."""
    total = math.ceil(steps / len(trains_steps(config, steps))) * len(trains_steps(config, steps))
    why = "--retrain" if retrain else ("no run serves them" if not refused else "the runs above do not serve them")
    rates = [r for r in (_cpu_rate(p) for p in [*refused, *_known_runs(env_id, algo)]) if r]
    if rates:
        seconds = len(seeds) * total / max(rates)
        time = f"{seconds / 60:.0f} CPU-minutes" if seconds >= 90 else f"{seconds:.0f} CPU-seconds"
        estimate = f"about {time} at {max(rates):,.0f} steps per CPU-second measured before"
    else:
        estimate = "no earlier run of it to estimate the time from"
    return f"training {algo} on {env_id} for seeds {list(seeds)} ({total:,} steps each; {why}): {estimate}"


def _known_runs(env_id: str, algo: str) -> list[Path]:
    return [p for p in (trained_runs.SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo).glob("seed*") if p.is_dir()]


def _cpu_rate(path: Path) -> float | None:
    try:
        return float(json.loads((path / "meta.json").read_text())["steps_per_cpu_second"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


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


def mismatches(path: Path | None, config: RunConfig, steps: int, seed: int, at_least: bool = False) -> list[str]:
    """Why the run in ``path`` does not serve ``config`` with training seed ``seed`` and ``steps`` steps (empty when
    it was trained with ``config``'s env kwargs and resolved hyperparameters, that seed and those steps, or with
    ``at_least`` at least those steps): each difference in words."""
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
    if at_least and meta["total_timesteps"] < steps:
        found.append(f"it trained {meta['total_timesteps']:,} steps, fewer than {steps:,}")
    elif not at_least and meta["total_timesteps"] not in trains_steps(config, steps):
        found.append(f"it trained {meta['total_timesteps']:,} steps, not the {steps:,} asked for")
    if saved_config(Path(path)) != as_yaml_value(config.as_yaml_dict()):
        found.append("its config.yml differs from today's hyperparameters (hyperparams/<algo>.yml and settings)")
    return found


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
    for name in manifest.RUN_FILES:
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    slim_model_zip(out / "model.zip")
    manifest.write(out)
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
    and today's hyperparameters, its own training seed, the entry's ``rl_steps``, a manifest that verifies."""
    setting = require_setting(env_id)
    config = RunConfig.resolve(algo, env_id, setting.env_kwargs)
    problems = [f"seed{k} ({path}): {'; '.join(why)}" for k, path in runs.items()
                if (why := manifest.problems(path) or mismatches(path, config, setting.rl_steps, k))]  # fmt: skip
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
