"""The ``cluster-envs`` command: list envs and agents, run agents over seeds, reproduce the papers, train RL
baselines, compare agents with confidence intervals, and run the whole benchmark."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import os
import pkgutil
import shlex
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

DEBUG_ENV = "CLUSTER_ENVS_DEBUG"  # set to 1 (or pass --debug) to see the traceback of an error


def reproductions() -> list[str]:
    """The settings with a module in ``baselines/reproduce/`` (each defines ``run(scale, out_dir)``; a module whose
    name starts with ``_`` is a helper of theirs)."""
    import baselines.reproduce

    return sorted(m.name for m in pkgutil.iter_modules(baselines.reproduce.__path__) if not m.name.startswith("_"))


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
    """Progress on stderr unless ``--quiet``: a live bar on a terminal, a plain line every 30 s in a pipe or log."""
    return not quiet


def _cmd_list(args: argparse.Namespace) -> None:
    from agents import agent_names
    from cluster_envs import env_ids

    for env_id in env_ids():
        print(f"{env_id}: {', '.join(agent_names(env_id))}")


def _cmd_run(args: argparse.Namespace) -> None:
    from baselines.eval.harness import evaluate
    from baselines.eval.protocol import parse_seeds

    table = evaluate(
        args.env_id,
        [args.agent],
        parse_seeds(args.seeds),
        env_kwargs=parse_assignments(args.set, "--set"),
        agent_kwargs={args.agent: parse_assignments(args.agent_set, "--agent-set")},
        progress=_show_progress(args.quiet),
    )
    print(table.to_json() if args.json else table.to_markdown())


def _cmd_reproduce(args: argparse.Namespace) -> None:
    from baselines.eval.outputs import claim, default_out, exclusive

    command = f"reproduce {args.setting}"
    module = importlib.import_module(f"baselines.reproduce.{args.setting}")
    extra = {"traces": args.traces} if args.traces is not None else {}
    if extra and "traces" not in inspect.signature(module.run).parameters:
        readers = [f"`reproduce {name}`" for name in reproductions() if "traces" in inspect.signature(
            importlib.import_module(f"baselines.reproduce.{name}").run).parameters]  # fmt: skip
        raise ValueError(f"--traces is read by {' and '.join(readers)} only, not by `reproduce {args.setting}`")
    with exclusive(args.out or default_out("reproduce", args.setting), command, force=args.force) as out:
        claim(out, command, force=True)
        report = module.run(scale=args.scale, out_dir=out, progress=_show_progress(args.quiet), **extra)
    print(f"report written to {report}")


def _cmd_train(args: argparse.Namespace) -> None:
    from baselines.eval.outputs import default_out, exclusive
    from baselines.rl.train import train

    out = args.out or default_out("train", f"{args.algo}-{args.env_id.split(':')[-1]}-s{args.seed}")
    with exclusive(out, "train", force=args.force or args.load):
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
            threads=args.threads,
        )
    print(
        f"trained for {result.seconds:.1f} s ({result.steps_per_second:.0f} env steps/s), "
        f"{result.total_timesteps} steps in total; run saved in {result.path}"
    )


def _cmd_compare(args: argparse.Namespace) -> None:
    from baselines.eval.compare import compare
    from baselines.eval.outputs import default_out, exclusive
    from baselines.eval.protocol import parse_seeds
    from baselines.eval.report import headline, write_report

    with exclusive(args.out or default_out("compare", args.env_id.split(":")[-1]), "compare", force=args.force) as out:
        comparison = compare(
            args.env_id,
            args.agents,
            rl=[a.strip() for a in args.rl.split(",") if a.strip()] if args.rl else [],
            seeds=parse_seeds(args.seeds),
            env_kwargs=parse_assignments(args.set, "--set"),
            rl_steps=args.rl_steps,
            rl_seeds=args.rl_seeds,
            models_dir=args.models,
            held_out=args.held_out,
            **_scale_out(args),
            **_training(args),
        )
        path = write_report(comparison, out, force=args.force)
    if comparison.setting is not None:
        print(headline(comparison))
    print(f"report written to {path}")


def _cmd_benchmark(args: argparse.Namespace) -> None:
    from baselines.benchmark import benchmark, render
    from baselines.eval.report import headline_text

    command = "cluster-envs " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if args.render:
        if args.out is None:
            raise ValueError("--render needs --out: the folder of the finished run to render")
        report = render(args.out, publish=args.publish, before=args.before, command=command)
    else:
        report = benchmark(args.out, quick=args.quick, models_dir=args.models, force=args.force, **_scale_out(args),
                           **_training(args), publish=args.publish, before=args.before, command=command)  # fmt: skip
    print(headline_text(report))
    print(f"report written to {report}")


def _cmd_bench(args: argparse.Namespace) -> None:
    from baselines.eval.outputs import claim, exclusive
    from baselines.perf.steps import run_from_args

    with exclusive(args.out, "bench", force=args.force) as out:
        claim(out, "bench", force=True)
        run_from_args(args)


def _agent_source(args: argparse.Namespace) -> str | None:
    if args.agent and args.policy:
        raise ValueError("give one of --agent MODULE:NAME and --policy PATH, not both")
    return args.agent or args.policy


def _cmd_evaluate(args: argparse.Namespace) -> None:
    from baselines.eval.report import headline
    from baselines.eval.submission import score, templated_name

    source = _agent_source(args)
    if source is None:
        raise ValueError("give the agent: --agent MODULE:NAME (an agent, class, factory or function) or --policy PATH")
    if bool(args.env_id) == args.all_envs:
        raise ValueError("give one env id or --all-envs (every env of the protocol), not both or neither")
    name = args.name or templated_name(source) or source.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    out = args.out or f"results/evaluate/{name}"
    evaluation = score(source, None if args.all_envs else args.env_id, declaration=args.declaration, name=args.name,
                       quick=not args.full, reference=args.reference, step_limit=args.step_limit, algo=args.algo,
                       out=out, force=args.force, workers=args.workers, rl_interface=args.rl_interface or None,
                       progress=_show_progress(args.quiet))  # fmt: skip
    for comparison in evaluation.comparisons.values():
        print(headline(comparison), end="\n\n")
    print(f"record written to {evaluation.out / 'record.json'}; reports in {evaluation.out}/<env_id>/")


def _cmd_validate(args: argparse.Namespace) -> None:
    from baselines.eval.validate import validate

    replayed = validate(args.record, _agent_source(args), sample=args.sample, algo=args.algo)
    print("\n".join(map(str, replayed)))
    exact = sum(episode.bit_exact for episode in replayed)
    print(f"{args.record}: {len(replayed)} episodes replayed, every metric agrees; {exact} of them bit-exact (equal "
          "action digests)")  # fmt: skip


def _cmd_leaderboard(args: argparse.Namespace) -> None:
    from baselines.eval.leaderboard import reference_records, render

    if args.env and not args.reference_entries:
        raise ValueError("--env chooses the envs of --reference-entries; give --reference-entries too")
    if args.reference_entries:
        for path in reference_records(args.entries, args.env or None, progress=True):
            print(f"entry written to {path}", flush=True)
    print(f"leaderboard written to {render(args.entries, args.out)}")


def _cmd_program_score(args: argparse.Namespace) -> None:
    import json

    from baselines.eval.search import evaluate_program

    print(json.dumps(evaluate_program(args.program, args.env_id, function=args.function, final=args.final)))


def _add_agent_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default=None, metavar="MODULE:NAME",
                        help="an agent, class, factory or function observation -> action (MODULE: a module or a .py "
                             "path)")  # fmt: skip
    parser.add_argument("--policy", default=None, metavar="PATH",
                        help="an ONNX file or a stable-baselines3 .zip (VecNormalize statistics beside it are used); "
                             "{env} in PATH is replaced by each env id, or by its RL-ready id where only that file "
                             "exists")  # fmt: skip
    parser.add_argument("--algo", default=None, help="the SB3 algorithm of a .zip policy (default: ppo)")


def _scale_out(args: argparse.Namespace) -> dict[str, Any]:
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    return {
        "workers": args.workers,
        "backend": args.backend,
        "address": args.address,
        "progress": _show_progress(args.quiet),
    }


def _training(args: argparse.Namespace) -> dict[str, Any]:
    return {"retrain": args.retrain, "threads": args.threads}


def _add_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=_positive, default=1,
                        help="torch threads per training process (default 1: faster for small networks)")  # fmt: skip


def _add_training(parser: argparse.ArgumentParser) -> None:
    _add_threads(parser)
    parser.add_argument("--retrain", action="store_true",
                        help="train RL models even where a matching cached or shipped model exists")  # fmt: skip


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _add_outputs(parser: argparse.ArgumentParser, default: str, models: bool = False) -> None:
    parser.add_argument("--out", default=None, help=f"output folder (default: {default})")
    parser.add_argument("--force", action="store_true",
                        help="write into --out even if another command's outputs are there")  # fmt: skip
    if models:
        from baselines.eval.outputs import MODELS_DIR

        models_help = (
            f"folder of trained RL runs, used before the shipped ones, where training saves (default: "
            f"{MODELS_DIR}), which otherwise serves only what no shipped run serves"
        )
        parser.add_argument("--models", default=None, metavar="DIR", help=models_help)


def _add_scale_out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=1, help="episodes in parallel")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local processes, or Ray tasks (needs the ray extra)")  # fmt: skip
    parser.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's one-line errors: a usage error names the --help to read instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"cluster-envs: error: {message} (see `{self.prog} --help`)\n")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help (none for flags and unset options), descriptions kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, []) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _agents_epilog() -> str:
    from agents import agent_names
    from cluster_envs import env_ids

    return "agents of each env id:\n" + "\n".join(f"  {i}: {', '.join(agent_names(i))}" for i in env_ids())


def _quick_help() -> str:
    from baselines.eval.protocol import EVALUATION_SEEDS, SETTINGS

    quick = sorted({s.rl_steps_quick for s in SETTINGS.values()})
    full = sorted({s.rl_steps for s in SETTINGS.values()})
    span = lambda steps: f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,}-{steps[-1]:,}"  # noqa: E731
    seeds = {track: len(EVALUATION_SEEDS[track]) for track in ("quick", "full")}
    return (
        f"{seeds['quick']} evaluation seeds and {span(quick)} PPO training steps per env, evaluating the PPO runs "
        f"shipped or cached (training only where none is; default: {seeds['full']} seeds, {span(full)} steps, every "
        "training seed of the entry's rl_seeds)"
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    from cluster_envs import __version__

    parser = Parser(prog="cluster-envs", description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"show the Python traceback of an error (or set {DEBUG_ENV}=1)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, formatter_class=HelpFormatter, **kwargs)

    command("list", "every env id and its reference agents").set_defaults(func=_cmd_list)
    _run_command(command)
    _reproduce_command(command)
    _train_command(command)
    _compare_command(command)
    _benchmark_command(command)
    _evaluate_command(command)
    _validate_command(command)
    _leaderboard_command(command)
    _program_score_command(command)
    _bench_command(command)
    _add_room_commands(command, argv)
    return parser


def _env_help() -> str:
    from cluster_envs import env_ids

    return f"a registered env id: {', '.join(env_ids())}"


def _run_command(command: Any) -> None:
    """The options of `cluster-envs run`."""
    run = command("run", "roll out one agent over seeds and print its metrics", epilog=_agents_epilog())
    run.add_argument("env_id", help=_env_help())
    run.add_argument("--agent", required=True, help="a reference agent of env_id (listed below)")
    run.add_argument("--seeds", default="0-4", help="evaluation seeds: a range like 0-4 or a list like 0,3,7")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    run.add_argument("--agent-set", action="append", default=[], metavar="KEY=VALUE", help="agent hyperparameter")
    run.add_argument("--json", action="store_true", help="print JSON (per-seed metrics and summary)")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.set_defaults(func=_cmd_run)


def _reproduce_command(command: Any) -> None:
    """The options of `cluster-envs reproduce`."""
    rep = command("reproduce", "regenerate a paper's figures and tables")
    rep.add_argument("setting", choices=reproductions(), help="the paper's setting")
    rep.add_argument("--scale", choices=("small", "paper"), default="small",
                     help="small: minutes on a laptop; paper: the paper's horizons and repetitions")  # fmt: skip
    rep.add_argument("--traces", default=None, metavar="DIR",
                     help="`sla` and `traces` only: the folder holding the trace folders (default "
                          "../shared/traces)")  # fmt: skip
    _add_outputs(rep, "results/reproduce/<setting>")
    rep.add_argument("--quiet", action="store_true", help="no progress on stderr")
    rep.set_defaults(func=_cmd_reproduce)


def _train_command(command: Any) -> None:
    """The options of `cluster-envs train`."""
    from baselines.rl.config import ALGOS

    tr = command("train", "train an RL baseline (stable-baselines3) and save model, statistics, curve")
    tr.add_argument("env_id", help=_env_help())
    tr.add_argument("--algo", default="ppo", choices=list(ALGOS), help="the RL algorithm")
    tr.add_argument("--steps", type=int, default=None, help="training steps (default: n_timesteps of the YAML)")
    tr.add_argument("--seed", type=int, default=0, help="training seed (its env seeds never meet evaluation seeds)")
    tr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    _add_outputs(tr, "results/train/<algo>-<env_id>-s<seed>")
    tr.add_argument("--load", action="store_true", help="resume the run saved in --out")
    tr.add_argument("--hyperparams", default=None, help="an rl-zoo3 YAML file (default: baselines/rl/hyperparams/)")
    tr.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _add_threads(tr)
    tr.set_defaults(func=_cmd_train)


def _compare_command(command: Any) -> None:
    """The options of `cluster-envs compare`."""
    from baselines.rl.config import ALGOS

    cmp = command("compare", "every agent on the same seeds: intervals, paired differences, report",
                  epilog=_agents_epilog())  # fmt: skip
    cmp.add_argument("env_id", help=_env_help())
    cmp.add_argument("--agents", default="all", help="all, or a comma-separated list of agents of env_id")
    rl_help = f"RL algorithms to load (the shipped runs, see --models) or train, and include: {', '.join(ALGOS)}"
    cmp.add_argument("--rl", default="", metavar="ALGOS", help=rl_help)
    cmp.add_argument("--rl-steps", type=int, default=None,
                     help="the RL runs' training steps: runs of these steps are evaluated, or trained "
                     "(default: the settings entry's rl_steps, else the YAML's n_timesteps)")  # fmt: skip
    cmp.add_argument("--rl-seeds", type=_positive, default=None, metavar="N",
                     help="RL training seeds 0..N-1, one run each (default: the entry's rl_seeds)")  # fmt: skip
    cmp.add_argument("--seeds", default="0-9", help="evaluation seeds: a range like 0-9 or a list like 0,3,7")
    cmp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env keyword argument")
    _add_outputs(cmp, "results/compare/<env_id>", models=True)
    held_out = "MultiServer/Gang: seed s on the held-out instance 1000+s (no RL), not the preset's instance"
    cmp.add_argument("--held-out", action="store_true", help=held_out)
    _add_scale_out(cmp)
    _add_training(cmp)
    cmp.set_defaults(func=_cmd_compare)


def _benchmark_command(command: Any) -> None:
    """The options of `cluster-envs benchmark`."""
    bench = command("benchmark", "compare on every env with PPO; one report with the headline table")
    bench.add_argument("--quick", action="store_true", help=_quick_help())
    bench.add_argument(
        "--publish",
        default=None,
        metavar="DIR",
        help="also write the generated results page DIR/benchmark.md (--quick: benchmark-quick.md)",
    )
    bench.add_argument(
        "--before",
        default=None,
        metavar="OLD.json",
        help="a previous run's headline.json: the page ends with a before/after table per env",
    )
    render_help = "run nothing: rewrite the finished run in --out from its saved results (and publish it)"
    bench.add_argument("--render", action="store_true", help=render_help)
    _add_outputs(bench, "results/benchmark", models=True)
    _add_scale_out(bench)
    _add_training(bench)
    bench.set_defaults(func=_cmd_benchmark)


def _evaluate_command(command: Any) -> None:
    """The options of `cluster-envs evaluate`."""
    ev = command("evaluate", "score any agent under the benchmark's protocol, next to the reference agents; write its "
                 "report and submission record")  # fmt: skip
    ev.add_argument("env_id", nargs="?", default=None, help=_env_help() + " (or an RL-ready id, for a policy)")
    ev.add_argument("--all-envs", action="store_true", help="every env of the protocol: a whole leaderboard row")
    _add_agent_source(ev)
    ev.add_argument("--declaration", required=True, metavar="FILE",
                    help="YAML/JSON: privileged, training_env_steps, training_cpu_hours, training_gpu_hours, source, "
                         "tuned_on_validation_seeds")  # fmt: skip
    ev.add_argument("--name", default=None, help="the entry's name (default: the agent's or the file's)")
    ev.add_argument("--full", action="store_true", help="the full protocol's seeds (default: the quick protocol's)")
    ev.add_argument("--reference", choices=("all", "anchors"), default="all",
                    help="reference agents beside it: all, or the paper's algorithm and the anchors")  # fmt: skip
    ev.add_argument(
        "--rl-interface",
        action="store_true",
        help="an --agent acts through the RL-ready ids' interface (flat Box observations), as a policy does",
    )
    ev.add_argument("--step-limit", type=float, default=None, metavar="SECONDS", help="per-step time limit")
    _add_outputs(ev, "results/evaluate/<name>")
    ev.add_argument("--workers", type=int, default=1, help="episodes in parallel")
    ev.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ev.set_defaults(func=_cmd_evaluate)


def _validate_command(command: Any) -> None:
    """The options of `cluster-envs validate`."""
    val = command("validate", "replay a submission record's episodes and check every metric and action digest")
    val.add_argument("record", help="a record.json (e.g. leaderboard/<entry>.json)")
    _add_agent_source(val)
    val.add_argument("--sample", type=_positive, default=None, metavar="K", help="replay K episodes, evenly spaced")
    val.set_defaults(func=_cmd_validate)


def _leaderboard_command(command: Any) -> None:
    """The options of `cluster-envs leaderboard`."""
    board = command("leaderboard", "render the leaderboard page from the records of leaderboard/")
    board.add_argument("--entries", default="leaderboard", help="the folder of records")
    board.add_argument("--out", default="docs/leaderboard", help="where index.md and its figures go")
    board.add_argument("--reference-entries", action="store_true",
                       help="first (re)write the entries of the reference agents and the shipped PPO runs (quick "
                            "protocol) into --entries, each env's as soon as it is done")  # fmt: skip
    board.add_argument("--env", action="append", default=[], metavar="ENV_ID",
                       help="with --reference-entries: only this env (repeatable; default every env of the "
                            "protocol); the records' other envs are kept")  # fmt: skip
    board.set_defaults(func=_cmd_leaderboard)


def _program_score_command(command: Any) -> None:
    """The options of `cluster-envs program-score`."""
    prog = command("program-score", "score a Python file's policy function and print JSON (program search, LLM-"
                   "written policies); validation seeds unless --final")  # fmt: skip
    prog.add_argument("program", help="a .py file defining the policy function")
    prog.add_argument("env_id", help=_env_help())
    prog.add_argument("--function", default="policy", help="the function's name in the file")
    prog.add_argument("--final", action="store_true", help="the evaluation seeds (default: validation seeds 100-104)")
    prog.set_defaults(func=_cmd_program_score)


def _bench_command(command: Any) -> None:
    """The options of `cluster-envs bench`."""
    # Step-rate benchmark: options and run live in baselines/perf/steps.py.
    from baselines.perf.steps import add_arguments as add_speed_arguments

    speed = command("bench", "steps/s of every env id next to CartPole in the same run (Markdown, JSON)")
    add_speed_arguments(speed)
    speed.add_argument(
        "--force", action="store_true", help="write into --out even if another command's outputs are there"
    )
    speed.set_defaults(func=_cmd_bench)


# name -> (module, the extra it needs or None, help): the commands defined in their room's module.
ROOM_COMMANDS = {
    "manifest": ("baselines.rl.manifest", None, "write the manifest (file hashes, identity) of each trained run"),
    "horizons": ("baselines.eval.horizons", None, "learning curves of an id's paper agent, to choose its horizon"),
    "ship": ("baselines.rl.store", "rl", "put trained runs among the package's shipped models, checked first"),
    "ablate": ("baselines.tuning.ablation", "rl", "RL interface ablations: train a study's variants, tabulate them"),
    "tune": ("baselines.tuning.tune", "tuning", "tune an id's RL hyperparameters with rl-zoo3's optimizer"),
    "zoo": ("baselines.tuning.zoo", "tuning", "rl-zoo3's train with this package's additions (what `tune run` runs)"),
    "tune-agent": (
        "baselines.tuning.agents",
        "tuning",
        "tune a reference agent's constants on the validation seeds (Optuna)",
    ),
}


def _add_room_commands(command: Any, argv: Sequence[str] | None) -> None:
    """The commands whose options and run live in their rooms (``add_arguments(parser)``, ``run_from_args(args)``);
    a room's module is imported only when its command is the one asked for, so the others never load rl-zoo3."""
    asked = set(sys.argv[1:] if argv is None else argv)
    for name, (module, extra, help) in ROOM_COMMANDS.items():
        room = command(name, help)
        room.set_defaults(func=_room_command(name, module, extra))
        if name in asked:
            try:
                importlib.import_module(module).add_arguments(room)
            except ImportError:  # reported when the command runs, with the extra to install
                if extra is None:
                    raise
                room.set_defaults(forward_extra=True)


