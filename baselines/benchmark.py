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
headline score (each evaluation seed normalized by its own anchors; the ratio of means) of the paper's algorithm
with its label ("paper (as printed)", "paper (our reading: ...)", "ours, after the paper"), PPO (one run per
training seed of the entry's ``rl_seeds``; budget: env steps × training seeds; ``--quick`` evaluates the runs it
finds, shipped or cached, says how many, and trains only where none is found), the best online heuristic (the best
online reference agent other than the paper's algorithm, its ablations and the naive anchor; "—" when none is
left) and the clairvoyant anchor. Intervals: ``baselines.eval.stats`` (paired bootstrap over evaluation seeds,
two-level over training seeds × evaluation seeds for PPO), each column header saying which. Evaluation seeds whose
anchors coincide are dropped (``Comparison.degenerate_seeds``). The sanity flags of ``baselines.eval.sanity``
follow, each with its explanation from the settings entry. Across the envs of the headline track that every role
covers (the same set for every role; the others listed with the reason): the IQM of each role's runs with
stratified bootstrap intervals, probabilities of improvement and performance profiles (rliable). Ids without an
entry are listed as skipped. ``--publish DIR`` also writes the generated results page (``baselines.eval.publish``).
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
from baselines.eval.protocol import EVALUATION_SEEDS, env_setting
from baselines.eval.publish import ROLE_TITLES, load_before, write_page
from baselines.eval.report import (
    degenerate_sentence,
    fmt,
    interval,
    read_comparison,
    rewrite_markdown,
    score_text,
    write_report,
)
from baselines.eval.stats import (
    CONFIDENCE,
    aggregate_iqm,
    interval_over,
    performance_profiles,
    probability_of_improvement,
)
from cluster_envs import env_ids as registered

ROLES = ("paper", "ppo", "best heuristic", "oracle")
TAUS = np.linspace(-0.5, 1.5, 81)  # performance-profile thresholds on the normalized score


@dataclass
class EnvResult:
    comparison: Comparison
    report: Path
    seconds: float

    def cell(self, agent: str) -> dict[str, Any]:
        """``agent``'s normalized score: ratio of means over the scored seeds, paired (two-level for RL) interval."""
        return self.comparison.normalized(agent)

    def best_heuristic(self) -> str | None:
        scored = {a: self.cell(a)["mean"] for a in self.comparison.heuristics()}
        scored = {a: mean for a, mean in scored.items() if mean is not None}
        return max(scored, key=scored.__getitem__) if scored else None

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
            cells["oracle"] = {"agent": setting.oracle_value_name, "mean": 1.0, "iqm": 1.0, "ci_low": None,
                               "ci_high": None, "no_interval": "exact closed-form value"}  # fmt: skip
        return cells

    def aggregate_gap(self) -> str | None:
        """Why this env cannot enter the aggregate over envs (which every role must cover), or None."""
        setting, cells = self.comparison.setting, self.headline()
        if setting.paper_is_ours:
            return f"its paper's-algorithm row `{setting.paper_agent}` is ours, after the paper"
        for role in ROLES:
            if role not in cells:
                if role == "ppo" and setting.instance_kwarg is not None and self.comparison.held_out:
                    return "no PPO row on held-out instances (its spaces are its training instance's)"
                return f"no {ROLE_TITLES[role]} row"
            if cells[role]["mean"] is None:
                return f"no normalized score ({cells[role]['no_interval']})"
        return None

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
            "paper_label": setting.paper_label,
            "scores": self.headline(),
            "rl_budget": self.rl_budget(),
            "seconds": self.seconds,
            "evaluation_seeds": comparison.seeds,
            "scored_seeds": comparison.scored_seeds(),
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
    publish: str | Path | None = None,
    before: str | Path | None = None,
    command: str | None = None,
) -> Path:
    """Run the benchmark and return the path of ``report.md`` (its headline is also ``headline.md``). PPO runs are the
    package's shipped ones, unless ``retrain`` (always trains; ``threads``: torch's) or ``models_dir``'s serve
    first; else trained into ``models_dir`` (the rule of ``baselines.rl.store``). ``out_dir`` may not hold another
    command's outputs unless ``force``; it is held for the run (``baselines.eval.outputs.exclusive``: checked,
    locked and marked incomplete before anything runs, complete last). ``publish``: a docs folder to write the
    generated results page into (``baselines.eval.publish``), with a before/after table against the run ``before``
    (a ``headline.json``); ``command``: the command line it names."""
    previous = load_before(before) if before is not None else None  # bad input fails before any episode
    with exclusive(out_dir or "results/benchmark", "benchmark", force=force) as out:  # held for the run
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
                    seeds=EVALUATION_SEEDS["quick" if quick else "full"],
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
        run = {"quick": quick, **times, "skipped": skipped, "command": command or default_command(quick, out)}
        return write_headline(out, tracks, run, publish=publish, before=previous)


