"""``cluster-envs benchmark``: ``compare`` on every registered id with an entry in ``baselines/eval/protocol.yml``,
under the protocol of ``docs/benchmark.md``, with all reference agents and a PPO baseline (the package's shipped
runs, else trained on the spot into the model cache ``results/models``), in one report. The PPO row's
algorithm is the settings entry's ``rl_algo`` (PPO, or MaskablePPO where the ablations chose masks; the cell
names it). RL-ready ids (``Cluster<Name>RL-vN``) are their base id's problem and are not run twice.

Two tracks. The headline, **held-out instances**: every agent runs on the same evaluation seeds, whose instances
RL never trained on (where the reset seed draws the instance, RL trains on seeds above every evaluation seed;
where an env kwarg fixes it, each seed runs on a held-out instance and RL, whose spaces are the training
instance's, is not in this track). The **fixed instance** track, for the envs whose instance an env kwarg fixes
(MultiServer, Gang): every agent and PPO on the instance PPO trained on, the offline upper reference.

Per env and track the table names the naive anchor (0) and the clairvoyant anchor (1) and gives the normalized
headline score of the paper's algorithm (95% bootstrap interval over evaluation seeds), PPO (one run per training seed
of the entry's ``rl_seeds``, each scored by its mean over the evaluation seeds; interval over the runs; budget: env
steps × training seeds; ``--quick`` evaluates the runs it finds, shipped or cached, says how many, and trains only
where none is found), the best online heuristic (the best online reference agent other than the paper's algorithm,
its ablations and the naive anchor; "—" when none is left) and the clairvoyant anchor. The sanity flags of
``baselines.eval.sanity`` follow, each with its explanation from the settings entry. Across the envs of the headline
track: the IQM of each role's normalized scores with stratified bootstrap intervals, and performance profiles
(rliable). Ids without an entry are listed as skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.eval import sanity
from baselines.eval.compare import Comparison, compare
from baselines.eval.outputs import exclusive, save_figure, write_text
from baselines.eval.protocol import env_setting
from baselines.eval.report import fmt, interval, read_comparison, rewrite_markdown, write_report
from baselines.eval.stats import aggregate_iqm, bootstrap_ci, performance_profiles
from cluster_envs import env_ids as registered

SEEDS = {"quick": range(5), "full": range(10)}
ROLES = ("paper", "ppo", "best heuristic", "oracle")
ROLE_TITLES = {"paper": "paper's algorithm", "ppo": "PPO", "best heuristic": "best heuristic", "oracle": "1-anchor"}
TAUS = np.linspace(-0.5, 1.5, 81)  # performance-profile thresholds on the normalized score


@dataclass
class EnvResult:
    comparison: Comparison
    report: Path
    seconds: float

    def cell(self, agent: str) -> dict[str, Any]:
        scores = self.comparison.normalized_scores(agent)
        low, high = bootstrap_ci(scores)
        return {"agent": agent, "mean": float(scores.mean()), "ci_low": low, "ci_high": high}

    def best_heuristic(self) -> str | None:
        heuristics = self.comparison.heuristics()
        if not heuristics:
            return None
        return max(heuristics, key=lambda a: float(np.nanmean(self.comparison.normalized_scores(a))))

    def roles(self) -> dict[str, str]:
        """Role -> the agent playing it in this comparison (a role without an agent is left out)."""
        setting = self.comparison.setting
        roles = {"paper": setting.paper_agent, "ppo": setting.rl_algo, "best heuristic": self.best_heuristic()}
        roles["oracle"] = setting.oracle_agent
        return {role: agent for role, agent in roles.items() if agent in self.comparison.agents}

    def headline(self) -> dict[str, Any]:
        cells = {role: self.cell(agent) for role, agent in self.roles().items()}
        setting = self.comparison.setting
        if setting.oracle_value is not None:  # a closed-form optimum: score 1 by definition, no spread over seeds
            cells["oracle"] = {"agent": setting.oracle_value_name, "mean": 1.0, "ci_low": np.nan, "ci_high": np.nan}
        return cells

    def flags(self) -> list[sanity.Flag]:
        return sanity.flags(self.comparison)

    def rl_budget(self) -> str:
        """ "<env steps> steps × <n> training seeds", with "of <requested>" when runs are missing (``--quick``)."""
        facts = self.comparison.rl_runs.get(self.comparison.setting.rl_algo)
        if facts is None:
            return "—"
        steps = sorted({run["total_timesteps"] for run in facts["runs"]})
        count = len(facts["runs"])
        text = f"{steps[0]:,}" + (f"–{steps[-1]:,}" if len(steps) > 1 else "") + f" steps × {count} training seed"
        text += "s" if count != 1 else ""
        return text + (f" (of {facts['requested']})" if count < facts["requested"] else "")

    def to_json(self) -> dict[str, Any]:
        comparison = self.comparison
        setting = comparison.setting
        return {
            "env_kwargs": comparison.env_kwargs,
            "headline_metric": setting.headline,
            "naive_anchor": setting.naive_agent,
            "clairvoyant_anchor": setting.oracle_agent or setting.oracle_value_name,
            "scores": self.headline(),
            "rl_budget": self.rl_budget(),
            "seconds": self.seconds,
            "evaluation_seeds": comparison.seeds,
            **comparison.instance_record(),
            "flags": [{"key": f.key, "text": f.text, "explanation": f.explanation} for f in self.flags()],
        }


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
    retrain: bool = False,
    threads: int = 1,
) -> Path:
    """Run the benchmark and return the path of ``report.md`` (its headline is also ``headline.md``). PPO runs
    are the package's shipped ones, unless ``retrain`` (always trains; ``threads``: torch's) or ``models_dir``'s serve
    first; else trained into ``models_dir`` (default the cache ``results/models``; the rule of ``baselines.rl.store``).
    ``out_dir`` may not hold another command's outputs unless ``force``; it is held for the run (``exclusive``:
    checked, locked and marked incomplete before anything runs, marked complete last)."""
    with exclusive(out_dir or "results/benchmark", "benchmark", force=force) as out:
        return _run(out, quick, models_dir, force, workers, backend, address, progress, env_ids, retrain, threads)


def _run(out: Path, quick: bool, models_dir: str | Path | None, force: bool, workers: int, backend: str,
         address: str | None, progress: bool, env_ids: list[str] | None, retrain: bool,
         threads: int) -> Path:  # fmt: skip
    start, cpu_start = time.perf_counter(), time.process_time()
    tracks: dict[str, dict[str, EnvResult]] = {"held-out instances": {}, "fixed instance": {}}
    skipped = []
    for env_id in env_ids or registered():
        setting = env_setting(env_id)
        if setting is None:
            skipped.append(env_id)
            continue
        fixed = setting.instance_kwarg is not None  # RL cannot leave its training instance: a second track
        for held_out in (True, False) if fixed else (True,):
            env_start = time.perf_counter()
            comparison = compare(
                env_id,
                "all",
                rl=[] if held_out and fixed else [setting.rl_algo],
                seeds=SEEDS["quick" if quick else "full"],
                rl_steps=setting.rl_steps_quick if quick else setting.rl_steps,
                train_missing=not quick,  # --quick evaluates the runs it finds (and says how many)
                models_dir=models_dir,
                workers=workers,
                backend=backend,
                address=address,
                progress=progress,
                held_out=held_out,
                retrain=retrain,
                threads=threads,
            )
            folder = out / env_id if held_out else out / "fixed-instance" / env_id
            report = write_report(comparison, folder, force=force, command="benchmark")
            tracks[comparison.track][env_id] = EnvResult(comparison, report, time.perf_counter() - env_start)
    if not tracks["held-out instances"]:
        raise ValueError(f"no registered env id has an entry in baselines/eval/protocol.yml (skipped: {skipped})")
    times = {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu_start}
    return write_headline(out, tracks, {"quick": quick, **times, "skipped": skipped})


def render(out_dir: str | Path) -> Path:
    """Rewrite the headline and every report of a finished run in ``out_dir`` from its saved per-seed results,
    under today's settings entries (e.g. a sanity flag explained after the run); no episode is run again."""
    out = Path(out_dir)
    stored = json.loads((out / "headline.json").read_text())
    tracks: dict[str, dict[str, EnvResult]] = {}
    for track, results in stored["tracks"].items():
        tracks[track] = {}
        for env_id, facts in results.items():
            folder = out / env_id if track == "held-out instances" else out / "fixed-instance" / env_id
            comparison = read_comparison(folder)
            report = rewrite_markdown(comparison, folder)
            tracks[track][env_id] = EnvResult(comparison, report, facts.get("seconds", float("nan")))
    run = {key: stored[key] for key in ("quick", "seconds", "cpu_seconds", "skipped")}
    return write_headline(out, tracks, run)


