"""Reproduction of paper 004 (Kim & Vojnović), spec §5.3 E1–E5, on ``ClusterBilinear-v0``.

E1 Fig. 3 (SABR vs UGDA-OL), E2 Fig. 4 (SABR vs W-SABR, per-class queues), E3 App. C (Alg. 2 vs Alg. 1),
E4 the T-scaling and V sweep of the regret and queue bounds, E5 Sec. IV distributed convergence against
condition (13). Repetition r uses ``instance_seed = 1000 + r`` and ``seed = r`` for every agent (common
random numbers, a new instance per repetition, spec §7-F). Tables and figures give the mean with a 95% bootstrap
interval over the repetitions (``baselines.eval.stats``).

Run: ``python -m baselines.reproduce.bilinear [small|paper]`` or ``cluster-envs reproduce bilinear``.
"""

from __future__ import annotations

import pathlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.bilinear.distributed import iterate, solve_penalized, stability_bound
from baselines.eval import harness
from baselines.eval.progress import progress_bar
from baselines.eval.stats import curve_band, mean_interval
from cluster_envs.bilinear.model import oracle_lp

ENV_ID = "ClusterBilinear-v0"
BAND_POINTS = 400  # slots per band: the interval is bootstrapped at these points of the curve
SCALES = {
    "small": {"reps": 5, "horizons": (500, 2000), "scaling": (250, 500, 1000, 2000), "iterations": 3000},
    "paper": {
        "reps": 10,
        "horizons": (500, 2000),
        "scaling": (250, 500, 1000, 2000, 4000),
        "iterations": 5000,
    },
}


@dataclass
class Episode:
    """One run: the env's episode summary, per-slot traces and the agent's own counters."""

    summary: dict[str, float]
    regret: np.ndarray  # cumulative expected regret after each slot
    regret_realized: np.ndarray
    reward: np.ndarray  # cumulative noisy reward
    queue: np.ndarray  # Q(t) per class, (T, I)
    holding: np.ndarray  # Σ c_i Q_i(t)
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def run_episode(
    agent_name: str,
    rep: int,
    horizon: int = 500,
    preset: str = "default",
    env_kwargs: dict[str, Any] | None = None,
    agent_kwargs: dict[str, Any] | None = None,
) -> Episode:
    """Roll out one agent on repetition ``rep`` through the harness (no agent sees ``info``)."""
    kwargs = {"preset": preset, "horizon": horizon, "instance_seed": 1000 + rep, **(env_kwargs or {})}
    env, agent, observation = harness.start(ENV_ID, agent_name, rep, env_kwargs=kwargs, agent_kwargs=agent_kwargs)
    rows, queues = [], []

    def record(step: harness.Step) -> None:
        info = step.info
        rows.append((info["regret_inc"], info["regret_inc_realized"], info["reward_noisy"], info["holding_cost"]))
        queues.append(info["Q"])

    with env:
        end = harness.play(env, agent, observation, on_step=record)
        # privileged, for evaluation: the fluid LP at the time-averaged server counts n̄ (App. D.2's schedules)
        base = env.unwrapped
        r_star_mean = oracle_lp(base.true_mean_rewards, base.rho, base.simulator.schedule.mean(axis=0))[0]
    arr = np.cumsum(np.array(rows), axis=0)
    extra = {"recomputations": getattr(agent, "recomputations", np.nan), "r_star_mean_caps": r_star_mean}
    return Episode(
        end.info["episode_summary"],
        arr[:, 0],
        arr[:, 1],
        arr[:, 2],
        np.array(queues),
        np.diff(arr[:, 3], prepend=0.0),
        end.seconds,
        extra,
    )


def runs(agent_name: str, reps: int, bar: Any = None, **kwargs: Any) -> list[Episode]:
    """Repetitions 0 .. reps - 1 of one agent, each ticking ``bar`` (a progress bar) if given."""
    episodes = []
    for rep in range(reps):
        episodes.append(run_episode(agent_name, rep, **kwargs))
        if bar is not None:
            bar.update()
    return episodes


