"""Learning curves of each env's paper algorithm, from which the protocol's horizon is chosen (not from compute).

``cluster-envs horizons ID --horizon T`` plays the protocol's paper agent and naive anchor (and
``--agents``, with ``--agent-set agent:key=value`` constants, e.g. ``sabr:beta_scale=0.3``) for one episode of
``T`` slots per validation seed (100-104), with the protocol's env kwargs, and records the setting's first curve
(a cumulative per-step ``info`` key, e.g. ``regret``) at about 12 log-spaced checkpoints: the table gives the mean
over seeds of curve(t) / t, the per-slot average, so a learning phase shows as a falling column that flattens.
ClusterSLA-v1 runs through its compiled long-horizon runner (``LONG_HORIZON_RUNNERS``; T = 6·10⁵ takes seconds)
and also gives the largest SLA deficit so far (max over users and recorded steps), Algorithm 2's second criterion.
The command writes a generated page, ``docs/results/learning_curves/<ID>.md``.

``--seeds`` plays other seeds (e.g. the evaluation seeds 0-9, to score agents at the horizon). The page then also
gives, at t = T, each row's mean with its paired interval (``baselines.eval.stats``: the rows share the seeds) and
its paired difference from the paper's algorithm; a setting with two criteria (ClusterSLA-v1: work regret and max
SLA deficit) gets a Pareto figure of the two at t = T, every point labelled (``<page>-pareto.png`` beside the page).
The per-seed values go to ``<ID>.json`` beside the page (with the command, commit and date of the run), and
``--render`` rewrites the page and figure from it without playing an episode (e.g. after the protocol entry's
explanations changed); the page then names both the run and the render.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents import make_agent
from baselines.eval import stats
from baselines.eval.harness import LONG_HORIZON_RUNNERS, rollout, simulate
from baselines.eval.outputs import run_facts
from baselines.eval.protocol import VALIDATION_SEEDS, parse_seeds, require_setting

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
    """Checkpoints and, per row label (agent and curve), the values per seed at each checkpoint (seeds × points)."""
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
        out[row] = {curve: np.array([s[curve] for s in per_seed]) for curve in per_seed[0]}
    return points, out


def page(env_id: str, horizon: int, points, curves, origin: str, seeds=VALIDATION_SEEDS,
         pareto: Path | None = None) -> str:  # fmt: skip
    """The generated page; ``origin`` is its provenance line (:func:`origin_line`)."""
    setting = require_setting(env_id)
    lines = [
        f"# Learning curves on {env_id}",
        "",
        origin,
        "",
        f"One episode of {horizon} slots per seed ({_seed_text(seeds)}), the protocol's env kwargs; each entry is the "
        "mean over the seeds at step t. The protocol's horizon is read from the paper algorithm's column (on the "
        "validation seeds): past the steps where it still falls.",
        "",
    ]
    labels = [(row, curve) for row, by_curve in curves.items() for curve in by_curve]
    lines.append("| t | " + " | ".join(f"`{row}` {curve}" for row, curve in labels) + " |")
    lines.append("| --- |" + " --- |" * len(labels))
    for k, t in enumerate(points):
        lines.append(f"| {t} | " + " | ".join(f"{curves[row][curve][:, k].mean():.4g}" for row, curve in labels) + " |")
    if len(seeds) >= 2:
        lines += ["", *final_table(env_id, horizon, curves, len(seeds), setting.paper_agent)]
    if pareto is not None:
        lines += ["", f"![{env_id} at T = {horizon}: the two criteria]({pareto.name})"]
    return "\n".join(lines) + "\n"


def _seed_text(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
    return f"seeds {seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else f"seeds {seeds}"


def _privileged(env_id: str, row: str) -> bool:
    return bool(make_agent(env_id, row.split("@")[0]).privileged)


def final_table(env_id: str, horizon: int, curves: Curves, n_seeds: int, paper: str) -> list[str]:
    """At t = T, per row and curve: the mean over the seeds and its interval, the paired difference from the paper's
    algorithm (row − paper on each seed) and its interval, every interval the package's rule; then how each online
    row stands to the paper's algorithm, and the surprises (a row that dominates it or is level with it) with the
    protocol entry's explanation (``explanations``, keyed ``regime:dominates:<row>`` / ``regime:level:<row>``), and
    the entry's notes on where each row stands (``regime:note:<row>``)."""
    names = list(next(iter(curves.values())))
    lines = [
        f"## At t = T = {horizon}",
        "",
        # the package's interval sentence; the seeds are the page's (validation or evaluation), named above
        f"Mean over the seeds [{stats.interval_over(n_seeds).replace('evaluation seed', 'seed')}]; Δ = row − "
        f"`{paper}` on the same seed, its mean "
        "[interval]. Lower is better for every column. *Privileged*: the agent reads the loads before they arrive "
        "(an offline reference, not an online competitor).",
        "",
        "| row | " + " | ".join(f"{c} | Δ {c}" for c in names) + " | against the paper's algorithm |",
        "| --- |" + " --- | --- |" * len(names) + " --- |",
    ]
    flags = []
    for row, by_curve in curves.items():
        cells, signs = [], []
        for curve in names:
            final, delta = by_curve[curve][:, -1], by_curve[curve][:, -1] - curves[paper][curve][:, -1]
            cells += [_mean_cell(final), "—" if row == paper else _mean_cell(delta)]
            if row != paper:
                low, high = stats.mean_interval(delta)
                signs.append(-1 if high < 0 else 1 if low > 0 else 0)  # -1: better than the paper's algorithm
        relation = "—" if row == paper else _relation(signs, names)
        if row != paper and not _privileged(env_id, row) and relation in ("dominates it", "level"):
            flags.append((f"regime:{'dominates' if relation == 'dominates it' else 'level'}:{row}", row, relation))
        label = f"`{row}`" + (" (privileged)" if _privileged(env_id, row) else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {relation} |")
    explanations = require_setting(env_id).explanations
    if flags:
        lines += ["", "Surprises (an online row that dominates the paper's algorithm, or is level with it):", ""]
        for key, row, relation in flags:
            why = explanations.get(key, f"unexplained: add `{key}` to the protocol entry's explanations")
            lines.append(f"- `{row}` {relation}: {why}")
    notes = [(row, explanations[f"regime:note:{row}"]) for row in curves if f"regime:note:{row}" in explanations]
    if notes:
        lines += ["", "Why the rows stand where they do (the protocol entry's explanations):", ""]
        lines += [f"- `{row}`: {why}" for row, why in notes]
    return lines


def _relation(signs: Sequence[int], names: Sequence[str]) -> str:
    """How a row stands to the paper's algorithm from the signs of its paired differences (−1 better, +1 worse,
    0 the interval holds 0), one per criterion."""
    if all(sign == 0 for sign in signs):
        return "level"
    if all(sign <= 0 for sign in signs):
        return "dominates it"
    if all(sign >= 0 for sign in signs):
        return "dominated"
    better = [n for n, sign in zip(names, signs, strict=True) if sign < 0]
    worse = [n for n, sign in zip(names, signs, strict=True) if sign > 0]
    return f"trade-off: better {', '.join(better)}; worse {', '.join(worse)}"


def _mean_cell(values: np.ndarray) -> str:
    low, high = stats.mean_interval(values)
    return f"{values.mean():.4g} [{low:.4g}, {high:.4g}]"


def pareto_figure(path: Path, env_id: str, horizon: int, curves: Curves) -> None:
    """The two criteria at t = T, one labelled point per row (the mean over the seeds, with its interval as error
    bars on both axes); privileged rows hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_name, y_name = list(next(iter(curves.values())))
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    labels: list[tuple[float, float, list[str], str]] = []  # coinciding points (within 2 %) share one label
    for k, (row, by_curve) in enumerate(curves.items()):
        x, y = by_curve[x_name][:, -1], by_curve[y_name][:, -1]
        (xl, xh), (yl, yh) = stats.mean_interval(x), stats.mean_interval(y)
        hollow = _privileged(env_id, row)
        ax.errorbar(x.mean(), y.mean(), xerr=[[max(x.mean() - xl, 0)], [max(xh - x.mean(), 0)]],
                    yerr=[[max(y.mean() - yl, 0)], [max(yh - y.mean(), 0)]], fmt="o", color=f"C{k}",
                    mfc="white" if hollow else f"C{k}", capsize=3)  # fmt: skip
        name = row + (" (privileged)" if hollow else "")
        near = next((p for p in labels if np.isclose(p[0], x.mean(), rtol=0.02, atol=1e-9)
                     and np.isclose(p[1], y.mean(), rtol=0.02, atol=1e-9)), None)  # fmt: skip
        if near is None:
            labels.append((x.mean(), y.mean(), [name], f"C{k}"))
        else:
            near[2].append(name)
    placed: list[tuple[float, float]] = []
    for x, y, names, color in labels:  # a label near an earlier one (within 10 %) goes one line lower
        below = sum(np.isclose(x, px, rtol=0.1, atol=1e-9) and np.isclose(y, py, rtol=0.1, atol=1e-9)
                    for px, py in placed)  # fmt: skip
        placed.append((x, y))
        ax.annotate(" = ".join(names), (x, y), textcoords="offset points", xytext=(6, 6 - 13 * below), fontsize=9,
                    color=color)  # fmt: skip
    ax.set_xscale("symlog", linthresh=1e-4)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set(xlabel=f"{x_name} at t = T (lower is better)", ylabel=f"{y_name} at t = T (lower is better)",
           title=f"{env_id}, T = {horizon}: work regret vs SLA deficit (mean, 95% interval)")  # fmt: skip
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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


def origin_line(run: dict[str, Any], render: str | None = None) -> str:
    """The page's provenance: the command, commit and date of the run (and of the render, if it was re-rendered)."""
    line = f"Generated by `{run['command']}` on commit {run['commit']}, {run['date']}"
    if render is not None:
        facts = run_facts()
        line += f"; rendered by `{render}` on commit {facts['commit']}, {facts['date']}"
    return line + ". Do not edit by hand."


def save_run(path: Path, command: str, horizon: int, seeds: Sequence[int], points, curves: Curves) -> dict:
    """Write the run's per-seed values with its command, commit and date to ``path`` (JSON); return the record."""
    facts = run_facts()
    run = {"command": command, "commit": facts["commit"], "date": facts["date"], "horizon": horizon,
           "seeds": list(seeds), "points": [int(t) for t in points],
           "curves": {row: {c: v.tolist() for c, v in by.items()} for row, by in curves.items()}}  # fmt: skip
    path.write_text(json.dumps(run, indent=1) + "\n")
    return run


def load_run(path: Path) -> tuple[dict, np.ndarray, Curves]:
    if not path.is_file():
        raise ValueError(f"--render needs the run's data {path}; run the command without --render first")
    run = json.loads(path.read_text())
    curves = {row: {c: np.asarray(v) for c, v in by.items()} for row, by in run["curves"].items()}
    return run, np.asarray(run["points"]), curves


def write_page(env_id: str, out: Path, run: dict, points, curves: Curves, render: str | None = None) -> Path:
    """The page (and, for two criteria over several seeds, the Pareto figure) of ``run`` in ``out``."""
    path, seeds, horizon = out / f"{env_id}.md", run["seeds"], run["horizon"]
    pareto = None
    if len(next(iter(curves.values()))) == 2 and len(seeds) >= 2:  # two criteria: their trade-off at T
        pareto = path.with_name(f"{env_id}-pareto.png")
        pareto_figure(pareto, env_id, horizon, curves)
    path.write_text(page(env_id, horizon, points, curves, origin_line(run, render), seeds, pareto))
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs horizons``."""
    parser.add_argument("env_id", help="an id with a protocol entry")
    parser.add_argument("--horizon", type=int, help="the episode length T to play (slots; required unless --render)")
    parser.add_argument("--agents", default="", help="more agents, comma-separated")
    parser.add_argument("--agent-set", action="append", default=[], metavar="AGENT:KEY=VALUE",
                        help="a variant row of an agent with one constant changed")  # fmt: skip
    parser.add_argument("--seeds", type=parse_seeds, default=list(VALIDATION_SEEDS),
                        help="seeds, e.g. 0-9 (default: the validation seeds 100-104)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=PAGES, help=f"the pages' folder (default {PAGES})")
    parser.add_argument("--render", action="store_true",
                        help="rewrite the page from the run's data in --out (<ID>.json), playing nothing")  # fmt: skip


def run_from_args(args: argparse.Namespace) -> Path:
    """``cluster-envs horizons``: the learning curves of ``args.env_id``, written as its generated page (and the
    run's per-seed values as ``<ID>.json`` beside it); ``--render`` rewrites the page from those values."""
    words = ["cluster-envs horizons", args.env_id] + (
        [f"--out {shlex.quote(str(args.out))}"] if args.out != PAGES else []
    )
    data = args.out / f"{args.env_id}.json"
    if args.render:
        run, points, curves = load_run(data)
        path = write_page(args.env_id, args.out, run, points, curves, render=" ".join([*words, "--render"]))
        print(f"written {path}")
        return path
    if args.horizon is None or args.horizon < 1:
        raise ValueError(f"--horizon must be a positive number of slots, got {args.horizon}")
    agents = [a for a in args.agents.split(",") if a]
    points, curves = learning_curves(args.env_id, args.horizon, agents, _agent_sets(args.agent_set), args.seeds)
    command = " ".join(
        ["cluster-envs horizons", args.env_id, f"--horizon {args.horizon}"]
        + ([f"--agents {args.agents}"] if args.agents else [])
        + [f"--agent-set {shlex.quote(text)}" for text in args.agent_set]
        + ([f"--seeds {','.join(map(str, args.seeds))}"] if list(args.seeds) != list(VALIDATION_SEEDS) else [])
        + ([f"--out {shlex.quote(str(args.out))}"] if args.out != PAGES else [])
    )
    args.out.mkdir(parents=True, exist_ok=True)
    run = save_run(data, command, args.horizon, args.seeds, points, curves)
    path = write_page(args.env_id, args.out, run, points, curves)
    print(f"written {path}")
    return path
