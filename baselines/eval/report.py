"""Write a comparison out: ``report.md`` (tables and figures), ``results.csv`` (per agent and seed),
``summary.csv`` and ``results.json`` (everything, with the evaluation and training instances), and matplotlib
figures under ``figures/``. ``headline`` is the normalized-score table with its sanity flags, which
``cluster-envs compare`` also prints."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from agents.registry import agent_class
from baselines.eval import sanity
from baselines.eval.compare import Comparison
from baselines.eval.harness import Episode
from baselines.eval.outputs import claim
from baselines.eval.protocol import env_setting
from baselines.eval.stats import curve_band

DIRECTION_WORDS = {1: "higher is better", -1: "lower is better", 0: "direction not set"}
MAX_CURVE_POINTS = 400


def fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    if isinstance(x, float):
        return f"{0.0 if abs(x) < 1e-9 else x:.4g}"  # float noise around 0 (e.g. the oracle's regret) reads as 0
    return str(x)


def interval(low: Any, high: Any) -> str:
    return "—" if low is None or not np.isfinite(low) else f"[{fmt(low)}, {fmt(high)}]"


def score_text(row: dict[str, Any]) -> str:
    """A normalized score with its interval, or "—" with the reason it has none."""
    if row["mean"] is None:
        return f"— ({row['no_interval']})"
    if "no_interval" in row:
        return f"{fmt(row['mean'])} (no interval: {row['no_interval']})"
    return f"{fmt(row['mean'])} {interval(row['ci_low'], row['ci_high'])}"


def write_report(comparison: Comparison, out_dir: str | Path, *, force: bool = False, command: str = "compare") -> Path:
    """Write ``report.md``, the CSV and JSON results and the figures into ``out_dir``; return the report's path.

    ``out_dir`` may not hold another command's outputs unless ``force`` (``baselines.eval.outputs.claim``)."""
    out = claim(out_dir, command, force=force)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    summary = comparison.summary()
    _write_csv(out / "results.csv", per_seed_rows(comparison))
    _write_csv(out / "summary.csv", summary)
    (out / "results.json").write_text(json.dumps(to_json(comparison, summary), indent=2, default=repr))
    bars = {metric: plot_metric(comparison, summary, metric, out / "figures") for metric in comparison.metrics}
    curves = {key: plot_curve(comparison, key, out / "figures") for key in _curve_keys(comparison)}
    path = out / "report.md"
    path.write_text(markdown(comparison, summary, bars, curves, out))
    return path


def per_seed_rows(comparison: Comparison) -> list[dict[str, Any]]:
    metrics = list(dict.fromkeys(k for e in comparison.episodes for k in e.metrics))
    return [
        {"agent": e.agent, "seed": e.seed, "training_seed": e.training_seed, **{m: e.metrics.get(m) for m in metrics}}
        for e in comparison.episodes
    ]


def to_json(comparison: Comparison, summary: list[dict[str, Any]]) -> dict[str, Any]:
    setting = comparison.setting
    return {
        "env_id": comparison.env_id,
        "env_kwargs": comparison.env_kwargs,
        "agent_env_kwargs": comparison.agent_env_kwargs,
        "excluded": comparison.excluded,
        "seeds": comparison.seeds,
        "agents": comparison.agents,
        "paper_agent": comparison.paper_agent,
        "naive_agent": setting.naive_agent if setting else None,
        "oracle_agent": setting.oracle_agent if setting else None,
        "oracle_value": setting.oracle_value if setting else None,
        "headline": setting.headline if setting else None,
        **comparison.instance_record(),
        "summary": summary,
        "normalized": comparison.normalized_summary(),
        "rl_runs": comparison.rl_runs,
        "episodes": [
            {"agent": e.agent, "seed": e.seed, "training_seed": e.training_seed, "metrics": e.metrics}
            for e in comparison.episodes
        ],
    }


