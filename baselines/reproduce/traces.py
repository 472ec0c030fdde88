"""The real-trace presets where capacity binds: per preset, the share of slots in which capacity binds (measured
on the episode's own loads or arrivals) and the paper's algorithm against the heuristics and the oracle there.

The traces are not shipped: ``traces`` names the folder that holds them as the project's tests expect them
(``alibaba-gpu-v2023/`` and ``azure-llm-inference-2023/``; default ``../shared/traces`` beside the checkout). A
preset whose trace is missing is listed as skipped with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

from baselines.eval import harness
from baselines.eval.harness import evaluate
from baselines.eval.outputs import provenance, run_facts
from baselines.eval.progress import progress_bar
from baselines.eval.protocol import env_setting
from baselines.reproduce import _episodes as episodes
from cluster_envs.bilinear.azure import SLOT_SECONDS
from cluster_envs.bilinear.azure import binding_share as arrivals_service_binding_share
from cluster_envs.common.alibaba_gpu import NODE_FILE
from cluster_envs.common.azure_llm import FILES
from cluster_envs.multiserver.alibaba import binding_share as arrivals_binding_share
from cluster_envs.multiserver.gang import binding_share as gang_binding_share
from cluster_envs.sla.model import binding_share as loads_binding_share

DEFAULT_TRACES = Path("..") / "shared" / "traces"
TRACE_FOLDERS = {"alibaba": ("alibaba-gpu-v2023", NODE_FILE), "azure": ("azure-llm-inference-2023", FILES["code"])}
SLA_AGENTS = ("mwu_extended", "mwu", "proportional", "owm", "static", "pg")  # mwu: the paper's Alg. 1, no heuristic
MULTISERVER_AGENTS = ("esdp_aa", "hauf", "lcf", "lwtf", "random", "oracle")
GANG_AGENTS = ("esdp_gang", "random", "oracle")  # the paper defines no gang heuristic: random is the anchor
BILINEAR_AGENTS = ("sabr", "greedy", "uniform", "random", "clairvoyant")


@dataclass(frozen=True)
class TraceRow:
    env_id: str
    preset: str
    trace: str  # a key of TRACE_FOLDERS
    scaling: str  # how the preset makes capacity bind, as documented on the env's page


ROWS = (
    TraceRow("ClusterSLA-v1", "alibaba_gpu_2023", "alibaba", "none: the GPU demand at utilization ρ = 0.99"),
    TraceRow("ClusterSLA-v1", "azure_llm_2023", "azure", "none: the tokens at utilization ρ = 0.99"),
    TraceRow("ClusterSLA-v1", "azure_llm_2023_sizes", "azure", "none: the tokens at utilization ρ = 0.99"),
    TraceRow("ClusterMultiServer-v0", "alibaba_gpu_2023", "alibaba", "none (the unscaled preset, for comparison)"),
    TraceRow("ClusterMultiServer-v0", "alibaba_gpu_2023_binding", "alibaba",
             "time compressed 5× (T = 400 for 2,000) and capacity β = 0.1 (a fifth of 0.5)"),
    TraceRow("ClusterGang-v0", "alibaba_gpu_2023_binding", "alibaba",
             "time compressed 10× (T = 200 for 2,000), every hosting node adjacent and capacity_scale = 0.2"),
    TraceRow("ClusterBilinear-v0", "azure_llm_2023", "azure",
             f"slots of {SLOT_SECONDS} s (T = 2,000 slots replay 200 s of the hour, one admitted request a slot) and "
             "mean service 1/μ = 1/0.22 slots on the n = 4 servers"),
)  # fmt: skip
AGENTS = {"ClusterSLA-v1": SLA_AGENTS, "ClusterMultiServer-v0": MULTISERVER_AGENTS, "ClusterGang-v0": GANG_AGENTS,
          "ClusterBilinear-v0": BILINEAR_AGENTS}  # fmt: skip
BINDING_SHARE = {"ClusterSLA-v1": lambda env: loads_binding_share(env.loads),
                 "ClusterMultiServer-v0": lambda env: arrivals_binding_share(env.instance),
                 "ClusterGang-v0": lambda env: gang_binding_share(env.instance),
                 "ClusterBilinear-v0": lambda env: arrivals_service_binding_share(
                     env.simulator.arrivals, env.mu, env.problem.n_servers)}  # fmt: skip
PAPER_METRIC = {"ClusterMultiServer-v0": "aou", "ClusterGang-v0": "aou"}  # else the protocol's headline


def row_metric(env_id: str) -> str:
    """The metric a trace row reports: the multi-server paper's Table I metric, else the protocol's headline."""
    return PAPER_METRIC.get(env_id) or env_setting(env_id).headline


WINDOWED = ("ClusterBilinear-v0",)  # each seed replays another window of the trace; elsewhere every seed the same


def _binding_share(env_id: str, env_kwargs: dict, seeds: list[int]) -> float:
    """The share of slots in which capacity binds in seed 0's episode (the trace's arrivals whatever the seed), or
    over the seeds' episodes where each replays its own window."""
    env = gym.make(env_id, **env_kwargs).unwrapped
    shares = []
    for seed in seeds if env_id in WINDOWED else seeds[:1]:
        env.reset(seed=seed)
        shares.append(BINDING_SHARE[env_id](env))
    return float(np.mean(shares))


