"""The leaderboard: built from the submission records in ``leaderboard/`` (``baselines.eval.record``).

:func:`reference_records` writes the first entries: every reference agent of every env and the shipped PPO runs, on
the quick protocol, through ``compare`` (the benchmark's code path). :func:`render` writes
``docs/leaderboard/index.md`` and its figures from the records: per env and track, every entry's normalized
headline score with its interval; the aggregate (IQM with rliable's stratified bootstrap, and performance
profiles) over every env of the protocol, for the entries that cover them all; learned entries grouped by
training budget (``record.BUDGET_TRACKS``); privileged entries never ranked with online ones.
"""

from __future__ import annotations

import datetime
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.eval.record import budget_track, build_record, package_facts, read_record, write_record

TAUS = np.linspace(-0.5, 1.5, 81)
HEADLINE = "held-out instances"


def reference_records(out_dir: str | Path = "leaderboard", env_ids: Sequence[str] | None = None,
                      progress: bool = False) -> list[Path]:  # fmt: skip
    """Run each env's reference agents and its shipped RL runs on the quick protocol and merge their results into
    one record per agent (an agent name shared by several envs is one entry covering them), written as soon as that
    env is done: ``env_ids`` (default every env of the protocol) can be run one at a time, each replacing only its
    own results in the records. Returns the paths written, in order."""
    import fcntl
    import os

    from baselines.eval.submission import protocol_envs

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for env_id in env_ids or protocol_envs():
        by_agent = _reference_comparisons(env_id, progress)
        folder = os.open(out, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)  # runs on other envs merge into the same records: one at a time
            for name, comparisons in by_agent.items():
                path = out / f"{name}.json"
                paths.append(write_record(_merged(path, name, env_id, comparisons), path))
        finally:
            os.close(folder)  # releases the lock
    return paths


def _reference_comparisons(env_id: str, progress: bool) -> dict[str, list[Any]]:
    """Agent name -> its comparisons on ``env_id`` (one per track): every reference agent and the RL row."""
    from baselines.eval.compare import compare
    from baselines.eval.protocol import EVALUATION_SEEDS, env_setting

    setting = env_setting(env_id)
    if setting is None:
        from baselines.eval.submission import protocol_envs

        raise ValueError(f"env_id={env_id!r} has no protocol entry; ids with one: {protocol_envs()}")
    fixed = setting.instance_kwarg is not None
    by_agent: dict[str, list[Any]] = {}
    for held_out in (True, False) if fixed else (True,):
        comparison = compare(env_id, "all", rl=[] if held_out and fixed else [setting.rl_algo],
                             seeds=EVALUATION_SEEDS["quick"], rl_steps=setting.rl_steps_quick, train_missing=False,
                             held_out=held_out, progress=progress)  # fmt: skip
        for agent in comparison.agents:
            rl = agent in comparison.rl_runs
            name = RL_ENTRY if rl else agent  # ppo and ppo_mask are one entry: the benchmark's RL row
            by_agent.setdefault(name, []).append(_renamed(comparison, agent, name) if rl else comparison)
    return by_agent


RL_ENTRY = "ppo"


def _merged(path: Path, name: str, env_id: str, comparisons: Sequence[Any]) -> dict[str, Any]:
    """The record of reference entry ``name`` with its results on ``env_id`` from ``comparisons``, beside the other
    envs' results of the record at ``path`` (kept when it was made with this package version and protocol; a result
    on another version of ``env_id`` is replaced)."""
    rl = name == RL_ENTRY and any(name in c.rl_runs for c in comparisons)
    new = build_record(_reference_entry(name, rl, [env_id]), _reference_entry(name, rl, [env_id])["declaration"],
                       comparisons, "quick")  # fmt: skip
    kept: list[dict[str, Any]] = []
    if path.is_file():
        old = read_record(path)
        if old["package"]["version"] == new["package"]["version"] and old["protocol"] == "quick":
            family = env_id.rpartition("-")[0]
            kept = [r for r in old["results"] if r["env_id"].rpartition("-")[0] != family]
    results = sorted(kept + new["results"], key=_result_order)
    entry = _reference_entry(name, rl, [r["env_id"] for r in results])
    if rl:
        runs = [run for r in results for run in r["rl_runs"]]
        entry["declaration"]["training_env_steps"] = max(run["total_timesteps"] for run in runs)
        entry["declaration"]["training_cpu_hours"] = sum(run.get("train_seconds") or 0.0 for run in runs) / 3600
    return {**new, "entry": {k: entry[k] for k in ("name", "kind", "source", "algo")},
            "declaration": entry["declaration"], "budget_track": budget_track(entry["declaration"]),
            "results": results}  # fmt: skip