def read_comparison(folder: str | Path) -> Comparison:
    """The comparison a ``results.json`` holds (without the per-step traces), under today's settings entry: its
    anchors, flags and explanations are re-derived from the stored per-seed metrics."""
    stored = json.loads((Path(folder) / "results.json").read_text())
    env_id, rl_runs = stored["env_id"], stored["rl_runs"]
    if any("runs" not in facts for facts in rl_runs.values()):
        raise ValueError(f"{folder}/results.json was written before RL rows had training seeds; run it again")
    return Comparison(
        env_id=env_id,
        seeds=stored["seeds"],
        agents=stored["agents"],
        episodes=[
            Episode(env_id, e["agent"], e["seed"], e["metrics"], {}, e["training_seed"]) for e in stored["episodes"]
        ],
        setting=env_setting(env_id),
        env_kwargs=stored["env_kwargs"],
        agent_env_kwargs=stored["agent_env_kwargs"],
        excluded=stored["excluded"],
        privileged={a for a in stored["agents"] if a not in rl_runs and agent_class(env_id, a).privileged},
        rl_runs=rl_runs,
        held_out=stored["track"] == "held-out instances",
        instances={int(seed): instance for seed, instance in stored["evaluation_instances"].items()},
    )


def rewrite_markdown(comparison: Comparison, folder: str | Path) -> Path:
    """Rewrite ``report.md`` of a written report from ``comparison`` (e.g. ``read_comparison``'s), keeping its
    figures: what changes is only what the settings entry says (explanations, labels)."""
    out = Path(folder)
    bars = {metric: out / "figures" / f"{metric}.png" for metric in comparison.metrics}
    curves = {p.stem.removeprefix("curve_"): p for p in sorted((out / "figures").glob("curve_*.png"))}
    path = out / "report.md"
    path.write_text(markdown(comparison, comparison.summary(), bars, curves, out))
    return path


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def label(comparison: Comparison, agent: str) -> str:
    if agent == comparison.paper_agent:
        return f"{agent} ({comparison.setting.paper_tag})"
    if comparison.setting is not None and agent in comparison.setting.ablations:
        return f"{agent} (ablation)"
    if agent in comparison.privileged:
        return f"{agent} (oracle)"
    if agent in comparison.rl_runs:
        return f"{agent} (RL)"
    return agent


