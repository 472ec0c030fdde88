"""A/B step rates of two checkouts: ``python baselines/perf/ab.py OLD_DIR NEW_DIR [--rounds 3] [--out FILE]``.

Each checkout runs in its own processes (two versions of ``cluster_envs`` cannot share one), in rounds that
alternate which goes first (A B, B A, A B, ...), each process timing every case once with ``baselines.perf.steps``'s
``bench_single`` / ``bench_batched``, which pair every timing with CartPole's in the same process. The A/B
figure of a case is, per round, the NEW/OLD ratio of those CartPole-relative rates (a load change between the
two processes of a round moves both sides' CartPole too); the report gives its median over the rounds and its
range. A first unreported round per checkout compiles and warms its numba cache. A checkout directory is the
root of a tree (``git worktree`` or ``git archive`` export) holding ``cluster_envs`` and ``baselines``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

SINGLE = ("ClusterSLA-v1", "ClusterApprox-v1", "ClusterApproxSingleJob-v0", "ClusterBilinear-v0",
          "ClusterMultiServer-v0", "ClusterGang-v0")  # fmt: skip
BATCHED = ("ClusterSLA-v1", "ClusterApprox-v1", "ClusterBilinear-v0", "ClusterMultiServer-v0", "ClusterGang-v0")


def cases(sizes: list[int]) -> list[tuple[str, str, int]]:
    """(env id, "single" or "batched", batch size) of every timed case."""
    return [(i, "single", 1) for i in SINGLE] + [(i, "batched", b) for b in sizes for i in BATCHED]


def run_cases(case_list, steps: int, batch_env_steps: int) -> dict[str, float]:
    """Child side: each case's rate relative to CartPole (this process's checkout)."""
    from baselines.perf.steps import bench_batched, bench_single, has_info_level

    out = {}
    for env_id, kind, size in case_list:
        if kind == "single":
            kwargs = {"info_level": "minimal"} if has_info_level(env_id) else {}
            m = bench_single(env_id, steps, 1, **kwargs)
        else:
            m = bench_batched(env_id, size, max(batch_env_steps // size, 2), 1)
        out[f"{env_id} {kind} x{size}"] = m.ratio
    return out


def child(tree: Path, args) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", str(tree), "--steps", str(args.steps),
               "--batch-env-steps", str(args.batch_env_steps), "--sizes", *map(str, args.sizes)]  # fmt: skip
    done = subprocess.run(command, env=env, cwd=tree, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", type=Path, nargs="?")
    parser.add_argument("new", type=Path, nargs="?")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10_000, help="single-env steps per timing")
    parser.add_argument("--batch-env-steps", type=int, default=400_000, help="env-steps per batched timing")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(run_cases(cases(args.sizes), args.steps, args.batch_env_steps)))
        return
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for tree in trees.values():  # compile and warm each checkout's cache (not reported)
        child(tree, argparse.Namespace(**{**vars(args), "steps": 200, "batch_env_steps": 2_000}))
    results: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
            results[side].append(child(trees[side], args))
            # each run as it ends, so that an interrupted A/B keeps its finished rounds
            print(f"round {r + 1} {side}: {json.dumps(results[side][-1])}", file=sys.stderr, flush=True)
    lines = [f"A/B, {args.rounds} rounds: OLD {trees['old']} vs NEW {trees['new']} (rates relative to CartPole in "
             "the same process; NEW/OLD per round)", "",
             "| case | OLD ratio (median) | NEW ratio (median) | NEW/OLD median | NEW/OLD range |",
             "|---|---:|---:|---:|---:|"]  # fmt: skip
    for key in results["old"][0]:
        old = [run[key] for run in results["old"]]
        new = [run[key] for run in results["new"]]
        ab = [n / o for n, o in zip(new, old, strict=True)]
        lines.append(f"| {key} | {median(old):.3f} | {median(new):.3f} | {median(ab):.3f} | "
                     f"{min(ab):.3f}–{max(ab):.3f} |")  # fmt: skip
    report = "\n".join(lines)
    print(report)
    if args.out is not None:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