def render(
    out_dir: str | Path, *, publish: str | Path | None = None, before: str | Path | None = None,
    command: str | None = None,
) -> Path:  # fmt: skip
    """Rewrite the headline and every report of a finished run in ``out_dir`` from its saved per-seed results,
    under today's settings entries (e.g. a sanity flag explained after the run); no episode is run again.
    ``publish``, ``before``: as ``benchmark``'s; the page names the run's command (``command`` adds the render's)."""
    previous = load_before(before) if before is not None else None
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
    run["command"] = stored.get("command", default_command(run["quick"], out))
    if command:
        run["command"] += f"\n{command}"
    return write_headline(out, tracks, run, publish=publish, before=previous)


def default_command(quick: bool, out: Path) -> str:
    return f"cluster-envs benchmark{' --quick' if quick else ''} --out {out}"


def write_headline(
    out: Path,
    tracks: dict[str, dict[str, EnvResult]],
    run: dict[str, Any],
    *,
    publish: str | Path | None = None,
    before: dict[str, Any] | None = None,
) -> Path:
    """Write ``headline.json``, ``headline.md``, the figures and ``report.md`` (and the published page, with
    ``publish``); return the latter's path."""
    out.mkdir(parents=True, exist_ok=True)
    headline = tracks["held-out instances"]
    aggregate = aggregate_roles(headline)
    figures = {"headline": plot_headline(headline, out / "headline.png")}
    if aggregate["envs"]:
        figures["profiles"] = plot_profiles(headline, aggregate["envs"], out / "profiles.png")
    stored_tracks = {track: {e: r.to_json() for e, r in results.items()} for track, results in tracks.items()}
    stored = {**run, "tracks": stored_tracks, "aggregate": aggregate}
    write_text(out / "headline.json", json.dumps(stored, indent=2, default=repr))
    head = headline_markdown(tracks, aggregate, run["quick"], out)
    write_text(out / "headline.md", head)
    images = [f"![{name}]({path.relative_to(out)})" for name, path in figures.items()]
    path = out / "report.md"
    runs = runs_markdown(tracks, run["skipped"], (run["seconds"], run["cpu_seconds"]), images)
    write_text(path, head + "\n" + runs)
    if publish is not None:
        body = headline_markdown(tracks, aggregate, run["quick"], None, title=False)
        write_page(Path(publish), body, run, figures, before, stored_tracks)
    return path


def aggregate_envs(results: dict[str, EnvResult]) -> tuple[list[str], dict[str, str]]:
    """The envs the aggregate runs over, those every role covers with a score (``EnvResult.aggregate_gap``), and
    the others, each with why it is left out."""
    gaps = {env_id: result.aggregate_gap() for env_id, result in results.items()}
    return [e for e, gap in gaps.items() if gap is None], {e: gap for e, gap in gaps.items() if gap is not None}


IMPROVEMENT_PAIRS = (("ppo", "paper"), ("best heuristic", "paper"), ("ppo", "best heuristic"))


def aggregate_roles(results: dict[str, EnvResult]) -> dict[str, Any]:
    """Over the envs every role covers (``aggregate_envs``; the same set for every role), per role the IQM of its
    runs' normalized scores with rliable's stratified bootstrap interval, and the probability of improvement of
    PPO and the best heuristic over the paper's algorithm and of PPO over the best heuristic (rliable)."""
    envs, left_out = aggregate_envs(results)
    aggregate: dict[str, Any] = {"envs": envs, "left_out": left_out, "roles": {}, "improvement": []}
    if not envs:
        return aggregate
    scores = role_scores(results, envs)
    for role, (point, low, high) in aggregate_iqm(scores).items():
        agents = {e: results[e].headline()[role]["agent"] for e in envs}
        aggregate["roles"][role] = {"iqm": point, "ci_low": low, "ci_high": high, "envs": envs, "agents": agents,
                                    "runs": int(scores[role].shape[0])}  # fmt: skip
    for (x, y), (point, low, high) in probability_of_improvement(scores, list(IMPROVEMENT_PAIRS)).items():
        aggregate["improvement"].append({"x": x, "y": y, "p": point, "ci_low": low, "ci_high": high})
    return aggregate