def markdown(
    comparison: Comparison,
    summary: list[dict[str, Any]],
    bars: dict[str, Path],
    curves: dict[str, Path],
    out: Path,
) -> str:
    setting, paper = comparison.setting, comparison.paper_agent
    seeds = comparison.seeds
    lines = [
        f"# {comparison.env_id}: agent comparison",
        "",
        f"Env kwargs of every agent: `{comparison.env_kwargs}`; with each agent's own (action and observation "
        "format only) under *Env kwargs per agent*. "
        f"Evaluation seeds: {len(seeds)} ({_seed_text(seeds)}), the same for every agent (common random numbers). "
        f"Intervals: {comparison.interval_text()} (`baselines/eval/stats.py`: agent and anchors resampled "
        "together; an RL row's training seeds and evaluation seeds resampled independently); Δ: per-seed paired "
        "difference to the paper's algorithm; P(better): fraction of seeds on which the agent beats it (ties count "
        "half)." + (" One evaluation seed: no interval." if len(seeds) < 2 else ""),
        "",
    ]
    if comparison.excluded:
        lines += [
            "Not compared (their env kwargs change the dynamics, not only the action or observation format, so "
            "they face another problem; `cluster-envs run` evaluates them alone): "
            + ", ".join(f"`{a}` needs `{kw}`" for a, kw in comparison.excluded.items())
            + ".",
            "",
        ]
    if setting is not None:
        lines += [headline(comparison), ""]
    lines += ["## Metrics", ""]
    for metric, direction in comparison.metrics.items():
        lines += [f"### `{metric}` ({DIRECTION_WORDS[direction]})", ""]
        head = f"| agent | mean | IQM | {comparison.interval_text()} |"
        rule = "|---|---:|---:|---|"
        if paper:
            head += f" Δ vs {paper} | interval of Δ (as the row's) | P(better) [interval] |"
            rule += "---:|---|---|"
        lines += [head, rule]
        for row in (r for r in summary if r["metric"] == metric):
            line = (
                f"| {label(comparison, row['agent'])} | {fmt(row['mean'])} | {fmt(row['iqm'])} "
                f"| {interval(row['ci_low'], row['ci_high'])} |"
            )
            if paper:
                if "diff" in row:
                    p_text = "—"
                    if "p_improve" in row:
                        p_text = f"{fmt(row['p_improve'])} {interval(row['p_low'], row['p_high'])}"
                    line += f" {fmt(row['diff'])} | {interval(row['diff_low'], row['diff_high'])} | {p_text} |"
                else:
                    line += " — | — | — |"
            lines.append(line)
        lines += ["", f"![{metric}]({bars[metric].relative_to(out)})", ""]
    if curves:
        lines += [f"## Per-step curves (mean over seeds; band: {comparison.interval_text()})", ""]
        lines += [f"![{key}]({path.relative_to(out)})" for key, path in curves.items()]
        lines.append("")
    if comparison.rl_runs:
        lines += [
            "## RL training",
            "",
            "| agent | training seed | steps | wall (s) | env steps/s | run folder | source |",
            "|---|---:|---:|---:|---:|---|---|",
        ]
        for name, facts in comparison.rl_runs.items():
            lines += [
                f"| {name} | {run['training_seed']} | {run['total_timesteps']} | {run['train_seconds']:.1f} "
                f"| {run['steps_per_second']:.0f} | `{run['path']}` | {run['source']} |"
                for run in facts["runs"]
            ]
        lines.append("")
    lines += [
        "## Env kwargs per agent",
        "",
        "| agent | env kwargs it ran with |",
        "|---|---|",
        *(f"| {label(comparison, a)} | `{kw}` |" for a, kw in comparison.agent_env_kwargs.items()),
        "",
    ]
    lines += ["Raw per-seed results: `results.csv`, `results.json`; the table above: `summary.csv`.", ""]
    return "\n".join(lines)


def headline(comparison: Comparison) -> str:
    """The anchors, the normalized scores on the headline metric and the sanity flags (markdown)."""
    setting = comparison.setting
    instances = sorted({str(i) for i in comparison.instances.values()})
    dropped = comparison.degenerate_seeds()
    lines = [
        f"Track: {comparison.track} (instances: {', '.join(instances)}). Paper's algorithm: "
        f"`{comparison.paper_agent}`, {setting.paper_label}; 0-anchor (naive): `{setting.naive_agent}`; "
        "1-anchor (clairvoyant): "
        f"{setting.oracle_text}. {' '.join(filter(None, (setting.kwargs_text(comparison.env_kwargs), setting.notes)))}",
        "",
        *(f"- `{agent}`: {what}." for agent, what in setting.ablations.items() if agent in comparison.agents),
        "",
        f"## Normalized score on `{setting.headline}`",
        "",
        "Each evaluation seed normalized by its own anchors; the score is the ratio of means (mean agent − mean "
        "naive) / (mean clairvoyant − mean naive), the IQM over the runs (an evaluation seed, or an RL agent's "
        "training seed).",
        "",
    ]
    if dropped:
        lines += [degenerate_sentence(comparison), ""]
    lines += [
        f"| agent | mean [{comparison.interval_text()}] | IQM |",
        "|---|---|---:|",
    ]
    for row in comparison.normalized_summary():
        lines.append(f"| {label(comparison, row['agent'])} | {score_text(row)} | {fmt(row['iqm'])} |")
    if comparison.rl_runs:
        lines += ["", rl_runs_sentence(comparison)]
    lines += ["", "### Sanity notes", "", *sanity.markdown(sanity.flags(comparison))]
    return "\n".join(lines)


