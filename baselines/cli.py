"""The ``cluster-envs`` command: list envs and agents, run agents over seeds, reproduce the papers, train RL
baselines, compare agents with confidence intervals, and run the whole benchmark."""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any


def reproductions() -> list[str]:
    """The settings with a module in ``baselines/reproduce/`` (each defines ``run(scale, out_dir)``)."""
    import baselines.reproduce

    return sorted(m.name for m in pkgutil.iter_modules(baselines.reproduce.__path__))


MAX_SEEDS = 100_000  # far beyond any evaluation; a longer --seeds list is a typo, not a request for memory


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"0,3,7"`` → [0, 3, 7]; ranges and lists combine (``"0-2,9"``).

    The ends and the count are checked before any range is expanded, so a huge range fails at once."""
    from baselines.rl import check_eval_seeds

    ranges = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            ranges.append(range(int(low), int(high if dash else low) + 1))
    except ValueError:
        raise ValueError(f"--seeds {text!r} is malformed; use a range like 0-4 or a list like 0,3,7") from None
    try:
        for seeds in ranges:
            if not seeds:
                raise ValueError(f"range {seeds.start}-{seeds.stop - 1} is empty")
            check_eval_seeds(sorted({seeds[0], seeds[-1]}))
        count = sum(len(seeds) for seeds in ranges)
        if count > MAX_SEEDS:
            raise ValueError(f"names {count} seeds; at most {MAX_SEEDS} are allowed")
        seeds = [seed for part in ranges for seed in part]
        check_eval_seeds(seeds)
    except ValueError as err:
        raise ValueError(f"--seeds {text!r}: {err}") from None
    return seeds


def parse_assignments(pairs: Sequence[str], flag: str) -> dict[str, Any]:
    """``["horizon=600", "preset=example_1_1"]`` → {"horizon": 600, "preset": "example_1_1"} (Python literals)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key:
            raise ValueError(f"{flag} {pair!r} is malformed; use {flag} key=value")
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def _show_progress(quiet: bool) -> bool:
    """Progress bars go to stderr only when it is a terminal: redirected logs and pipes stay clean."""
    return not quiet and sys.stderr.isatty()


def _cmd_list(args: argparse.Namespace) -> None:
    from agents import agent_names
    from cluster_envs import env_ids

    for env_id in env_ids():
        print(f"{env_id}: {', '.join(agent_names(env_id))}")


def _cmd_run(args: argparse.Namespace) -> None:
    from baselines.harness import evaluate

    table = evaluate(
        args.env_id,
        [args.agent],
        parse_seeds(args.seeds),
        env_kwargs=parse_assignments(args.set, "--set"),
        agent_kwargs={args.agent: parse_assignments(args.agent_set, "--agent-set")},
        progress=_show_progress(quiet=args.json),
    )
    print(table.to_json() if args.json else table.to_markdown())


def _cmd_reproduce(args: argparse.Namespace) -> None:
    module = importlib.import_module(f"baselines.reproduce.{args.setting}")
    report = module.run(
        scale=args.scale, out_dir=args.out or f"results/{args.setting}", progress=_show_progress(args.quiet)
    )
    print(f"report written to {report}")


def _cmd_train(args: argparse.Namespace) -> None:
    from baselines.rl import train

    out = args.out or f"runs/{args.algo}-{args.env_id.split(':')[-1]}-s{args.seed}"
    result = train(
        args.env_id,
        args.algo,
        steps=args.steps,
        seed=args.seed,
        env_overrides=parse_assignments(args.set, "--set"),
        out_dir=out,
        load=args.load,
        hyperparams=args.hyperparams,
        progress=_show_progress(args.quiet),
    )
    print(
        f"trained for {result.seconds:.1f} s ({result.steps_per_second:.0f} env steps/s), "
        f"{result.total_timesteps} steps in total; run saved in {result.path}"
    )


def _cmd_compare(args: argparse.Namespace) -> None:
    from baselines.compare import compare
    from baselines.report import headline, write_report

    out = args.out or f"results/compare/{args.env_id.split(':')[-1]}"
    comparison = compare(
        args.env_id,
        args.agents,
        rl=[a.strip() for a in args.rl.split(",") if a.strip()] if args.rl else [],
        seeds=parse_seeds(args.seeds),
        env_kwargs=parse_assignments(args.set, "--set"),
        rl_steps=args.rl_steps,
        models_dir=f"{out}/models",
        held_out=args.held_out,
        **_scale_out(args),
    )
    path = write_report(comparison, out)
    if comparison.setting is not None:
        print(headline(comparison))
    print(f"report written to {path}")


