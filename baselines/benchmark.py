"""``cluster-envs benchmark``: ``compare`` on every registered id with an entry in ``baselines/settings.py``, at
its default preset changed only by that entry's ``env_kwargs`` (shown in the headline table), with all
reference agents and a PPO baseline (trained on the spot, or loaded from the model cache ``results/models``),
in one report.

The headline table gives, per env, the env kwargs every agent runs with and the score on the env's headline
metric normalized between the naive baseline (0) and the oracle (1) for the paper's algorithm, PPO, the best
online heuristic (the best online reference agent other than the paper's algorithm and the naive baseline;
"—" when none is left) and the oracle, with 95% bootstrap intervals over seeds. An env without an oracle agent
is normalized by its own offline benchmark, which scores 1 by definition, or, without one, by the paper's
algorithm. Ids without an entry in ``baselines/settings.py`` are listed as skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.compare import Comparison, compare
from baselines.outputs import claim
from baselines.report import fmt, interval, write_report
from baselines.settings import env_setting
from baselines.stats import bootstrap_ci
from cluster_envs import env_ids as registered

RL_ALGO = "ppo"
SEEDS = {"quick": range(5), "full": range(10)}
BENCHMARK_ORACLE = "env benchmark"  # the oracle cell of an env whose oracle is its offline benchmark


@dataclass
class EnvResult:
    comparison: Comparison
    report: Path
    seconds: float

    def cell(self, agent: str) -> dict[str, float]:
        scores = self.comparison.normalized_scores(agent)
        low, high = bootstrap_ci(scores)
        return {"agent": agent, "mean": float(scores.mean()), "ci_low": low, "ci_high": high}

    def best_heuristic(self) -> str | None:
        heuristics = self.comparison.heuristics()
        if not heuristics:
            return None
        return max(heuristics, key=lambda a: float(np.nanmean(self.comparison.normalized_scores(a))))

    def headline(self) -> dict[str, Any]:
        setting = self.comparison.setting
        roles = {"paper": setting.paper_agent, "ppo": RL_ALGO, "best heuristic": self.best_heuristic()}
        roles["oracle"] = setting.oracle_agent
        cells = {role: self.cell(agent) for role, agent in roles.items() if agent in self.comparison.agents}
        if setting.oracle_value is not None:  # the env's own benchmark: score 1 by definition, no spread over seeds
            cells["oracle"] = {"agent": BENCHMARK_ORACLE, "mean": 1.0, "ci_low": np.nan, "ci_high": np.nan}
        return cells


def benchmark(
    out_dir: str | Path = "results/benchmark",
    *,
    quick: bool = False,
    models_dir: str | Path | None = None,
    force: bool = False,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: bool = True,
    env_ids: list[str] | None = None,
) -> Path:
    """Run the benchmark and return the path of ``report.md``. PPO models are trained in, or loaded from,
    ``models_dir`` (default ``results/models``, the cache ``compare`` uses). ``out_dir`` may not hold another
    command's outputs unless ``force`` (claimed before anything runs)."""
    out = claim(out_dir or "results/benchmark", "benchmark", force=force)
    start, cpu_start = time.perf_counter(), time.process_time()
    results: dict[str, EnvResult] = {}
    skipped = []
    for env_id in env_ids or registered():
        setting = env_setting(env_id)
        if setting is None:
            skipped.append(env_id)
            continue
        env_start = time.perf_counter()
        comparison = compare(
            env_id,
            "all",
            rl=[RL_ALGO],
            seeds=SEEDS["quick" if quick else "full"],
            rl_steps=setting.rl_steps_quick if quick else setting.rl_steps,
            models_dir=models_dir,
            workers=workers,
            backend=backend,
            address=address,
            progress=progress,
        )
        report = write_report(comparison, out / env_id, force=force, command="benchmark")
        results[env_id] = EnvResult(comparison, report, time.perf_counter() - env_start)
    if not results:
        raise ValueError(f"no registered env id has an entry in baselines/settings.py (skipped: {skipped})")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    figure = plot_headline(results, out / "headline.png")
    (out / "headline.json").write_text(
        json.dumps(
            {
                "quick": quick,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "skipped": skipped,
                "envs": {
                    env_id: {
                        "env_kwargs": r.comparison.env_kwargs,
                        "headline_metric": r.comparison.setting.headline,
                        "scores": r.headline(),
                    }
                    for env_id, r in results.items()
                },
            },
            indent=2,
        )
    )
    path = out / "report.md"
    path.write_text(markdown(results, skipped, quick, (seconds, cpu_seconds), figure.relative_to(out), out))
    return path