def _room_command(name: str, module: str, extra: str | None) -> Any:
    def run(args: argparse.Namespace) -> None:
        try:
            room = importlib.import_module(module)
        except ImportError as err:
            if extra is None:
                raise
            install = f'pip install -e ".[{extra}]"'
            raise ImportError(f"`cluster-envs {name}` needs the {extra!r} extra: {install} ({err})") from None
        room.run_from_args(args)

    return run


# Errors of user input (arguments, files, env and agent keywords, missing extras): one line, exit code 2.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, RuntimeError, ImportError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv``; every failure is one line ``cluster-envs: error: ...`` on stderr (exit code
    2 for bad input, 1 for anything else, which is a bug to report), with the traceback only under ``--debug``."""
    import gymnasium

    try:
        parser = build_parser(argv)
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "forward_extra", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.extra = extra
    except SystemExit as done:  # --help, --version, or a usage error already printed
        return int(done.code or 0)
    debug = args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    try:
        args.func(args)
    except KeyboardInterrupt:
        print("cluster-envs: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001  (the user gets one line; --debug shows the traceback)
        if debug:
            traceback.print_exc()
        user = isinstance(err, (*USER_ERRORS, gymnasium.error.Error))
        message = str(err) if user and str(err) else f"{type(err).__name__}: {err}"
        hint = "" if user or debug else " (an unexpected error: rerun with --debug for the traceback and report it)"
        print(f"cluster-envs: error: {' '.join(message.split())}{hint}", file=sys.stderr)
        return 2 if user else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