def write_headline(out: Path, tracks: dict[str, dict[str, EnvResult]], run: dict[str, Any]) -> Path:
    """Write ``headline.json``, ``headline.md``, the figures and ``report.md``; return the latter's path."""
    out.mkdir(parents=True, exist_ok=True)
    headline = tracks["held-out instances"]
    aggregate = aggregate_roles(headline)
    figure = plot_headline(headline, out / "headline.png")
    profile = plot_profiles(headline, out / "profiles.png")
    stored_tracks = {track: {e: r.to_json() for e, r in results.items()} for track, results in tracks.items()}
    stored = {**run, "tracks": stored_tracks, "aggregate": aggregate}
    write_text(out / "headline.json", json.dumps(stored, indent=2, default=repr))
    head = headline_markdown(tracks, aggregate, run["quick"], out)
    write_text(out / "headline.md", head)
    figures = [
        f"![normalized scores]({figure.relative_to(out)})",
        f"![performance profiles]({profile.relative_to(out)})",
    ]
    path = out / "report.md"
    write_text(path, head + "\n" + runs_markdown(tracks, run["skipped"], (run["seconds"], run["cpu_seconds"]), figures))
    return path


def aggregate_roles(results: dict[str, EnvResult]) -> dict[str, dict[str, Any]]:
    """Per role, the IQM over the envs that have it of the normalized scores of its runs, with rliable's stratified
    bootstrap interval (the closed-form 1-anchors, score 1 on every seed, count as such)."""
    scores = role_scores(results)
    estimates = aggregate_iqm({role: matrix for role, (matrix, _) in scores.items()})
    return {
        role: {
            "iqm": estimates[role][0],
            "ci_low": estimates[role][1],
            "ci_high": estimates[role][2],
            "envs": envs,
            "runs": int(matrix.shape[0]),
        }  # fmt: skip
        for role, (matrix, envs) in scores.items()
    }