BILINEAR_V = 11.0  # a tenth of SABR's V = √(IT) on the Azure preset (I = 6, T = 2,000): the backlog's weight ×10
# The reading each surprise was traced to, run beside the default as an ablation row: name -> (kwargs, why).
ABLATIONS = {
    "ClusterMultiServer-v0": {
        name: ({"stop_rule": "skip"}, "the paper's heuristics stop at the first job that does not fit "
               "(`stop_rule=\"first_fail\"`); `\"skip\"` goes on to the next job in the order")
        for name in ("hauf", "lcf", "lwtf")
    },
    "ClusterBilinear-v0": {
        "sabr": ({"V": BILINEAR_V}, "problem (3) gives class i about Q_i / (V (γ − r̃_ij)) servers, so with V = √(IT) "
                 "its servers fill only once its queues hold about V (γ − r̃) jobs per server (the O(V) backlog of "
                 f"Thm III.1); V = {BILINEAR_V:g} weighs the backlog more"),
    },
    "ClusterGang-v0": {
        "esdp_gang": ({"arrival_aware": True}, "ESDP-Gang as printed solves its MILPs over every port and then "
                      "drops the edges of ports without a job; arrival-aware, it solves over the ports with a job "
                      "(P3 over Ω(t), as `esdp_aa` in ClusterMultiServer-v0)"),
    },
}  # fmt: skip
NEAR_TIE = 1e-4  # relative: two agents' headlines this close are reported as a near tie, with how they differ


def label(agent: str, kwargs: dict | None = None) -> str:
    return f"`{agent}`" + (f" ({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})" if kwargs else "")