def markdown(
    results: dict[str, EnvResult],
    skipped: list[str],
    quick: bool,
    times: tuple[float, float],
    figure: Path,
    out: Path,
) -> str:
    seconds, cpu_seconds = times  # wall, and this process's CPU (workers' excluded)
    seeds = len(SEEDS["quick" if quick else "full"])
    lines = [
        f"# cluster-envs benchmark{' (quick)' if quick else ''}",
        "",
        f"Every registered env with an entry in `baselines/settings.py`, at its default preset changed by the env "
        f"kwargs in the table (every agent's); {seeds} evaluation seeds per env, the same for every agent. "
        "Score: the env's headline metric normalized so that the naive baseline's mean is 0 and the oracle's is 1 "
        "(higher is better; above 1 beats the oracle's mean, below 0 is worse than naive). "
        "Brackets: 95% bootstrap intervals over seeds.",
        "",
        "| env | env kwargs | headline metric | paper's algorithm | PPO | best heuristic | oracle |",
        "|---|---|---|---|---|---|---|",
    ]
    for env_id, result in results.items():
        cells = result.headline()
        comparison = result.comparison
        kwargs = f"`{comparison.env_kwargs}`" if comparison.env_kwargs else "defaults"
        row = [f"[{env_id}]({result.report.relative_to(out)})", kwargs, f"`{comparison.setting.headline}`"]
        for role in ("paper", "ppo", "best heuristic", "oracle"):
            cell = cells.get(role)
            row.append(
                "—"
                if cell is None
                else f"`{cell['agent']}` {fmt(cell['mean'])} {interval(cell['ci_low'], cell['ci_high'])}"
            )
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"![normalized scores]({figure})", "", "## Runs", ""]
    lines += [
        "| env | wall (s) | PPO steps | PPO training (s) | PPO env steps/s | per CPU-second | model |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for env_id, result in results.items():
        facts = result.comparison.rl_runs.get(RL_ALGO, {})
        nan = float("nan")
        trained = "loaded" if facts.get("reused") else f"{facts.get('train_seconds', nan):.1f}"
        lines.append(
            f"| {env_id} | {result.seconds:.1f} | {facts.get('total_timesteps', '—')} | {trained} "
            f"| {facts.get('steps_per_second', nan):.0f} | {facts.get('steps_per_cpu_second', nan):.0f} "
            f"| `{facts.get('path', '—')}` |"
        )
    lines += ["", f"Total wall time: {seconds:.1f} s ({cpu_seconds:.1f} s of CPU time in this process)."]
    if skipped:
        lines += ["", f"Skipped (no entry in `baselines/settings.py`): {', '.join(skipped)}."]
    lines.append("")
    return "\n".join(lines)


def plot_headline(results: dict[str, EnvResult], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    roles = ("paper", "ppo", "best heuristic", "oracle")
    fig, ax = plt.subplots(figsize=(max(5.0, 2.2 * len(results) + 1), 3.6))
    width = 0.8 / len(roles)
    for k, role in enumerate(roles):
        for i, result in enumerate(results.values()):
            cell = result.headline().get(role)
            if cell is None:
                continue
            error = np.nan_to_num([[cell["mean"] - cell["ci_low"]], [cell["ci_high"] - cell["mean"]]])
            ax.bar(i + (k - 1.5) * width, cell["mean"], width, yerr=error, capsize=3, color=f"C{k}",
                   label=role if i == 0 else None)  # fmt: skip
    ax.axhline(0, color="grey", lw=0.8)
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(results)), list(results))
    ax.set_ylabel("normalized score (naive 0, oracle 1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