def role_scores(results: dict[str, EnvResult]) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Per role: the (runs, envs) matrix of normalized scores over the envs that have the role, and those envs. A
    run is an evaluation seed of a reference agent and a training seed of PPO (``Comparison.samples``). rliable needs
    as many runs in every env: where PPO's counts differ (``--quick`` with fewer runs shipped for some ids, or
    entries with other ``rl_seeds``), each env contributes its first runs, as many as the env with the fewest has."""
    columns: dict[str, dict[str, np.ndarray]] = {role: {} for role in ROLES}
    for env_id, result in results.items():
        for role, agent in result.roles().items():
            columns[role][env_id] = result.comparison.normalized_scores(agent)
        if result.comparison.setting.oracle_value is not None:
            columns["oracle"][env_id] = np.ones(len(result.comparison.seeds))
    matrices = {}
    for role, column in columns.items():
        if column:
            runs = min(len(c) for c in column.values())
            matrices[role] = (np.column_stack([c[:runs] for c in column.values()]), list(column))
    return matrices


def _cell_text(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "—"
    return f"`{cell['agent']}` {fmt(cell['mean'])} {interval(cell['ci_low'], cell['ci_high'])}"


def track_table(results: dict[str, EnvResult], out: Path) -> list[str]:
    lines = [
        "| env | env kwargs | headline metric | 0-anchor | paper's algorithm | PPO | PPO budget | best heuristic "
        "| 1-anchor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id, result in results.items():
        cells, comparison = result.headline(), result.comparison
        kwargs = f"`{comparison.env_kwargs}`" if comparison.env_kwargs else "defaults"
        ppo = _cell_text(cells.get("ppo"))
        if "ppo" not in cells and comparison.setting.instance_kwarg is not None:
            ppo = "not run: its spaces are its training instance's (see the fixed-instance track)"
        row = [
            f"[{env_id}]({result.report.relative_to(out)})",
            kwargs,
            f"`{comparison.setting.headline}`",
            f"`{comparison.setting.naive_agent}`",
            _cell_text(cells.get("paper")),
            ppo,
            result.rl_budget(),
            _cell_text(cells.get("best heuristic")),
            _cell_text(cells.get("oracle")),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def headline_markdown(
    tracks: dict[str, dict[str, EnvResult]], aggregate: dict[str, dict[str, Any]], quick: bool, out: Path
) -> str:
    """The headline: both tracks' tables, the sanity flags with their explanations, the aggregate."""
    headline, fixed = tracks["held-out instances"], tracks["fixed instance"]
    seeds = len(SEEDS["quick" if quick else "full"])
    lines = [
        f"# cluster-envs benchmark{' (quick)' if quick else ''}",
        "",
        "Protocol: `docs/benchmark.md`. Score: the env's headline metric normalized so that the 0-anchor (a naive "
        "policy) scores 0 and the 1-anchor (a clairvoyant policy that knows the hidden parameters, or the "
        "closed-form offline optimum) scores 1; higher is better. Every agent plays the same "
        f"{seeds} evaluation seeds. Brackets: 95% bootstrap intervals over those seeds, except PPO's: over its "
        "training seeds, each run scored by its mean over the evaluation seeds (rliable's convention; the PPO budget "
        "column gives the count, and one run has no interval).",
        "",
        "## Held-out instances (headline)",
        "",
        "No agent trained on an evaluation instance: RL trained on instances drawn from seeds above every evaluation "
        "seed, or (MultiServer, Gang) each evaluation seed runs on an instance of its own.",
        "",
        *track_table(headline, out),
        "",
    ]
    if fixed:
        lines += [
            "## Fixed instance (offline upper reference)",
            "",
            "Every agent on the one instance PPO trained on, over fresh episode seeds: PPO had many episodes of the "
            "evaluated instance, the online agents one. Not comparable with the headline.",
            "",
            *track_table(fixed, out),
            "",
        ]
    lines += ["## Sanity notes", ""]
    for track, results in tracks.items():
        for env_id, result in results.items():
            lines += [f"**{env_id}** ({track}):", "", *sanity.markdown(result.flags()), ""]
    lines += [
        "## Aggregate over envs (held-out instances)",
        "",
        "Interquartile mean of the runs' normalized scores over the envs that have the role, with a stratified "
        "bootstrap 95% interval (rliable). A run is an evaluation seed, and for PPO a training seed; PPO uses as "
        "many runs per env as the env with the fewest has (`role_scores`).",
        "",
        "| role | IQM | 95% CI | envs | runs per env |",
        "|---|---:|---|---:|---:|",
        *(
            f"| {ROLE_TITLES[role]} | {fmt(a['iqm'])} | {interval(a['ci_low'], a['ci_high'])} | {len(a['envs'])} "
            f"| {a['runs']} |"
            for role, a in aggregate.items()
        ),
        "",
    ]
    return "\n".join(lines)