def rl_runs_sentence(comparison: Comparison) -> str:
    """How the RL rows are scored, and each RL agent's training seeds (with how many of those requested it has)."""
    parts = []
    for name, facts in comparison.rl_runs.items():
        seeds = [run["training_seed"] for run in facts["runs"]]
        text = f"`{name}` has {len(seeds)} ({', '.join(map(str, seeds))})"
        if len(seeds) < facts["requested"]:
            text += f" of the {facts['requested']} requested: the runs found, the others not trained"
        parts.append(text + (", one run: intervals over evaluation seeds only" if len(seeds) == 1 else ""))
    return (
        "RL rows: a run is one training seed; it plays every evaluation seed. An RL row's mean is over all its "
        "episodes (runs × evaluation seeds), its IQM over its runs (each scored by its mean over the evaluation "
        "seeds, rliable's convention), its intervals a two-level bootstrap (training seeds and evaluation seeds "
        "resampled independently, the anchors with the evaluation seeds), its Δ and P(better) paired on the "
        f"evaluation seeds within each run. Training seeds: {'; '.join(parts)}."
    )


def degenerate_sentence(comparison: Comparison) -> str:
    """Which evaluation seeds the protocol's degenerate-instance rule dropped, and why."""
    dropped = comparison.degenerate_seeds()
    instances = ", ".join(f"{s} (instance {comparison.instances.get(s, 'reset seed')})" for s in dropped)
    return (
        f"Dropped from every normalized score (the protocol's degenerate-instance rule): evaluation seed(s) "
        f"{instances}, on which the naive and clairvoyant anchors score the same `{comparison.setting.headline}`, "
        f"so no agent can be placed between them. The scores run over the other {len(comparison.scored_seeds())}."
    )


def headline_text(benchmark_report: Path) -> str:
    """What ``cluster-envs benchmark`` prints when it ends: the headline its run wrote beside ``report.md``."""
    return (Path(benchmark_report).parent / "headline.md").read_text()


def _seed_text(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_metric(comparison: Comparison, summary: list[dict[str, Any]], metric: str, folder: Path) -> Path:
    plt = _pyplot()
    rows = [r for r in summary if r["metric"] == metric]
    means = np.array([r["mean"] for r in rows])
    low = np.array([np.nan if r["ci_low"] is None else r["ci_low"] for r in rows])
    high = np.array([np.nan if r["ci_high"] is None else r["ci_high"] for r in rows])
    errors = np.nan_to_num(np.vstack([means - low, high - means]), nan=0.0)
    colors = ["tab:red" if r["agent"] == comparison.paper_agent else "tab:blue" for r in rows]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(rows) + 1), 4.0))
    ax.bar(range(len(rows)), means, yerr=errors, color=colors, capsize=4)
    ax.set_xticks(range(len(rows)), [label(comparison, r["agent"]) for r in rows], rotation=30, ha="right")
    ax.set_ylabel(metric)
    ax.set_title(f"{comparison.env_id}: {metric}\n({comparison.interval_text()})", fontsize=8)
    fig.tight_layout()
    path = folder / f"{metric}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _curve_keys(comparison: Comparison) -> list[str]:
    return [key for key in dict.fromkeys(k for e in comparison.episodes for k in e.trace)]


def plot_curve(comparison: Comparison, key: str, folder: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for agent in comparison.agents:
        traces = comparison.traces(agent, key)  # episodes in order: per training seed, every evaluation seed
        if not traces:
            continue
        length = min(len(t) for t in traces)
        idx = np.unique(np.linspace(0, length - 1, min(length, MAX_CURVE_POINTS)).astype(int))
        data = np.vstack([t[idx] for t in traces]).astype(np.float64)
        data = data.reshape(len(comparison.training_seeds(agent)), -1, idx.size)
        mean = data.mean(axis=(0, 1))
        (line,) = ax.plot(idx + 1, mean, label=label(comparison, agent), lw=1.2)
        if data.shape[1] >= 2:
            low, high = curve_band(data)
            ax.fill_between(idx + 1, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("step")
    ax.set_ylabel(key)
    ax.set_title(f"{comparison.env_id}: {key}\n(band: {comparison.interval_text()})", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = folder / f"curve_{key}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