def _result_order(result: Mapping[str, Any]) -> tuple[int, bool]:
    from baselines.eval.submission import protocol_envs

    envs = [env_id.rpartition("-")[0] for env_id in protocol_envs()]
    family = result["env_id"].rpartition("-")[0]
    return (envs.index(family) if family in envs else len(envs), result["track"] != HEADLINE)


def _reference_entry(name: str, rl: bool, env_ids: Sequence[str]) -> dict[str, Any]:
    """The entry and declaration of a reference agent (its modules on ``env_ids``) or of the RL row."""
    if rl:
        return {
            "name": name, "kind": "rl", "source": "the benchmark's RL row: the shipped runs (baselines/rl/models)",
            "algo": None,
            "declaration": {"privileged": False, "training_env_steps": 0, "training_cpu_hours": 0.0,
                            "training_gpu_hours": 0, "source": "stable-baselines3 PPO (MaskablePPO on ClusterGang-v0), "
                            "hyperparameters in baselines/rl/hyperparams/ppo.yml", "tuned_on_validation_seeds": True},
        }  # fmt: skip
    from agents.registry import agent_class

    classes = [agent_class(env_id, name) for env_id in env_ids]
    modules = ", ".join(dict.fromkeys(cls.__module__ for cls in classes))
    source = f"cluster-envs reference agent ({modules})"
    return {
        "name": name, "kind": "registered", "source": source, "algo": None,
        "declaration": {"privileged": any(bool(cls.privileged) for cls in classes), "training_env_steps": 0,
                        "training_cpu_hours": 0, "training_gpu_hours": 0, "source": source,
                        "tuned_on_validation_seeds": False},
    }  # fmt: skip


def _renamed(comparison: Any, old: str, new: str) -> Any:
    """The comparison with RL agent ``old`` (e.g. ``ppo_mask``) named ``new``."""
    import dataclasses

    if old == new:
        return comparison
    episodes = [dataclasses.replace(e, agent=new) if e.agent == old else e for e in comparison.episodes]
    rename = lambda d: {new if k == old else k: v for k, v in d.items()}  # noqa: E731
    agents = [new if a == old else a for a in comparison.agents]
    return dataclasses.replace(comparison, episodes=episodes, agents=agents, rl_runs=rename(comparison.rl_runs),
                               agent_env_kwargs=rename(comparison.agent_env_kwargs))  # fmt: skip