def runs_markdown(
    tracks: dict[str, dict[str, EnvResult]], skipped: list[str], times: tuple[float, float], figures: list[str]
) -> str:
    seconds, cpu_seconds = times  # wall, and this process's CPU (workers' excluded)
    lines = [*figures, "", "## Runs", ""]
    lines += [
        "| env | track | wall (s) | PPO seed | steps | training (s) | env steps/s | per CPU-second | model |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for track, results in tracks.items():
        for env_id, result in results.items():
            facts = result.comparison.rl_runs.get(result.comparison.setting.rl_algo, {"runs": [None]})
            for run in facts["runs"]:
                lines.append(f"| {env_id} | {track} | {result.seconds:.1f} | " + _run_cells(run))
    lines += ["", f"Total wall time: {seconds:.1f} s ({cpu_seconds:.1f} s of CPU time in this process)."]
    if skipped:
        lines += ["", f"Skipped (no entry in `baselines/eval/protocol.yml`): {', '.join(skipped)}."]
    lines.append("")
    return "\n".join(lines)


def _run_cells(run: dict[str, Any] | None) -> str:
    """The PPO cells of the Runs table for one run (dashes without one)."""
    if run is None:
        return "— | — | — | — | — | — |"
    trained = run["source"] if run["reused"] else f"{run['train_seconds']:.1f}"
    return (
        f"{run['training_seed']} | {run['total_timesteps']} | {trained} | {run['steps_per_second']:.0f} "
        f"| {run['steps_per_cpu_second']:.0f} | `{run['path']}` |"
    )


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_headline(results: dict[str, EnvResult], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 2.2 * len(results) + 1), 3.6))
    width = 0.8 / len(ROLES)
    for k, role in enumerate(ROLES):
        for i, result in enumerate(results.values()):
            cell = result.headline().get(role)
            if cell is None:
                continue
            error = np.nan_to_num([[cell["mean"] - cell["ci_low"]], [cell["ci_high"] - cell["mean"]]])
            ax.bar(i + (k - 1.5) * width, cell["mean"], width, yerr=error, capsize=3, color=f"C{k}",
                   label=ROLE_TITLES[role] if i == 0 else None)  # fmt: skip
    ax.axhline(0, color="grey", lw=0.8)
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(results)), list(results), rotation=15, ha="right", fontsize=7)
    ax.set_ylabel("normalized score (naive 0, clairvoyant 1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)
    return path


def plot_profiles(results: dict[str, EnvResult], path: Path) -> Path:
    """rliable's performance profiles (score distributions) of the roles over the headline envs."""
    from rliable import plot_utils

    plt = _pyplot()
    matrices = {ROLE_TITLES[role]: matrix for role, (matrix, _) in role_scores(results).items()}
    profiles, bands = performance_profiles(matrices, TAUS)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    labels = {"xlabel": "normalized score τ", "ylabel": "fraction of runs with score > τ"}
    plot_utils.plot_performance_profiles(profiles, TAUS, performance_profile_cis=bands, ax=ax, **labels)
    ax.legend(ax.get_lines()[-len(profiles) :], list(profiles), fontsize=8)  # the lines, not their bands
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)
    return path
