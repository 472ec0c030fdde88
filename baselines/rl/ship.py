"""Ship trained runs with the package: ``baselines/rl/models/<env_id>/<algo>/seed<k>/``, one per training seed, the runs
``benchmark --quick`` evaluates without training and the full benchmark loads instead of training (``rl_runs``).

Two ways in, both checked against today's settings entry and YAML before anything is copied:

- ``cluster-envs ship <env_id> --from DIR``: ship the runs ``DIR/seed<k>/`` (as ``cluster-envs train`` or
  ``baselines.rl.train.save_run`` write them) of every seed found, or of ``--seeds``;
- ``cluster-envs ship <env_id> --train --seeds 0-4``: train the missing ones first at the entry's
  ``rl_steps``, as tasks of the chosen backend (``--workers``, ``--backend ray``), into the model cache, and ship those.

A run is refused, with every reason, when it is another id or algorithm, its training seed is not its folder's, its env
kwargs or ``config.yml`` differ from what the benchmark would train today, it did not train the entry's ``rl_steps``, or
its manifest does not verify (``baselines.rl.manifest``: a file missing, changed or swapped). ``--prune`` removes the
shipped seeds of the id and algorithm that this call did not ship.
Each shipped ``model.zip`` is slimmed (``baselines.rl.train.slim_model_zip``).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from baselines.eval.protocol import parse_seeds, require_setting
from baselines.rl import manifest
from baselines.rl.store import mismatches, obtain_policies
from baselines.rl.train import SHIPPED_MODELS_DIR, RunConfig, ship_run


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