def _cmd_benchmark(args: argparse.Namespace) -> None:
    from baselines.benchmark import benchmark
    from baselines.report import headline_text

    report = benchmark(args.out, quick=args.quick, **_scale_out(args))
    print(headline_text(report))
    print(f"report written to {report}")


def _scale_out(args: argparse.Namespace) -> dict[str, Any]:
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    return {
        "workers": args.workers,
        "backend": args.backend,
        "address": args.address,
        "progress": _show_progress(args.quiet),
    }


def _add_scale_out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=1, help="episodes in parallel (default 1)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local", help="local processes or Ray tasks")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cluster-envs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every env id and its reference agents").set_defaults(func=_cmd_list)

    run = sub.add_parser("run", help="roll out one agent over seeds and print its metrics")
    run.add_argument("env_id")
    run.add_argument("--agent", required=True)
    run.add_argument("--seeds", default="0-4", help="a range like 0-4 or a list like 0,3,7 (default 0-4)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    run.add_argument("--agent-set", action="append", default=[], metavar="KEY=VALUE", help="agent hyperparameter")
    run.add_argument("--json", action="store_true", help="print JSON (per-seed metrics and summary)")
    run.set_defaults(func=_cmd_run)

    rep = sub.add_parser("reproduce", help="regenerate a paper's figures and tables")
    rep.add_argument("setting", choices=reproductions())
    rep.add_argument("--scale", choices=("small", "paper"), default="small")
    rep.add_argument("--out", default=None, help="output folder (default results/<setting>)")
    rep.add_argument("--quiet", action="store_true", help="no progress bars")
    rep.set_defaults(func=_cmd_reproduce)

    tr = sub.add_parser("train", help="train an RL baseline (stable-baselines3) and save model, statistics, curve")
    tr.add_argument("env_id")
    tr.add_argument("--algo", default="ppo", help="ppo, a2c, sac, td3, ppo_lstm or ppo_mask (default ppo)")
    tr.add_argument("--steps", type=int, default=None, help="training steps (default: n_timesteps of the YAML)")
    tr.add_argument("--seed", type=int, default=0, help="training seed (its env seeds never meet evaluation seeds)")
    tr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    tr.add_argument("--out", default=None, help="run folder (default runs/<algo>-<env_id>-s<seed>)")
    tr.add_argument("--load", action="store_true", help="resume the run saved in --out")
    tr.add_argument("--hyperparams", default=None, help="an rl-zoo3 YAML file (default baselines/hyperparams/)")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.set_defaults(func=_cmd_train)

    cmp = sub.add_parser("compare", help="every agent on the same seeds: intervals, paired differences, report")
    cmp.add_argument("env_id")
    cmp.add_argument("--agents", default="all", help="all (default) or a comma-separated list of agent names")
    cmp.add_argument("--rl", default="", help="RL algorithms to train (or load) and include, e.g. ppo,sac")
    cmp.add_argument("--rl-steps", type=int, default=None, help="RL training steps (default: the YAML's)")
    cmp.add_argument("--seeds", default="0-9", help="evaluation seeds (default 0-9)")
    cmp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    cmp.add_argument("--out", default=None, help="output folder (default results/compare/<env_id>)")
    held_out = "MultiServer/Gang: seed s on the held-out instance 1000+s (no RL), not the preset's instance"
    cmp.add_argument("--held-out", action="store_true", help=held_out)
    _add_scale_out(cmp)
    cmp.set_defaults(func=_cmd_compare)

    bench = sub.add_parser("benchmark", help="compare on every env with PPO; one report with the headline table")
    bench.add_argument("--quick", action="store_true", help="fewer seeds and PPO steps")
    bench.add_argument("--out", default="results/benchmark", help="output folder (default results/benchmark)")
    _add_scale_out(bench)
    bench.set_defaults(func=_cmd_benchmark)

    # Step-rate benchmark (issue 7): options and run live in baselines/bench.py, shared with benchmarks/bench.py.
    from baselines.bench import add_arguments as add_speed_arguments
    from baselines.bench import run_from_args as run_speed_bench

    speed = sub.add_parser("bench", help="steps/s of every env id next to CartPole in the same run (Markdown, JSON)")
    add_speed_arguments(speed)
    speed.set_defaults(func=run_speed_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError, ImportError) as err:
        print(f"cluster-envs: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