def role_scores(results: dict[str, EnvResult], envs: list[str]) -> dict[str, np.ndarray]:
    """Per role: the (runs, envs) matrix of its runs' normalized scores over ``envs``, paired per seed
    (``Comparison.normalized_scores``: an evaluation seed of a reference agent against its own anchors, a training
    seed of PPO; the closed-form 1-anchors score 1 on every seed). rliable needs as many runs in every env: where a
    role's counts differ (PPO's with fewer runs shipped for some ids, a reference agent's where a degenerate seed
    was dropped), each env contributes its first runs, as many as the env with the fewest has."""
    matrices = {}
    for role in ROLES:
        column = []
        for env_id in envs:
            result = results[env_id]
            if role == "oracle" and result.comparison.setting.oracle_value is not None:
                column.append(np.ones(len(result.comparison.scored_seeds())))
            else:
                column.append(result.comparison.normalized_scores(result.roles()[role]))
        runs = min(len(c) for c in column)
        matrices[role] = np.column_stack([c[:runs] for c in column])
    return matrices


def cell_text(cell: dict[str, Any] | None, header: str) -> str:
    """A table cell: the agent, its score and interval, what the interval runs over where it differs from the
    column's ``header``; "—" with the reason where there is no score or interval."""
    if cell is None:
        return "—"
    text = f"`{cell['agent']}` {score_text(cell)}"
    if cell.get("interval") and cell["interval"] != header:
        text += f" ({cell['interval'].removeprefix(f'{CONFIDENCE:.0%} ')})"
    return text


def column_headers(results: dict[str, EnvResult]) -> dict[str, str]:
    """Per role, what the track's intervals in that column run over (``stats.interval_over``)."""
    n_eval = max(len(r.comparison.seeds) for r in results.values())
    reference = interval_over(n_eval)
    runs = {len(r.comparison.training_seeds(r.comparison.setting.rl_algo)) for r in results.values()
            if r.comparison.setting.rl_algo in r.comparison.rl_runs}  # fmt: skip
    if len(runs) == 1:
        ppo = interval_over(n_eval, runs.pop())
    else:
        ppo = (
            f"{CONFIDENCE:.0%} two-level bootstrap over each row's training seeds (budget column) × {n_eval} "
            "evaluation seeds"
        )
    return {"paper": reference, "ppo": ppo, "best heuristic": reference, "oracle": reference}


