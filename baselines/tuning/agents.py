"""Tuning a reference agent's constants on the validation seeds, through Optuna as PPO's tuning is.

``cluster-envs tune-agent ID AGENT --trials N`` (or ``python -m baselines.tuning.agents``) searches the agent's
constants listed in ``agent_spaces.yml`` with Optuna's seeded TPE sampler for ``N`` trials; each trial is the mean
headline metric of the env's benchmark protocol over the validation seeds 100-104 (never the evaluation seeds),
with the protocol's env kwargs. The first trial is the agent's printed/default constants, so the budget is ``N``
episodes-per-seed evaluations in all and the best is never worse than the default on those seeds. The command
writes a generated page (the command, commit, date, every trial) that the protocol cites for the agent's budget.
"""

from __future__ import annotations

import argparse
import inspect
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.registry import agent_class, make_agent
from baselines.eval.harness import evaluate
from baselines.eval.outputs import provenance
from baselines.eval.protocol import HIGHER, VALIDATION_SEEDS, require_setting

SPACES = Path(__file__).with_name("agent_spaces.yml")
PAGES = Path("docs") / "results" / "agent_tuning"


def search_space(env_id: str, agent: str) -> dict[str, dict[str, Any]]:
    """The constants of ``agent`` on ``env_id`` that are tuned, with their ranges (``ValueError`` if none)."""
    spaces = yaml.safe_load(SPACES.read_text())
    space = spaces.get(env_id, {}).get(agent)
    if not space:
        listed = {e: sorted(a) for e, a in spaces.items()}
        raise ValueError(f"agent={agent!r} on env_id={env_id!r} has no search space in {SPACES.name}; listed: {listed}")
    make_agent(env_id, agent, **{name: _default(env_id, agent, name) for name in space})  # names and defaults valid
    return space


def _default(env_id: str, agent: str, name: str) -> Any:
    """The agent class's default of constant ``name`` (the most derived ``__init__`` that declares it)."""
    for klass in agent_class(env_id, agent).__mro__[:-1]:
        params = inspect.signature(klass.__init__).parameters if "__init__" in vars(klass) else {}
        if name in params and params[name].default is not inspect.Parameter.empty:
            return params[name].default
    raise ValueError(f"{agent}.{name} has no default to start the study from")


def _suggest(trial, name: str, spec: dict[str, Any]) -> Any:
    if "choices" in spec:
        return trial.suggest_categorical(name, spec["choices"])
    if spec.get("int"):
        return trial.suggest_int(name, int(spec["low"]), int(spec["high"]), log=bool(spec.get("log")))
    return trial.suggest_float(name, float(spec["low"]), float(spec["high"]), log=bool(spec.get("log")))


@dataclass(frozen=True)
class AgentTuning:
    env_id: str
    agent: str
    metric: str
    higher_is_better: bool
    seeds: tuple[int, ...]
    default: dict[str, Any]
    default_value: float
    best: dict[str, Any]
    best_value: float
    trials: list[tuple[dict[str, Any], float]]


def score(env_id: str, agent: str, params: dict[str, Any], seeds: Sequence[int]) -> float:
    """The mean headline metric of ``agent`` with ``params`` over ``seeds``, under the protocol's env kwargs."""
    setting = require_setting(env_id)
    table = evaluate(env_id, [agent], seeds, env_kwargs=dict(setting.env_kwargs), agent_kwargs={agent: params})
    return float(np.mean(table.values(agent, setting.headline)))


def tune_agent(env_id: str, agent: str, trials: int, *, seeds: Sequence[int] = VALIDATION_SEEDS,
               sampler_seed: int = 0) -> AgentTuning:  # fmt: skip
    """Optuna's TPE over ``agent``'s search space for ``trials`` trials (the first: the default constants)."""
    import optuna

    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials={trials!r} must be a positive integer")
    space = search_space(env_id, agent)
    setting = require_setting(env_id)
    higher = setting.metrics[setting.headline] == HIGHER
    default = {name: _default(env_id, agent, name) for name in space}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # enqueue_trial's
    study = optuna.create_study(
        direction="maximize" if higher else "minimize", sampler=optuna.samplers.TPESampler(seed=sampler_seed)
    )
    study.enqueue_trial(default)
    study.optimize(
        lambda trial: score(env_id, agent, {n: _suggest(trial, n, s) for n, s in space.items()}, seeds),
        n_trials=trials,
    )
    done = [(dict(t.params), float(t.value)) for t in study.trials if t.value is not None and math.isfinite(t.value)]
    return AgentTuning(env_id, agent, setting.headline, higher, tuple(seeds), default, done[0][1],
                       dict(study.best_params), float(study.best_value), done)  # fmt: skip


def page(result: AgentTuning, command: str) -> str:
    """The generated page of one study: the default, the best and every trial."""
    sense = "higher" if result.higher_is_better else "lower"
    lines = [
        f"# Tuning `{result.agent}` on {result.env_id}",
        "",
        provenance(command),
        "",
        f"Mean `{result.metric}` ({sense} is better) over validation seeds "
        f"{result.seeds[0]}-{result.seeds[-1]}, the protocol's env kwargs; Optuna TPE (sampler seed 0), "
        f"{len(result.trials)} trials, the first the default constants. Budget: {len(result.trials)} trials x "
        f"{len(result.seeds)} episodes.",
        "",
        f"- default {_params(result.default)}: **{result.default_value:.6g}**",
        f"- best {_params(result.best)}: **{result.best_value:.6g}**",
        "",
        "| trial | constants | mean " + result.metric + " |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {k} | {_params(p)} | {v:.6g} |" for k, (p, v) in enumerate(result.trials)]
    return "\n".join(lines) + "\n"


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={v:.4g}`" if isinstance(v, float) else f"`{k}={v}`" for k, v in params.items())


def write_page(result: AgentTuning, command: str, out_dir: Path = PAGES) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result.env_id}-{result.agent}.md"
    path.write_text(page(result, command))
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env_id", help="an env id with a benchmark protocol entry")
    parser.add_argument("agent", help="a reference agent with a search space in baselines/tuning/agent_spaces.yml")
    parser.add_argument("--trials", type=int, default=20, help="Optuna trials, the first the default constants")
    parser.add_argument("--out", type=Path, default=PAGES, help="folder of the generated page")


def run(args: argparse.Namespace, command: str) -> Path:
    result = tune_agent(args.env_id, args.agent, args.trials)
    path = write_page(result, command, args.out)
    print(f"{args.agent} on {args.env_id}: default {result.default_value:.6g}, best {result.best_value:.6g} "
          f"with {_params(result.best)}; written {path}")  # fmt: skip
    return path


if __name__ == "__main__":
    import sys

    parser = argparse.ArgumentParser(prog="python -m baselines.tuning.agents", description=__doc__)
    add_arguments(parser)
    run(parser.parse_args(), "python -m baselines.tuning.agents " + " ".join(sys.argv[1:]))