def read_entries(folder: str | Path) -> list[dict[str, Any]]:
    paths = sorted(Path(folder).glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no records (*.json) in {str(folder)!r}")
    records = []
    for path in paths:
        record = read_record(path)
        record["path"] = path
        records.append(record)
    return records


NOTES = "notes.yml"  # in the entries' folder: env id -> sanity flag -> why (for flags the protocol does not explain)


def read_notes(path: Path) -> dict[str, dict[str, str]]:
    """The leaderboard's explanations of its entries' sanity flags (``env id: {flag: text}``), {} without a file."""
    if not path.is_file():
        return {}
    import yaml

    from baselines.eval.submission import protocol_envs

    notes = yaml.safe_load(path.read_text()) or {}
    envs = protocol_envs()
    for env_id, texts in notes.items():
        if env_id not in envs:
            raise ValueError(f"{path}: {env_id!r} is no env of the protocol; allowed: {envs}")
        if not isinstance(texts, dict) or not all(isinstance(t, str) and t.strip() for t in texts.values()):
            raise ValueError(f"{path}: {env_id} must map each sanity flag (e.g. below_naive:NAME) to a text")
    return notes


def _protocol_notes(env_id: str) -> str:
    from baselines.eval.protocol import env_setting

    setting = env_setting(env_id)
    return " ".join((setting.notes or "").split()) if setting is not None else ""


def surprises(env_id: str, results: Sequence[Mapping[str, Any]], notes: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The page's lines on a track's sanity flags (``baselines.eval.sanity``): each with the protocol's explanation
    (``protocol.yml``) or the leaderboard's (``notes.yml``), or a loud "not explained"."""
    from baselines.eval.protocol import env_setting

    keys = list(dict.fromkeys(flag for result in results for flag in result["flags"]))
    if not keys:
        return []
    setting = env_setting(env_id)
    known = {**(setting.explanations if setting is not None else {}), **notes.get(env_id, {})}
    by_text: dict[str, list[str]] = {}
    for key in keys:
        by_text.setdefault(" ".join(known.get(key, "**Not explained yet.**").split()), []).append(key)
    lines = ["Sanity flags (surprises a reader must have explained, `docs/benchmark.md`):", ""]
    lines += [f"- {', '.join(f'`{k}`' for k in flagged)}: {text}" for text, flagged in by_text.items()]
    return [*lines, ""]


def columns(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(env id, track) of every result, in the protocol's env order, the headline track first."""
    from baselines.eval.submission import protocol_envs

    order = {env_id: k for k, env_id in enumerate(protocol_envs())}
    found = {(r["env_id"], r["track"]) for record in records for r in record["results"]}
    return sorted(found, key=lambda c: (order.get(c[0], len(order)), c[1] != HEADLINE))


def cell(record: Mapping[str, Any], column: tuple[str, str]) -> Mapping[str, Any] | None:
    return next((r for r in record["results"] if (r["env_id"], r["track"]) == column), None)


def group(record: Mapping[str, Any]) -> str:
    if record["declaration"]["privileged"]:
        return "privileged (not ranked)"
    return record["budget_track"]


def env_score(record: Mapping[str, Any], env_id: str) -> Mapping[str, Any] | None:
    """An entry's result on an env for the aggregate: the headline track's, else the fixed-instance track's."""
    return cell(record, (env_id, HEADLINE)) or next((r for r in record["results"] if r["env_id"] == env_id), None)


def aggregate(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The envs of the aggregate (every env of the protocol) and, per online quick-protocol entry that covers them
    all, its (runs, envs) matrix of normalized scores (each env contributes as many runs as the entry's env with the
    fewest has: rliable's shape)."""
    from baselines.eval.submission import protocol_envs

    envs = protocol_envs()
    matrices = {}
    for record in records:
        if record["declaration"]["privileged"] or record["protocol"] != "quick":
            continue
        results = [env_score(record, env_id) for env_id in envs]
        if any(result is None for result in results):
            continue
        scores = [np.asarray(result["normalized"]["scores"], dtype=float) for result in results]
        runs = min(len(s) for s in scores)
        matrices[record["entry"]["name"]] = np.column_stack([s[:runs] for s in scores])
    return envs, matrices


def render(entries: str | Path = "leaderboard", out_dir: str | Path = "docs/leaderboard") -> Path:
    """Write ``index.md`` (with the command, commit and date) and its figures from the records in ``entries``."""
    from baselines.eval.report import fmt, interval
    from baselines.eval.stats import aggregate_iqm

    records = read_entries(entries)
    notes = read_notes(Path(entries) / NOTES)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cols = columns(records)
    envs, matrices = aggregate(records)
    facts = package_facts()
    command = "cluster-envs leaderboard"
    if "leaderboard" in sys.argv[1:2]:  # run from the command line: its options too
        command += "".join(f" {shlex.quote(a)}" for a in sys.argv[2:])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        "# Leaderboard",
        "",
        f"Generated by `{command}` from the records in `{Path(entries).as_posix()}/` on {date}, cluster-envs "
        f"{facts['version']} at commit `{(facts['commit'] or 'unknown')[:12]}`. Do not edit: "
        "[submit an entry](submit.md) and regenerate.",
        "",
        "Score: the env's headline metric normalized between the naive anchor (0) and the clairvoyant anchor (1), "
        "higher is better, on the quick protocol's evaluation seeds (the benchmark's, `docs/benchmark.md`). "
        "Brackets: 95% bootstrap intervals over the evaluation seeds, or for an RL entry over its training runs "
        "(each scored by its mean over the evaluation seeds). Learned entries are grouped by training budget "
        "(env steps per env and run, as declared); privileged entries (offline oracles reading hidden state) are "
        "listed, never "
        "ranked with online ones. Every record is re-validated by replay in CI (a sample of episodes on every run).",
        "",
    ]
    if matrices:
        estimates = aggregate_iqm(matrices)
        profile = plot_profiles(matrices, out / "profiles.png")
        lines += [
            "## Aggregate",
            "",
            f"The online entries that cover every env of the protocol ({', '.join(f'`{e}`' for e in envs)}; the "
            "headline track where the entry has it, else the fixed-instance track): the interquartile mean of the "
            "normalized scores with rliable's stratified bootstrap 95% interval, and their performance profiles. "
            "Entries covering fewer envs (the papers' agents, each made for its setting) appear in the envs' tables.",
            "",
            "| rank | entry | group | IQM | 95% CI | runs per env |",
            "|---:|---|---|---:|---|---:|",
        ]
        ranked = sorted(matrices, key=lambda n: -estimates[n][0])
        by_name = {r["entry"]["name"]: r for r in records}
        for rank, name in enumerate(ranked, 1):
            low, high = estimates[name][1], estimates[name][2]
            lines.append(f"| {rank} | `{name}` | {group(by_name[name])} | {fmt(estimates[name][0])} "
                         f"| {interval(low, high)} | {matrices[name].shape[0]} |")  # fmt: skip
        lines += ["", f"![performance profiles]({profile.name})", ""]
    figure = plot_envs(records, cols, out / "envs.png")
    lines += ["## Per env", "", f"![normalized score per env and entry]({figure.name})", ""]
    for column in cols:
        env_id, track = column
        lines += [f"### {env_id} ({track})", ""]
        rows = [(record, cell(record, column)) for record in records]
        present = [(rec, res) for rec, res in rows if res is not None]
        if present:
            res = present[0][1]
            lines += [f"Headline `{res['headline']}`; 0-anchor `{res['anchors']['naive']}`, 1-anchor "
                      f"{res['anchors']['clairvoyant']}.", ""]  # fmt: skip
        if column == next(c for c in cols if c[0] == env_id) and _protocol_notes(env_id):
            lines += [f"The protocol's note (`baselines/eval/protocol.yml`): {_protocol_notes(env_id)}", ""]
        lines += ["| group | entry | score | 95% CI | interval | flags | source |", "|---|---|---:|---|---|---|---|"]
        for rec, res in sorted(present, key=lambda x: (_group_order(group(x[0])), -x[1]["normalized"]["mean"])):
            norm = res["normalized"]
            flags = ", ".join(f"`{f}`" for f in res["flags"]) or "—"
            lines.append(f"| {group(rec)} | `{rec['entry']['name']}` | {fmt(norm['mean'])} "
                         f"| {interval(norm['ci_low'], norm['ci_high'])} | {norm['over']} "
                         f"| {flags} | {rec['declaration']['source']} |")  # fmt: skip
        missing = [r["entry"]["name"] for r in records if r["entry"]["name"] in matrices and cell(r, column) is None]
        if missing:
            lines.append(f"| — | {', '.join(f'`{m}`' for m in missing)} | not evaluated on this track | | | | |")
        lines.append("")
        lines += surprises(env_id, [res for _, res in present], notes)
    lines += [
        "## Entries",
        "",
        "| entry | kind | group | training env steps | CPU h | GPU h | tuned on validation seeds | record |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for rec in records:
        d = rec["declaration"]
        tuned = "yes" if d["tuned_on_validation_seeds"] else "no"
        lines.append(f"| `{rec['entry']['name']}` | {rec['entry']['kind']} | {group(rec)} "
                     f"| {d['training_env_steps']:,} "
                     f"| {d['training_cpu_hours']:.3g} | {d['training_gpu_hours']:.3g} | {tuned} "
                     f"| `{Path(rec['path']).name}` |")  # fmt: skip
    lines.append("")
    path = out / "index.md"
    path.write_text("\n".join(lines))
    return path


GROUP_ORDER = ("no training", "≤ 10⁶ env steps", "≤ 10⁷ env steps", "unlimited", "privileged (not ranked)")
GROUP_COLORS = dict(zip(GROUP_ORDER, ("C0", "C1", "C2", "C3", "0.6"), strict=True))


def _group_order(name: str) -> int:
    return GROUP_ORDER.index(name) if name in GROUP_ORDER else len(GROUP_ORDER)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_envs(records: Sequence[Mapping[str, Any]], cols: Sequence[tuple[str, str]], path: Path) -> Path:
    """One panel per env and track, each on its own scale: a horizontal bar per entry with its interval, the entry
    named on the axis; an entry of the aggregate without a result on the panel is marked "not evaluated"."""
    plt = _pyplot()
    per_row = min(3, len(cols))
    rows = -(-len(cols) // per_row)
    names = [r["entry"]["name"] for r in records]
    wide = set(aggregate(records)[1])
    height = max(2.5, 0.22 * max(sum(cell(r, c) is not None or r["entry"]["name"] in wide for r in records)
                                 for c in cols) + 1.0)  # fmt: skip
    fig, axes = plt.subplots(rows, per_row, figsize=(5.2 * per_row, height * rows + 0.5), squeeze=False)
    used: set[str] = set()
    for ax, column in zip(axes.flat, cols, strict=False):
        shown = []
        for record, name in zip(records, names, strict=True):
            res = cell(record, column)
            if res is not None:
                shown.append((name, res["normalized"], group(record)))
            elif name in wide:
                shown.append((name, None, None))
        shown.sort(key=lambda x: -np.inf if x[1] is None else x[1]["mean"])
        for y, (_, norm, kind) in enumerate(shown):
            if norm is None:
                ax.text(0.5, y, "not evaluated", va="center", ha="center", fontsize=7, color="grey", style="italic",
                        transform=ax.get_yaxis_transform())  # fmt: skip
                continue
            mean = norm["mean"]
            low, high = norm["ci_low"], norm["ci_high"]
            err = None if not np.isfinite(low) else [[mean - low], [high - mean]]
            ax.barh(y, mean, xerr=err, color=GROUP_COLORS[kind], capsize=2, height=0.7)
            ax.plot([mean], [y], marker="|", color="black", markersize=9)  # a score of 0 shows too
            used.add(kind)
        ax.set_yticks(range(len(shown)), [name for name, _, _ in shown], fontsize=7)
        ax.set_ylim(-0.6, len(shown) - 0.4)  # every row, "not evaluated" ones too, on the panel
        ax.axvline(0, color="grey", lw=0.8)
        ax.axvline(1, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{column[0]}\n({column[1]})", fontsize=9)
        ax.set_xlabel("normalized score", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(cols) :]:
        ax.axis("off")
    from matplotlib.patches import Patch

    handles = [Patch(color=GROUP_COLORS[g], label=g) for g in GROUP_ORDER if g in used]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.5 / (height * rows + 0.5), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_profiles(matrices: Mapping[str, np.ndarray], path: Path) -> Path:
    """rliable's performance profiles of the aggregate's entries, the legend beside the axes."""
    from rliable import plot_utils

    from baselines.eval.stats import performance_profiles

    plt = _pyplot()
    profiles, bands = performance_profiles(dict(matrices), TAUS)
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    labels = {"xlabel": "normalized score τ", "ylabel": "fraction of runs with score > τ"}
    colors = {name: f"C{k % 10}" for k, name in enumerate(profiles)}
    plot_utils.plot_performance_profiles(profiles, TAUS, performance_profile_cis=bands, colors=colors, ax=ax, **labels)
    ax.legend(ax.get_lines()[-len(profiles) :], list(profiles), fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
