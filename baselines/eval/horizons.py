"""Learning curves of each env's paper algorithm, from which the protocol's horizon is chosen (not from compute).

``cluster-envs horizons ID --horizon T`` plays the protocol's paper agent and naive anchor (and
``--agents``, with ``--agent-set agent:key=value`` constants, e.g. ``sabr:beta_scale=0.3``) for one episode of
``T`` slots per validation seed (100-104), with the protocol's env kwargs, and records the setting's first curve
(a cumulative per-step ``info`` key, e.g. ``regret``) at about 12 log-spaced checkpoints: the table gives the mean
over seeds of curve(t) / t, the per-slot average, so a learning phase shows as a falling column that flattens.
ClusterSLA-v0 runs through its compiled long-horizon runner (``LONG_HORIZON_RUNNERS``; T = 6·10⁵ takes seconds)
and also gives the largest SLA deficit so far (max over users and recorded steps), Algorithm 2's second criterion.
The command writes a generated page, ``docs/results/learning_curves/<ID>.md``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.eval.harness import LONG_HORIZON_RUNNERS, rollout, simulate
from baselines.eval.outputs import provenance
from baselines.eval.protocol import VALIDATION_SEEDS, require_setting

PAGES = Path("docs") / "results" / "learning_curves"
CHECKPOINTS = 12


def checkpoints(horizon: int, count: int = CHECKPOINTS) -> np.ndarray:
    """About ``count`` log-spaced steps in [1, horizon], the horizon last."""
    return np.unique(np.round(np.geomspace(min(10, horizon), horizon, count)).astype(np.int64))


def _sla_curve(env_id, agent, seed, env_kwargs, agent_kwargs, points) -> dict[str, np.ndarray]:
    record_every = max(1, int(points[0]))
    trajectory, _ = simulate(env_id, agent, seed, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs,
                             record_every=record_every)  # fmt: skip
    regret = trajectory.opt_cum_work - trajectory.cum_work.sum(axis=1)
    deficit = np.maximum.accumulate(trajectory.deficit.max(axis=1))
    at = np.searchsorted(trajectory.times, points)
    at = np.minimum(at, trajectory.times.size - 1)
    return {"regret / t": regret[at] / trajectory.times[at], "max SLA deficit so far": deficit[at]}


def _gym_curve(env_id, agent, seed, env_kwargs, agent_kwargs, points, key) -> dict[str, np.ndarray]:
    episode = rollout(env_id, agent, seed, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs, record=(key,))
    values = np.asarray(episode.trace[key], dtype=np.float64)
    at = np.minimum(points, values.size) - 1
    return {f"{key} / t": values[at] / (at + 1)}


Curves = dict[str, dict[str, np.ndarray]]


def learning_curves(env_id: str, horizon: int, agents: Sequence[str] = (),
                    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                    seeds: Sequence[int] = VALIDATION_SEEDS) -> tuple[np.ndarray, Curves]:  # fmt: skip
    """Checkpoints and, per row label (agent and curve), the mean over ``seeds`` at each checkpoint."""
    if not isinstance(horizon, int) or horizon < 2:
        raise ValueError(f"horizon={horizon!r} must be an integer of at least 2")
    setting = require_setting(env_id)
    agent_kwargs = dict(agent_kwargs or {})
    rows = list(dict.fromkeys([setting.paper_agent, setting.naive_agent, *agents, *agent_kwargs]))
    env_kwargs = {**setting.env_kwargs, "horizon": horizon}
    points = checkpoints(horizon)
    out: Curves = {}
    for row in rows:
        name = row.split("@")[0]  # "sabr@beta_scale=0.3" labels a variant
        per_seed = []
        for seed in seeds:
            if env_id in LONG_HORIZON_RUNNERS:
                per_seed.append(_sla_curve(env_id, name, seed, env_kwargs, agent_kwargs.get(row), points))
            else:
                per_seed.append(
                    _gym_curve(env_id, name, seed, env_kwargs, agent_kwargs.get(row), points, setting.curves[0])
                )
        out[row] = {curve: np.mean([s[curve] for s in per_seed], axis=0) for curve in per_seed[0]}
    return points, out


def page(env_id: str, horizon: int, points, curves, command: str, seeds=VALIDATION_SEEDS) -> str:
    lines = [
        f"# Learning curves on {env_id}",
        "",
        provenance(command),
        "",
        f"One episode of {horizon} slots per validation seed ({seeds[0]}-{seeds[-1]}), the protocol's env kwargs; "
        "each entry is the mean over the seeds at step t. The protocol's horizon is read from the paper "
        "algorithm's column: past the steps where it still falls.",
        "",
    ]
    labels = [(row, curve) for row, by_curve in curves.items() for curve in by_curve]
    lines.append("| t | " + " | ".join(f"`{row}` {curve}" for row, curve in labels) + " |")
    lines.append("| --- |" + " --- |" * len(labels))
    for k, t in enumerate(points):
        lines.append(f"| {t} | " + " | ".join(f"{curves[row][curve][k]:.4g}" for row, curve in labels) + " |")
    return "\n".join(lines) + "\n"


def _agent_sets(values: Sequence[str]) -> dict[str, dict[str, float]]:
    """``agent:key=value`` -> {"agent@key=value": {key: value}}, one variant row per flag."""
    out: dict[str, dict[str, float]] = {}
    for text in values:
        agent, _, assignment = text.partition(":")
        key, sep, value = assignment.partition("=")
        if not (agent and sep and key):
            raise ValueError(f"--agent-set {text!r} must read agent:key=value")
        out[f"{agent}@{key}={value}"] = {key: float(value)}
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs horizons``."""
    parser.add_argument("env_id", help="an id with a protocol entry")
    parser.add_argument("--horizon", type=int, required=True, help="the episode length T to play (slots)")
    parser.add_argument("--agents", default="", help="more agents, comma-separated")
    parser.add_argument("--agent-set", action="append", default=[], metavar="AGENT:KEY=VALUE",
                        help="a variant row of an agent with one constant changed")  # fmt: skip
    parser.add_argument("--out", type=Path, default=PAGES, help=f"the pages' folder (default {PAGES})")


def run_from_args(args: argparse.Namespace) -> Path:
    """``cluster-envs horizons``: the learning curves of ``args.env_id``, written as its generated page."""
    if args.horizon < 1:
        raise ValueError(f"--horizon must be a positive number of slots, got {args.horizon}")
    agents = [a for a in args.agents.split(",") if a]
    points, curves = learning_curves(args.env_id, args.horizon, agents, _agent_sets(args.agent_set))
    command = " ".join(
        ["cluster-envs horizons", args.env_id, f"--horizon {args.horizon}"]
        + ([f"--agents {args.agents}"] if args.agents else [])
        + [f"--agent-set {shlex.quote(text)}" for text in args.agent_set]
        + ([f"--out {shlex.quote(str(args.out))}"] if args.out != PAGES else [])
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.env_id}.md"
    path.write_text(page(args.env_id, args.horizon, points, curves, command))
    print(f"written {path}")
    return path
