"""The ``cluster-envs`` command: list envs and agents, run agents over seeds, reproduce the papers."""

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


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"0,3,7"`` → [0, 3, 7]; ranges and lists combine (``"0-2,9"``)."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            seeds.extend(range(int(low), int(high) + 1) if dash else [int(low)])
    except ValueError:
        raise ValueError(f"--seeds {text!r} is malformed; use a range like 0-4 or a list like 0,3,7") from None
    if not seeds or any(s < 0 for s in seeds):
        raise ValueError(f"--seeds {text!r} must name at least one non-negative seed")
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
        progress=not args.json,
    )
    print(table.to_json() if args.json else table.to_markdown())


def _cmd_reproduce(args: argparse.Namespace) -> None:
    module = importlib.import_module(f"baselines.reproduce.{args.setting}")
    report = module.run(scale=args.scale, out_dir=args.out or f"results/{args.setting}")
    print(f"report written to {report}")


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
    rep.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"cluster-envs: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