def track_table(results: dict[str, EnvResult], out: Path | None) -> list[str]:
    """The track's table; env names link to their reports under ``out`` (plain names without ``out``)."""
    headers = column_headers(results)
    lines = [
        f"| env | env kwargs | headline metric | 0-anchor | paper's algorithm [{headers['paper']}] | its label "
        f"| PPO [{headers['ppo']}] | PPO budget | best heuristic [{headers['best heuristic']}] "
        f"| 1-anchor [{headers['oracle']}] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id, result in results.items():
        cells, comparison = result.headline(), result.comparison
        kwargs = f"`{comparison.env_kwargs}`" if comparison.env_kwargs else "defaults"
        ppo = cell_text(cells.get("ppo"), headers["ppo"])
        if "ppo" not in cells and comparison.setting.instance_kwarg is not None:
            ppo = "not run: its spaces are its training instance's (see the fixed-instance track)"
        row = [
            f"[{env_id}]({result.report.relative_to(out)})" if out is not None else env_id,
            kwargs,
            f"`{comparison.setting.headline}`",
            f"`{comparison.setting.naive_agent}`",
            cell_text(cells.get("paper"), headers["paper"]),
            comparison.setting.paper_label,
            ppo,
            result.rl_budget(),
            cell_text(cells.get("best heuristic"), headers["best heuristic"]),
            cell_text(cells.get("oracle"), headers["oracle"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def headline_markdown(
    tracks: dict[str, dict[str, EnvResult]], aggregate: dict[str, Any], quick: bool, out: Path | None,
    title: bool = True,
) -> str:  # fmt: skip
    """The headline: both tracks' tables, the sanity flags with their explanations, the aggregate (env names link
    to the per-env reports under ``out``; plain without)."""
    headline, fixed = tracks["held-out instances"], tracks["fixed instance"]
    seeds = len(EVALUATION_SEEDS["quick" if quick else "full"])
    lines = [f"# cluster-envs benchmark{' (quick)' if quick else ''}", ""] if title else []
    lines += [
        "Protocol: `docs/benchmark.md`. Score: the env's headline metric, each evaluation seed normalized by that "
        "seed's anchors so that the 0-anchor (a naive policy) scores 0 and the 1-anchor (a clairvoyant policy that "
        "knows the hidden parameters, or the closed-form offline optimum) scores 1; higher is better. A cell is the "
        "ratio of means, (mean agent − mean naive) / (mean 1-anchor − mean naive) over the evaluation seeds. Every "
        f"agent plays the same {seeds} evaluation seeds. Brackets: the interval each column header names "
        "(`baselines/eval/stats.py`: agent and anchors resampled together over the evaluation seeds; for PPO its "
        "training seeds resampled too, a two-level bootstrap). Evaluation seeds whose anchors coincide are dropped "
        "(the protocol's degenerate-instance rule; the sanity notes name them).",
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
            dropped = [degenerate_sentence(result.comparison)] if result.comparison.degenerate_seeds() else []
            lines += [f"**{env_id}** ({track}):", "", *dropped, *sanity.markdown(result.flags()), ""]
    lines += ["## Aggregate over envs (held-out instances)", "", *aggregate_markdown(aggregate), ""]
    return "\n".join(lines)


def aggregate_markdown(aggregate: dict[str, Any]) -> list[str]:
    envs, left_out = aggregate["envs"], aggregate["left_out"]
    left = "; ".join(f"{e}: {why}" for e, why in left_out.items())
    if not envs:
        return [f"No env has every role, so there is no aggregate (left out: {left})."]
    lines = [
        f"Over the same {len(envs)} env{'s' if len(envs) != 1 else ''} for every role, those every role covers: "
        f"{', '.join(envs)}." + (f" Left out: {left}." if left else ""),
        "A run is an evaluation seed scored against its own anchors (PPO: a training seed, scored by the ratio of "
        "its means over the evaluation seeds); where a role's run counts differ across envs each env contributes "
        "as many as the env with the fewest has (`role_scores`).",
        "",
        f"| role | envs that entered (agent) | IQM | {CONFIDENCE:.0%} stratified bootstrap over runs within each env "
        "(rliable) | runs per env |",
        "|---|---|---:|---|---:|",
    ]
    for role, a in aggregate["roles"].items():
        entered = ", ".join(f"{e} (`{agent}`)" for e, agent in a["agents"].items())
        lines.append(
            f"| {ROLE_TITLES[role]} | {entered} | {fmt(a['iqm'])} | {interval(a['ci_low'], a['ci_high'])} "
            f"| {a['runs']} |"
        )
    lines += [
        "",
        f"| probability of improvement (same envs) | P(X > Y) | {CONFIDENCE:.0%} stratified bootstrap over runs "
        "within each env (rliable) |",
        "|---|---:|---|",
        *(
            f"| {ROLE_TITLES[p['x']]} over {ROLE_TITLES[p['y']]} | {fmt(p['p'])} "
            f"| {interval(p['ci_low'], p['ci_high'])} |"
            for p in aggregate["improvement"]
        ),
    ]
    return lines


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
            if cell["mean"] is None:
                continue
            low, high = (cell["mean"] if x is None else x for x in (cell["ci_low"], cell["ci_high"]))
            error = [[cell["mean"] - low], [high - cell["mean"]]]
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


def plot_profiles(results: dict[str, EnvResult], envs: list[str], path: Path) -> Path:
    """rliable's performance profiles (score distributions) of the roles over ``envs`` (every role's)."""
    from rliable import plot_utils

    plt = _pyplot()
    matrices = {ROLE_TITLES[role]: matrix for role, matrix in role_scores(results, envs).items()}
    profiles, bands = performance_profiles(matrices, TAUS)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    labels = {"xlabel": "normalized score τ", "ylabel": "fraction of runs with score > τ"}
    plot_utils.plot_performance_profiles(profiles, TAUS, performance_profile_cis=bands, ax=ax, **labels)
    ax.legend(ax.get_lines()[-len(profiles) :], list(profiles), fontsize=8)  # the lines, not their bands
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)
    return path