def replay_facts(env_id: str, env_kwargs: dict, agent: str, agent_kwargs: dict | None = None) -> dict:
    """Seed 0 replayed, with what explains a headline. ClusterSLA-v1: per tenant, the capacity allocated to it
    beyond what it could use (``alloc − work``) summed over the steps in which some tenant's work was left waiting
    (capacity a better split would have turned into work), the allocations and the final queues. The
    multi-server envs: the share of slots in which the executed action places a job, the edges per slot and the
    realised utility per placed edge. ClusterBilinear-v0: the mean queue, the share of the servers serving a job
    in the slots in which at least as many jobs as servers wait (work-conserving: every one) and the collisions a
    slot (under exclusive service a server whose job another server took first serves nothing)."""
    env, built, observation = harness.start(env_id, agent, 0, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    steps: list[dict] = []

    def record(step: harness.Step) -> None:
        if env_id == "ClusterSLA-v1":
            waiting = step.info["queue"].sum() > 1e-9
            unused = np.maximum(step.info["alloc"] - step.info["work"], 0.0) * waiting
            steps.append({"unused": unused, "alloc": np.array(step.info["alloc"]), "queue": step.info["queue"]})
        elif env_id == "ClusterBilinear-v0":
            steps.append({"queue": float(step.info["queue_total"]), "serving": float(np.sum(step.info["N"])),
                          "collisions": float(step.info["n_collisions"])})  # fmt: skip
        else:
            steps.append({"edges": int(np.sum(step.info["x"])), "utility": float(step.info["utility"])})

    with env:
        harness.play(env, built, observation, on_step=record)
        n_servers = env.unwrapped.problem.n_servers if env_id == "ClusterBilinear-v0" else 0
    if env_id == "ClusterSLA-v1":
        return {"unused": np.sum([s["unused"] for s in steps], axis=0), "alloc": np.array([s["alloc"] for s in steps]),
                "queue": np.array(steps[-1]["queue"])}  # fmt: skip
    if env_id == "ClusterBilinear-v0":
        queue, serving = np.array([s["queue"] for s in steps]), np.array([s["serving"] for s in steps])
        full = queue >= n_servers
        busy = float(serving[full].mean() / n_servers) if full.any() else float("nan")
        collisions = float(np.mean([s["collisions"] for s in steps]))
        v = getattr(built, "v_param", None)  # SABR's V
        return {"queue": float(queue.mean()), "busy": busy, "collisions": collisions, "V": v}
    edges = np.array([s["edges"] for s in steps])
    per_edge = sum(s["utility"] for s in steps) / max(int(edges.sum()), 1)
    return {"placing": float(np.mean(edges > 0)), "edges": float(edges.mean()), "per_edge": per_edge}


def _sla_near_ties(per_seed: dict, facts: dict) -> list[str]:
    """A sentence per pair of agents whose regrets coincide or nearly do: how their actions and queues differ."""
    lines, names = [], list(per_seed)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = per_seed[a].mean(), per_seed[b].mean()
            if abs(x - y) > NEAR_TIE * max(abs(x), abs(y), 1e-12):
                continue
            differ = int(np.sum(np.any(~np.isclose(facts[a]["alloc"], facts[b]["alloc"]), axis=1)))
            if differ == 0:
                lines += ["", f"{a} and {b} play the same allocations in every step here: regret {x:.6g}."]
                continue
            queues = ", ".join(f"{q:.3f}" for q in facts[a]["queue"])
            same = np.allclose(facts[a]["queue"], facts[b]["queue"], atol=1e-3)
            lines += ["", f"{a} and {b} are a near tie, not one agent: regret {x:.6g} against {y:.6g}; their "
                      f"allocations differ in {differ} of {len(facts[a]['alloc'])} steps, and they end with "
                      + (f"the same queues ({queues})." if same else "different queues.")]  # fmt: skip
    return lines


def _placements(fact: dict) -> str:
    """What the multi-server replays measured: where the agent places jobs."""
    text = f"{fact['placing']:.1%} of the slots, {fact['edges']:.2f} edges a slot at {fact['per_edge']:.3f} an edge"
    return "places a job in " + text


def _service(fact: dict) -> str:
    """What the bilinear replays measured: how busy the servers are while jobs wait."""
    v = f" (its V = {fact['V']:.4g})" if fact["V"] is not None else ""
    return (f"keeps {fact['busy']:.1%} of the servers serving in the slots where at least as many jobs as servers "
            f"wait, with {fact['queue']:,.1f} jobs waiting on average and {fact['collisions']:.3f} collisions a slot "
            f"(a server whose job another server took first serves nothing){v}")  # fmt: skip


def _below_naive(rows: dict, naive: str, sign: int, facts: dict, ablated: dict, describe=None) -> list[str]:
    """A sentence per row that scores worse than the naive anchor, with what the replay of seed 0 measured
    (``describe(fact)``: where it places jobs, how many edges, their utility; or how busy its servers are) and the
    ablation row of the reading it was traced to: whether that reading closes the gap, and if not, for the
    multi-server envs, whether what is left is the number of edges or their value."""
    describe = describe or _placements  # the multi-server envs' measurements
    lines, ablation_rows = [], {again for again, _ in ablated.values()}
    floor, base = rows[naive].mean(), facts[naive]
    for name, values in rows.items():
        if sign * (values.mean() - floor) >= 0 or name in ablation_rows:
            continue
        text = (f"{name} scores below the naive anchor {naive} ({values.mean():,.4g} against {floor:,.4g}). On seed "
                f"0 it {describe(facts[name])} ({naive}: {describe(base)}).")  # fmt: skip
        if name in ablated:
            row, why = ablated[name]
            again, fact = rows[row].mean(), facts[row]
            closed = sign * (again - floor) >= 0
            where = "above" if closed else "still below"
            text += (f" Traced to the reading: {why}. So run ({row}), it scores {again:,.4g}, {where} {naive}, "
                     f"and {describe(fact)}.")  # fmt: skip
            if (
                not closed
                and "edges" in fact
                and fact["edges"] >= 0.98 * base["edges"]
                and (fact["per_edge"] < base["per_edge"])
            ):
                text += (" What is left of the gap is the value of the edges it picks, not their number: its "
                         f"priority order places as many edges as {naive}, of lower utility.")  # fmt: skip
        lines += ["", text]
    return lines


def row_report(row: TraceRow, trace_dir: Path, seeds: list[int], progress: bool) -> list[str]:
    """One preset's section: its binding share, every agent's headline (and the ablation rows of the readings its
    surprises were traced to), the sentences that explain each surprise, and, for the paper's algorithm, its paired
    gain over the best heuristic per seed."""
    env_kwargs = {"preset": row.preset, "trace_dir": str(trace_dir)}
    setting = env_setting(row.env_id)
    agents = AGENTS[row.env_id]
    start = time.perf_counter()
    share = _binding_share(row.env_id, env_kwargs, seeds)
    table = evaluate(row.env_id, agents, seeds, env_kwargs=env_kwargs, progress=progress)
    metric = row_metric(row.env_id)
    sign = setting.metrics[metric]  # +1: higher is better
    heuristics = [a for a in agents if a not in (setting.paper_agent, setting.oracle_agent, "random", "mwu")]
    per_seed = {label(a): table.values(a, metric) for a in agents}
    ablations = ABLATIONS.get(row.env_id, {})
    ablated = {}  # default row -> (ablation row, why)
    if ablations:
        again = evaluate(row.env_id, list(ablations), seeds, env_kwargs=env_kwargs, progress=progress,
                         agent_kwargs={a: kwargs for a, (kwargs, _) in ablations.items()})  # fmt: skip
        for a, (kwargs, why) in ablations.items():
            per_seed[label(a, kwargs)] = again.values(a, metric)
            ablated[label(a)] = (label(a, kwargs), why)
    runs = [(a, None) for a in agents] + [(a, kwargs) for a, (kwargs, _) in ablations.items()]
    facts = {label(a, k): replay_facts(row.env_id, env_kwargs, a, k) for a, k in runs}
    best = max(heuristics or ["random"], key=lambda a: sign * per_seed[label(a)].mean())
    against = f"the best heuristic `{best}`" if heuristics else "`random` (the env has no heuristic agent)"
    gain = sign * (per_seed[label(setting.paper_agent)] - per_seed[label(best)])
    lines = [
        f"### {row.env_id}, preset `{row.preset}`",
        "",
        f"Scaling: {row.scaling}. **Capacity binds in {share:.1%} of the slots**"
        + (" (the mean over the seeds' windows)" if row.env_id in WINDOWED else "")
        + " "
        f"({'at least' if share >= 0.5 else 'less than'} half). {metric} per agent, mean "
        f"[min, max] over seeds {seeds} ({'lower' if sign < 0 else 'higher'} is better; `{setting.oracle_agent}` "
        "is privileged; a row with arguments is an ablation):",
        "",
    ]
    if row.env_id == "ClusterSLA-v1":  # deterministic loads and agents: one episode each, and where capacity went
        lines += [f"| agent | {metric} | capacity unused while work waited, per tenant (total) |", "|---|---:|---|"]
        lines += [f"| {a} | {v.mean():,.6g} | {', '.join(f'{u:.1f}' for u in facts[a]['unused'])} "
                  f"({facts[a]['unused'].sum():.1f}) |" for a, v in per_seed.items()]  # fmt: skip
        lines += _sla_near_ties(per_seed, facts)
        paper, rival = label(setting.paper_agent), label(best)
        if sign * (per_seed[paper].mean() - per_seed[rival].mean()) < 0:
            lines += ["", f"The paper's algorithm {paper} trails {rival} ({per_seed[paper].mean():.4g} against "
                      f"{per_seed[rival].mean():.4g}) and left {facts[paper]['unused'].sum():.1f} of capacity unused "
                      f"while work waited, where {rival} left {facts[rival]['unused'].sum():.1f} (the table's last "
                      "column)."]  # fmt: skip
        lines += ["", "The last column says where capacity went that a better split would have turned into work: the "
                  "capacity a tenant was given beyond its queue and arrivals, summed over the steps in which another "
                  "tenant's work was left waiting. The agents see only which queues are non-empty (binary "
                  "feedback), never how much they hold."]  # fmt: skip
    elif row.env_id == "ClusterBilinear-v0":
        lines += [f"| agent | {metric} | mean queue, servers serving while ≥ n jobs wait (seed 0) |", "|---|---:|---|"]
        lines += [f"| {a} | {v.mean():,.4g} [{v.min():,.4g}, {v.max():,.4g}] | {facts[a]['queue']:,.1f}, "
                  f"{facts[a]['busy']:.1%} |" for a, v in per_seed.items()]  # fmt: skip
        lines += _below_naive(per_seed, label(setting.naive_agent), sign, facts, ablated, _service)
        lines += ["", "The regret is against r* T with r* the fluid optimum (eq. 1) at the trace's mean rates: a "
                  "window busier than the hour's mean lets every agent earn more than r* a slot, so a seed's regret "
                  "can be negative; the agents are compared on the same windows (paired)."]  # fmt: skip
    else:
        lines += [f"| agent | {metric} | slots with a placement, edges a slot (seed 0) |", "|---|---:|---|"]
        lines += [f"| {a} | {v.mean():,.4g} [{v.min():,.4g}, {v.max():,.4g}] | {facts[a]['placing']:.1%}, "
                  f"{facts[a]['edges']:.2f} |" for a, v in per_seed.items()]  # fmt: skip
        lines += _below_naive(per_seed, label(setting.naive_agent), sign, facts, ablated)
    relative = gain / np.abs(per_seed[label(best)]) if metric == "aou" else None  # regrets can be near 0 or negative
    lines += [
        "",
        f"The paper's algorithm `{setting.paper_agent}` against {against}, paired per seed "
        f"(positive: the paper's is better): {gain.mean():+,.4g} [{gain.min():+,.4g}, {gain.max():+,.4g}]"
        + (f", {relative.mean():+.2%} of the heuristic's {metric}" if relative is not None else "")
        + f". Wall time {time.perf_counter() - start:.0f} s.",
        "",
    ]
    return lines


def run(
    scale: str = "small",
    out_dir: str | Path = "results/reproduce/traces",
    *,
    progress: bool = True,
    traces: str | Path = DEFAULT_TRACES,
) -> Path:
    """Write ``report.md`` into ``out_dir`` (one section per trace preset) and return its path. ``scale="small"``
    runs seeds 0-2, ``"paper"`` 0-9 (the SLA presets' loads are the trace's and their agents deterministic, so
    they run seed 0 only). Each finished section is kept in ``out_dir/sections`` under a name hashed from the
    preset, the seeds, the trace folder and the commit, and read back by the next run on the same commit: a run
    stopped by a time limit resumes with the next preset."""
    if scale not in ("small", "paper"):
        raise ValueError(f"scale={scale!r} is not allowed; choose 'small' or 'paper'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(3 if scale == "small" else 10))
    sections, commit = out / "sections", run_facts()["commit"]
    sections.mkdir(exist_ok=True)
    lines = [
        provenance(f"cluster-envs reproduce traces --scale {scale}"),
        "",
        "# Real traces where capacity binds",
        "",
        "Every preset that replays a real trace, with the share of its slots in which capacity binds and the",
        "paper's algorithm against the heuristics there. *Binds*: in ClusterSLA-v1 the offline optimum's",
        "work-conserving server (and so every work-conserving allocation) has work for the whole step",
        "(`cluster_envs.sla.model.binding_share`); in ClusterMultiServer-v0 the jobs that arrive in the slot ask,",
        "together, for more than the capacity `c` of some device type, so no scheduler admits them all",
        "(`cluster_envs.multiserver.alibaba.binding_share`); in ClusterGang-v0 no feasible placement runs every task",
        "of the arrived jobs that could each run alone (`cluster_envs.multiserver.gang.binding_share`, one MILP per",
        "arrival pattern); in ClusterBilinear-v0 a fluid version of the n servers, fed with each arriving job's",
        "mean work 1/μ_i, still has work at the end of the slot: the work arrived so far exceeds what the servers",
        "can have done, however they were scheduled (`cluster_envs.bilinear.azure.binding_share`). The presets",
        "without a scaling are listed for comparison, except ClusterGang-v0's `alibaba_gpu_2023`, where no slot",
        "binds (tests/multiserver/test_multiserver_trace.py): ESDP-Gang solves MILPs in every one of its 2,000",
        "slots. The Azure LLM inference 2023 trace is Patel et al., *Splitwise*,",
        "ISCA 2024 (CC-BY 4.0); the Alibaba GPU 2023 trace Weng et al., USENIX ATC '23.",
        "",
    ]
    for row in progress_bar(ROWS, desc="trace presets", unit="preset", enabled=progress):
        folder, probe = TRACE_FOLDERS[row.trace]
        trace_dir = Path(traces) / folder
        if not (trace_dir / probe).is_file():
            lines += [f"### {row.env_id}, preset `{row.preset}`", "", f"Skipped: no {probe} in {trace_dir}.", ""]
            continue
        row_seeds = [0] if row.env_id == "ClusterSLA-v1" else seeds
        kept = sections / episodes.episode_name(row.env_id, row.preset, row_seeds, str(trace_dir), commit)
        lines += episodes.cached(kept, lambda row=row, trace_dir=trace_dir, row_seeds=row_seeds: row_report(
            row, trace_dir, row_seeds, progress))  # fmt: skip
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