def fmt(values: Any, digits: int = 1) -> str:
    """The mean over repetitions with the package's interval (``baselines.eval.stats.mean_interval``: 95% bootstrap
    over the repetitions); none on one repetition."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return f"{x.mean():.{digits}f} (one repetition)"
    low, high = mean_interval(x)
    return f"{x.mean():.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _band(ax, episodes: list[Episode], attr: str, label: str, fn=None) -> None:
    data = np.array([getattr(e, attr) if fn is None else fn(e) for e in episodes], dtype=np.float64)
    t = np.arange(1, data.shape[1] + 1)
    ax.plot(t, data.mean(axis=0), label=label)
    if len(data) >= 2:  # the package's interval over the repetitions, per slot
        idx = np.unique(np.linspace(0, data.shape[1] - 1, min(data.shape[1], BAND_POINTS)).astype(int))
        low, high = curve_band(data[None, :, idx])
        ax.fill_between(t[idx], low, high, alpha=0.25)


def loglog_slope(horizons: Any, values: Any) -> float:
    """The least-squares slope of log R against log T; NaN when a value is ≤ 0 (no power law to fit)."""
    values = np.asarray(values, dtype=np.float64)
    if (values <= 0).any():
        return float("nan")
    return float(np.polyfit(np.log(horizons), np.log(values), 1)[0])


def slope_cell(horizons: Any, values: Any) -> str:
    slope = loglog_slope(horizons, values)
    return "n/a (R ≤ 0)" if np.isnan(slope) else f"{slope:.2f}"


# -- experiments --------------------------------------------------------------------------------------


def e1_fig3(reps: int, horizons: tuple[int, ...], out: pathlib.Path, plt, progress: bool) -> str:
    """All agents at each horizon (table) and the Fig. 3 curves (SABR β as printed and ×0.3 vs UGDA-OL)."""
    agents = [
        ("sabr", {}, "SABR"),
        ("sabr", {"beta_scale": 0.3}, "SABR (beta_scale 0.3)"),
        ("w_sabr", {}, "W-SABR (w = c = 1)"),
        ("oful_rs", {}, "OFUL-RS (Alg. 2, C = 1)"),
        ("ugda_ol", {}, "UGDA-OL (reconstruction)"),
        ("oracle_sabr", {}, "Oracle-SABR (r̃ = r)"),
        ("greedy", {}, "Greedy-LinUCB"),
        ("uniform", {}, "Uniform-PF"),
    ]
    rows, curves = [], {}
    with progress_bar(total=len(horizons) * len(agents) * reps, desc="E1", unit="episode", enabled=progress) as bar:
        for horizon in horizons:
            for name, kw, label in agents:
                eps = runs(name, reps, bar, horizon=horizon, agent_kwargs=kw)
                curves[(label, horizon)] = eps
                col = {key: [e.summary[key] for e in eps] for key in eps[0].summary}
                counts = [f"{np.mean(col['duplicates']):.1f}", f"{np.max(col['max_hidden_jobs']):.0f}"]
                seconds = f"{np.mean([e.seconds for e in eps]):.2f}"
                stats = [fmt(col["mean_queue_total"], 2), fmt(col["utilization"], 3), *counts, seconds]
                rows.append([label, horizon, fmt(col["regret"]), fmt(col["regret_realized"]), *stats])
    horizon = horizons[-1]
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    for label in ("SABR", "SABR (beta_scale 0.3)", "UGDA-OL (reconstruction)", "Oracle-SABR (r̃ = r)"):
        eps = curves[(label, horizon)]
        _band(axes[0], eps, "regret", label)
        _band(axes[1], eps, "regret_realized", label)
        _band(axes[2], eps, "reward", label)
        _band(axes[3], eps, "queue", label, fn=lambda e: e.queue.sum(axis=1))
    for ax, title in zip(
        axes, ("regret R(t) (eq. 1)", "realised regret", "cumulative reward", "E[ΣQ(t)]"), strict=True
    ):
        ax.set_title(title)
        ax.set_xlabel("t")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig3_sabr_vs_ugda.png", dpi=110)
    plt.close(fig)
    header = [
        "agent",
        "T",
        "R(T) eq. 1",
        "realised R(T)",
        "mean ΣQ",
        "utilisation",
        "duplicates",
        "hidden jobs (max)",
        "s/episode",
    ]
    return table(header, rows) + "\n\n![Fig. 3](fig3_sabr_vs_ugda.png)\n"


def e2_fig4(reps: int, out: pathlib.Path, plt, progress: bool, horizon: int = 500) -> tuple[str, dict[str, float]]:
    """SABR vs W-SABR with c = 7/4 (classes 1–5) and 1/4 (6–10)."""
    names = ("sabr", "w_sabr")
    with progress_bar(total=len(names) * reps, desc="E2", unit="episode", enabled=progress) as bar:
        res = {name: runs(name, reps, bar, horizon=horizon, preset="paper_holding") for name in names}
    high, low = slice(0, 5), slice(5, 10)
    rows, ratios = [], {}
    for name, eps in res.items():
        late = [e.queue[horizon // 2 :] for e in eps]
        q_high = [q[:, high].mean() for q in late]
        q_low = [q[:, low].mean() for q in late]
        ratio = float(np.mean(q_high) / np.mean(q_low))
        ratios[name] = ratio
        windows = [(0, 50), (50, 100), (100, 250), (250, horizon)]
        head = [
            name,
            fmt([e.summary["regret"] for e in eps]),
            fmt([e.summary["mean_holding_cost"] for e in eps], 2),
        ]
        by_window = [fmt([e.holding[a:b].mean() for e in eps], 2) for a, b in windows]
        rows.append(head + by_window + [fmt(q_high, 2), fmt(q_low, 2), f"{ratio:.2f}"])
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    for name, eps in res.items():
        _band(axes[0], eps, "holding", name)
        _band(axes[1], eps, "regret", name)
    for ax, name in ((axes[2], "w_sabr"), (axes[3], "sabr")):
        mean_q = np.mean([e.queue for e in res[name]], axis=0)
        for i in range(mean_q.shape[1]):
            ax.plot(mean_q[:, i], color="tab:red" if i < 5 else "tab:blue", lw=0.8)
        ax.set_title(f"E[Q_i(t)], {name} (red: c = 7/4, blue: c = 1/4)")
    axes[0].set_title("H(t; c)")
    axes[1].set_title("regret R(t)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "fig4_sabr_vs_wsabr.png", dpi=110)
    plt.close(fig)
    header = ["agent", "R(T)", "mean H", "H t<50", "H 50–100", "H 100–250", "H ≥250",
              "E[Q_i] high-cost (t>T/2)", "E[Q_i] low-cost", "ratio"]  # fmt: skip
    return table(header, rows) + "\n\n![Fig. 4](fig4_sabr_vs_wsabr.png)\n", ratios


def e3_alg2(reps: int, progress: bool, horizon: int = 500) -> str:
    rows = []
    d2 = 4
    bound = 1 + d2 * np.log(1 + horizon / d2) / np.log(2.0)
    names = ("sabr", "oful_rs")
    with progress_bar(total=len(names) * reps, desc="E3", unit="episode", enabled=progress) as bar:
        for name in names:
            eps = runs(name, reps, bar, horizon=horizon)
            recomputations = [e.extra["recomputations"] for e in eps] if name == "oful_rs" else [horizon] * reps
            rows.append([name, fmt([e.summary["regret"] for e in eps]), fmt(recomputations),
                         f"{np.mean([e.seconds for e in eps]):.3f}"])  # fmt: skip
    return table(["agent", "R(T)", "index recomputations", "s/episode"], rows) + (
        f"\n\nRecomputation bound (d² = 4, T = {horizon}, C = 1): 1 + d² ln(1 + T/d²)/ln 2 = {bound:.1f}\n"
    )


def e4_scaling(reps: int, horizons: tuple[int, ...], out: pathlib.Path, plt, progress: bool) -> str:
    agents = [("oracle_sabr", {}), ("sabr", {}), ("sabr", {"beta_scale": 0.3}), ("ugda_ol", {})]
    v_values, v_agents = (35.0, 70.71, 114.0, 141.0), ("sabr", "oracle_sabr")
    rows, series, v_rows = [], {}, []
    total = (len(agents) * len(horizons) + len(v_values) * len(v_agents)) * reps
    with progress_bar(total=total, desc="E4", unit="episode", enabled=progress) as bar:
        for name, kw in agents:
            label = name + ("" if not kw else f" (beta_scale {kw['beta_scale']})")
            means = []
            cells = []
            for horizon in horizons:
                eps = runs(name, reps, bar, horizon=horizon, agent_kwargs=kw)
                means.append(np.mean([e.summary["regret"] for e in eps]))
                cells.append(fmt([e.summary["regret"] for e in eps]))
            series[label] = means
            rows.append([label, *cells, slope_cell(horizons, means)])
        for v in v_values:
            for name in v_agents:
                eps = runs(name, reps, bar, horizon=500, agent_kwargs={"V": v})
                v_rows.append([name, v, fmt([e.summary["regret"] for e in eps]),
                               fmt([e.summary["mean_queue_total"] for e in eps], 2)])  # fmt: skip
    text = table(["agent", *[f"R({t})" for t in horizons], "log-log slope"], rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, means in series.items():
        ax.loglog(horizons, np.maximum(means, 1e-1), "o-", label=label)
    ax.set_xlabel("T")
    ax.set_ylabel("mean R(T)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "e4_scaling.png", dpi=110)
    plt.close(fig)
    text += "\n\n![T scaling](e4_scaling.png)\n\nV sweep at T = 500:\n\n"
    return text + table(["agent", "V", "R(500)", "mean ΣQ"], v_rows) + "\n"


def e5_distributed(iterations: int, out: pathlib.Path, plt, progress: bool) -> str:
    rng = np.random.default_rng(7)
    k, n_j, beta = 4, 2, 8.0
    rt = rng.uniform(0, 1, (k, n_j))
    a = rng.uniform(0.5, 3.0, k)
    caps = np.array([2.0, 2.0])
    up, down = rng.integers(1, 4, (k, n_j)), rng.integers(1, 4, (k, n_j))
    trip = up + down
    target = solve_penalized(rt, a, caps, 1.2, beta)
    rows = []
    nodes, factors, updates = ("job", "server"), (0.25, 0.5, 0.9, 3.0, 10.0), ("kelly_voice", "literal")
    bar = progress_bar(total=len(nodes) * len(factors) * len(updates), desc="E5", unit="run", enabled=progress)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, node in zip(axes, nodes, strict=True):
        for factor in factors:
            for update in updates:
                alpha = factor * stability_bound(beta) / trip
                hist = iterate(rt, a, caps, 1.2, node=node, beta=beta, alpha=alpha, delays=(up, down),
                               iterations=iterations, update=update)  # fmt: skip
                err = np.abs(hist.sum(axis=2) - target.sum(axis=1)).max(axis=1)
                tail = float(err[-iterations // 10 :].max())
                trend = "decaying" if err[-1] < err[len(err) // 2] else "not decaying"
                rows.append([node, update, factor, f"{tail:.2e}", "yes" if tail < 1e-4 else "no", trend])
                bar.update()
                if update == "kelly_voice":
                    ax.semilogy(np.maximum(err, 1e-16), label=f"α = {factor} × bound (13)")
        ax.set_title(f"{node}-node iteration: max_i |y_i† − y*_i†|")
        ax.set_xlabel("iteration")
        ax.legend(fontsize=8)
    bar.close()
    fig.tight_layout()
    fig.savefig(out / "e5_distributed.png", dpi=110)
    plt.close(fig)
    header = [
        "node",
        "update",
        "α / bound (13)",
        f"max error, last {iterations // 10} iterations",
        "error < 1e-4",
        "trend (last vs middle iterate)",
    ]
    note = f"\n\nI₊ = {k}, J = {n_j}, p_j = (z/n_j)^{beta:.0f}, τ_ij, τ_ji ∈ {{1, 2, 3}}, R = {iterations}\n"
    return table(header, rows) + note + "\n![E5](e5_distributed.png)\n"


def server_cycle(horizon: int, block: int = 100) -> np.ndarray:
    """App. D.2's time-varying set of server classes: n(t) cycles through (2, 2), (2, 0), (0, 2) in blocks of
    ``block`` slots (n_min = 2 > ρ = 1, the stability condition)."""
    pattern = np.array([[2, 2], [2, 0], [0, 2]])
    return pattern[(np.arange(horizon) // block) % len(pattern)]


D2 = "D.2: n(t) cycles (2,2), (2,0), (0,2) every 100 slots"
EXTENSIONS = {  # App. D settings on the paper preset; ``None`` marks the horizon-dependent schedule
    "Sec. V (μ = 1, fixed servers)": {},
    "D.1: μ = 0.5 (classes 1–5), 1 (6–10)": {"service_rate": (0.5,) * 5 + (1.0,) * 5},
    # App. D.2's algorithm solves (46) over J(t) in slot t: the agent observes n(t) [L1085–1096]
    f"{D2}, n(t) observed": {"server_schedule": None, "include_server_counts": True},
    f"{D2}, n(t) hidden (not App. D.2's algorithm)": {"server_schedule": None},
}


def e6_extensions(
    reps: int,
    horizons: tuple[int, ...],
    progress: bool,
    base: dict[str, Any] | None = None,
    settings: tuple[str, ...] | None = None,
) -> str:
    """App. D: SABR's and Oracle-SABR's regret R(T) (eq. 45) and mean queue under per-class service rates (D.1)
    and a time-varying set of server classes (D.2), next to Sec. V's setting; log-log slope of R over T; and
    R̄(T) = T r̄* − Σ_t Σ r_ij y_ij(t), the regret against the fluid LP at the time-averaged counts n̄_j (= R with
    fixed servers), which a policy that defers jobs to the server classes of later slots cannot beat in the fluid
    limit, unlike the per-slot r*(t) of (45). ``base``: env kwargs under every setting (e.g.
    ``{"service_model": "exclusive"}``); ``settings``: the keys of ``EXTENSIONS`` to run (None: all)."""
    agents = ("sabr", "oracle_sabr")
    chosen = {k: v for k, v in EXTENSIONS.items() if settings is None or k in settings}
    if settings is not None and len(chosen) != len(settings):
        raise ValueError(f"settings={settings!r}: each must be one of {list(EXTENSIONS)}")
    rows = []
    with progress_bar(total=len(chosen) * len(agents) * len(horizons) * reps, desc="E6", unit="episode",
                      enabled=progress) as bar:  # fmt: skip
        for label, kwargs in chosen.items():
            for name in agents:
                regrets, averaged, queues = [], [], []
                for horizon in horizons:
                    env_kwargs = {**(base or {})}
                    env_kwargs.update({k: server_cycle(horizon) if v is None else v for k, v in kwargs.items()})
                    eps = runs(name, reps, bar, horizon=horizon, env_kwargs=env_kwargs)
                    regrets.append([e.summary["regret"] for e in eps])
                    averaged.append([horizon * e.extra["r_star_mean_caps"] - e.summary["reward_expected"] for e in eps])
                    queues.append([e.summary["mean_queue_total"] for e in eps])
                slopes = [slope_cell(horizons, [np.mean(r) for r in values]) for values in (regrets, averaged)]
                rows.append([label, name, *map(fmt, regrets), fmt(queues[-1], 2), slopes[0], fmt(averaged[-1]),
                             slopes[1]])  # fmt: skip
    header = ["setting", "agent", *[f"R({t})" for t in horizons], f"mean ΣQ, T = {horizons[-1]}", "log-log slope",
              f"R̄({horizons[-1]}), LP at n̄", "R̄ slope"]  # fmt: skip
    return table(header, rows) + "\n"


def run(
    scale: str = "small", out_dir: str | pathlib.Path = "results/reproduce/bilinear", progress: bool = True
) -> pathlib.Path:
    """Run E1–E5 at ``scale`` ("small" or "paper"), with a progress bar per experiment if ``progress``; write
    ``report.md`` and PNGs into ``out_dir``; return the report's path."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; choose one of {sorted(SCALES)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = SCALES[scale]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    sections = [
        f"# ClusterBilinear-v0 reproduction (scale {scale}, {cfg['reps']} repetitions, mean [95% bootstrap "
        "interval over the repetitions])\n"
    ]
    sections += [
        "## E1: Fig. 3, all agents (Sec. V setting)\n",
        e1_fig3(cfg["reps"], cfg["horizons"], out, plt, progress),
    ]
    fig4, ratios = e2_fig4(cfg["reps"], out, plt, progress)
    sections += ["## E2: Fig. 4, SABR vs W-SABR (c = 7/4 for classes 1–5, 1/4 for 6–10)\n", fig4]
    sections += [f"\nPer-class queue ratio high/low: SABR {ratios['sabr']:.2f}, W-SABR {ratios['w_sabr']:.2f}.\n"]
    sections += ["## E3: Algorithm 2 (OFUL-RS) vs Algorithm 1\n", e3_alg2(cfg["reps"], progress)]
    sections += [
        "## E4: T scaling (V = √(IT)) and V sweep\n",
        e4_scaling(cfg["reps"], cfg["scaling"], out, plt, progress),
    ]
    sections += [
        "## E5: distributed allocators vs condition (13)\n",
        e5_distributed(cfg["iterations"], out, plt, progress),
    ]
    sections += ["## E6: App. D extensions (per-class service rates, time-varying servers)\n",
                 e6_extensions(cfg["reps"], cfg["scaling"][:4], progress)]  # fmt: skip
    sections += [f"\nWall time: {time.perf_counter() - start:.0f} s.\n"]
    report = out / "report.md"
    report.write_text("\n".join(sections))
    return report


if __name__ == "__main__":
    print(run(*sys.argv[1:3]))
