"""How each env's cost grows with its size: step time, reset time and memory of the single and batched envs, and
the paper's algorithm's decision time, against the number of entities, with the fitted log-log slope.

Each id has one size knob (``SCALING``): the env kwargs at a scale factor and the entities they give (tenants,
machines, edges, job classes). Times are medians of ``repeats`` CPU-time measurements of one process (the
machine is shared: CPU time is what the code costs, wall time mostly waiting); memory is the peak of Python's
traced allocations (numpy's arrays included) while the env is built and reset. The slope is
``numpy.polyfit(log entities, log seconds, 1)``: 1 is linear. An agent's decision is timed until a size whose
decision exceeds ``DECISION_BUDGET_S``; the larger sizes are then reported as impractical, not run. A decision
whose memory is predictable (ESDP's dynamic program: ``knapsack.estimate``) is not run where the prediction exceeds
the project's memory limit (``cluster_envs.common.guards.MEMORY_LIMIT``): the row gives the prediction instead.

Each id's block records the command, commit and date that measured it (``measured``), so that a run of some ids
(``--ids``) can replace their blocks in an earlier result and keep the others (``merge``): the table of every id
is then built by one short run per id instead of one long one.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval import harness
from baselines.eval.outputs import provenance, run_facts
from cluster_envs.common.guards import MEMORY_LIMIT

DECISION_BUDGET_S = 2.0  # per decision: beyond, an episode of thousands of slots takes hours
BATCH = 16  # copies of the batched env at every size
STEP_SECONDS = 0.3  # CPU time each step timing aims at (at least 5 steps)
MAX_SLOPE = 1.1  # the issue's bound on an env step's growth in its entities
SLOPE_KEYS = ("step_s", "batched_step_s", "reset_s", "memory_mb", "decision_s")


@dataclass(frozen=True)
class Knob:
    """One id's size knob: ``kwargs(s)`` are the env kwargs at scale ``s``, ``entities(env)`` what grows."""

    unit: str
    scales: tuple[int, ...]
    kwargs: Callable[[int], dict[str, Any]]
    entities: Callable[[Any], int]
    agent: str
    decision_memory: Callable[[Any, int], float] | None = None  # (reset agent, slots) -> predicted peak bytes


def _esdp_memory(agent, slots: int) -> float:
    """Bytes of ESDP's DP table in the largest of its first ``slots`` slots (ξ(t)·m budget rows, every edge usable
    and of the largest budget weight ξ: an upper bound), by the knapsack's own estimate."""
    from cluster_envs.multiserver import knapsack

    xi, _ = agent.schedule(slots)
    weights = np.full(agent.problem.n_edges, xi)
    return knapsack.estimate(agent.A, agent.c, budget_weights=weights, s_max=xi * agent.m).memory


def _sla(n: int) -> dict[str, Any]:
    return {"n_users": n, "sla": (1.0 / n,) * n, "scenario": "gamma_iid", "horizon": 1000}


def _approx(m: int) -> dict[str, Any]:  # the paper preset's load per machine: jobs and visible slots ∝ M
    return {"preset": "paper", "n_machines": m, "max_visible_jobs": max(8, m // 10), "horizon": 400}


def _multiserver(s: int) -> dict[str, Any]:  # ports and servers × s at the default's edges per port: |E| ∝ s
    return {"preset": "default", "n_ports": 8 * s, "n_servers": 40 * s, "edge_prob": 0.1 / s, "compute_regret": False,
            "horizon": 400}  # fmt: skip


def _gang(s: int) -> dict[str, Any]:
    return {"preset": "default", "n_ports": 4 * s, "n_servers": 10 * s, "edge_prob": 0.3 / s, "compute_regret": False,
            "horizon": 400}  # fmt: skip


def _bilinear(s: int) -> dict[str, Any]:  # job classes × s, servers likewise, so the traffic stays inside capacity
    return {"num_job_classes": 10 * s, "num_server_classes": 2 * s, "horizon": 400}


SCALING: dict[str, Knob] = {
    "ClusterSLA-v1": Knob("tenants", (10, 30, 100, 300, 1000), _sla, lambda env: env.config.n_users, "mwu_extended"),
    "ClusterApprox-v1": Knob(
        "machines", (300, 1000, 3000, 10_000), _approx, lambda env: env.config.n_machines, "opm"
    ),  # fmt: skip
    "ClusterMultiServer-v0": Knob(
        "edges", (1, 2, 4, 8, 16), _multiserver, lambda env: len(env.instance.edges), "esdp_aa", _esdp_memory
    ),  # fmt: skip
    "ClusterGang-v0": Knob("arms", (1, 2, 4, 8, 16), _gang, lambda env: len(env.instance.arms), "esdp_gang"),
    "ClusterBilinear-v0": Knob(
        "job classes", (1, 2, 4, 8), _bilinear, lambda env: env.config.num_job_classes, "sabr"
    ),  # fmt: skip
}


def _cpu(function: Callable[[], Any]) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def _step_seconds(env, actions: list, vector: bool) -> float:
    """CPU seconds per step over enough predrawn actions to reach ``STEP_SECONDS`` (episodes restart as needed)."""

    def run(count: int) -> float:
        start = time.process_time()
        for i in range(count):
            outcome = env.step(actions[i % len(actions)])
            if not vector and (outcome[2] or outcome[3]):
                env.reset(seed=i)
        return (time.process_time() - start) / count

    per_step = run(5)
    return run(int(min(2000, max(5, STEP_SECONDS / max(per_step, 1e-7)))))


def measure_env(env_id: str, kwargs: dict[str, Any], knob: Knob, repeats: int) -> dict[str, Any]:
    """Entities, reset and step CPU seconds (median of ``repeats``) and peak traced memory of one size."""
    tracemalloc.start()
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    memory = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    entities = knob.entities(env.unwrapped)
    reset = median(_cpu(lambda seed=seed: env.reset(seed=seed)) for seed in range(repeats))
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(64)]
    step = median(_step_seconds(env, actions, vector=False) for _ in range(repeats))
    env.close()
    row = {"entities": entities, "reset_s": reset, "step_s": step, "memory_mb": memory}
    try:
        vector = gym.make_vec(env_id, BATCH, vectorization_mode="vector_entry_point", **kwargs)
    except (ValueError, gym.error.Error) as err:  # an id without a batched env, or a kwarg it does not take
        row["batched_error"] = str(err).split(";")[0]
        return row
    vector.reset(seed=0)
    vector.action_space.seed(0)
    actions = [vector.action_space.sample() for _ in range(16)]
    row["batched_step_s"] = median(_step_seconds(vector, actions, vector=True) for _ in range(repeats)) / BATCH
    vector.close()
    return row


def measure_decision(env_id: str, kwargs: dict[str, Any], knob: Knob, *, timed: bool, steps: int = 20) -> dict:
    """``decision_s``: median CPU seconds of the agent's decision over ``steps`` slots of an episode from reset
    (with ``timed``, and only where the knob's predicted memory is within ``MEMORY_LIMIT``); and, for a knob that
    predicts its decision's memory, ``decision_memory_gib``."""
    env, built, observation = harness.start(env_id, knob.agent, 0, env_kwargs=kwargs)
    row: dict[str, float] = {}
    with env:
        if knob.decision_memory is not None:
            predicted = knob.decision_memory(built, steps)
            row["decision_memory_gib"] = predicted / 2**30
            timed = timed and predicted <= MEMORY_LIMIT
        seconds = []
        for _ in range(steps if timed else 0):
            start = time.process_time()
            action = built.act(observation)
            seconds.append(time.process_time() - start)
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    if seconds:
        row["decision_s"] = median(seconds)
    return row


def slope(entities: list[int], seconds: list[float]) -> float | None:
    """The fitted exponent of seconds ∝ entities^slope (numpy.polyfit on the logs), or None below two points."""
    pairs = [(e, s) for e, s in zip(entities, seconds, strict=True) if s is not None and s > 0]
    if len({e for e, _ in pairs}) < 2:
        return None
    x, y = np.log([e for e, _ in pairs]), np.log([s for _, s in pairs])
    return float(np.polyfit(x, y, 1)[0])


def run(env_ids=None, *, repeats: int = 3, progress=None, command: str = "") -> dict[str, Any]:
    """Every size of every id's knob: env rows and the agent's decision, with the slopes; each id's block records
    ``command`` and the commit and date of its measurement (``measured``)."""
    say = progress or (lambda message: None)
    result: dict[str, Any] = {}
    for env_id in env_ids or SCALING:
        knob = SCALING[env_id]
        measure_env(env_id, knob.kwargs(knob.scales[0]), knob, 1)  # warm-up: compilation and caches, not the env
        rows, practical = [], True
        for scale in knob.scales:
            kwargs = knob.kwargs(scale)
            say(f"{env_id}: scale {scale} of {knob.unit}")
            row = {"scale": scale, **measure_env(env_id, kwargs, knob, repeats)}
            if practical or knob.decision_memory is not None:
                row.update(measure_decision(env_id, kwargs, knob, timed=practical))
                practical = row.get("decision_s", np.inf) <= DECISION_BUDGET_S
            rows.append(row)
        entities = [r["entities"] for r in rows]
        keys = (*SLOPE_KEYS, "decision_memory_gib") if knob.decision_memory else SLOPE_KEYS
        slopes = {key: slope(entities, [r.get(key) for r in rows]) for key in keys}
        result[env_id] = {"unit": knob.unit, "agent": knob.agent, "rows": rows, "slopes": slopes,
                          "measured": {"command": command, **run_facts()}}  # fmt: skip
    return result


def merge(previous: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``previous`` with the blocks of ``new`` replacing or adding theirs, in ``SCALING``'s order (ids no longer in
    ``SCALING`` are dropped: their knob is gone)."""
    blocks = {**previous, **new}
    return {env_id: blocks[env_id] for env_id in SCALING if env_id in blocks}


def verdict(block: dict[str, Any]) -> str:
    """The sentence under an id's table: whether its steps stay within ``MAX_SLOPE`` and where its decision stopped."""
    s, unit = block["slopes"], block["unit"]
    steps = [f"{name} {s[key]:.2f}" for name, key in (("single", "step_s"), ("batched", "batched_step_s"))
             if s.get(key) is not None]  # fmt: skip
    within = all(s[key] <= MAX_SLOPE for key in ("step_s", "batched_step_s") if s.get(key) is not None)
    text = f"Step slopes {', '.join(steps)}: {'within' if within else '**above**'} the bound {MAX_SLOPE}."
    stopped = next((r for r in block["rows"] if r.get("decision_s") is None), None)
    if stopped is None:
        return text + f" The {block['agent']} decision ran at every size."
    if stopped.get("decision_memory_gib", 0) > MEMORY_LIMIT / 2**30:
        why = f"its predicted memory, {stopped['decision_memory_gib']:.3g} GiB, exceeds the limit"
    else:
        why = f"the decision before it exceeded {DECISION_BUDGET_S:g} s"
    return text + f" The {block['agent']} decision was not run from {stopped['entities']:,} {unit}: {why}."


def _cell(value: float | None, scale: float = 1e3, digits: str = ".3g") -> str:
    return "—" if value is None else f"{value * scale:{digits}}"


def to_markdown(result: dict[str, Any], command: str) -> str:
    lines = [provenance(command), "",
             f"CPU ms per call (median of the repeats), batched per copy at B = {BATCH}; memory: peak traced MB while "
             f"the env is built and reset; decision: the paper's algorithm, skipped (—) beyond the first size whose "
             f"decision exceeds {DECISION_BUDGET_S:g} s or whose predicted memory (where the column is given: the "
             f"dynamic program's table over the first slots, an upper bound) exceeds the project's limit of "
             f"{MEMORY_LIMIT / 2**30:g} GiB. Slope: numpy.polyfit of log time (or memory) on log entities (1 = "
             f"linear; the bound on an env step is {MAX_SLOPE}).", ""]  # fmt: skip
    for env_id, block in result.items():
        s = block["slopes"]
        keys = [k for k in (*SLOPE_KEYS, "decision_memory_gib") if k in s]
        predicted = "decision_memory_gib" in keys
        measured = block.get("measured")
        lines += [f"### {env_id}: {block['unit']}", ""]
        if measured:
            lines += [f"Measured by `{measured['command']}` on commit {measured['commit']}, {measured['date']}.", ""]
        lines += [f"| {block['unit']} | step (ms) | batched step (ms/copy) | reset (ms) | memory (MB) | "
                  f"{block['agent']} decision (ms) |" + (" predicted decision memory (GiB) |" if predicted else ""),
                  "|---:|---:|---:|---:|---:|---:|" + ("---:|" if predicted else "")]  # fmt: skip
        for r in block["rows"]:
            batched = _cell(r.get("batched_step_s")) if "batched_error" not in r else "no batched env"
            lines.append(f"| {r['entities']:,} | {_cell(r['step_s'])} | {batched} | {_cell(r['reset_s'])} | "
                         f"{_cell(r['memory_mb'], 1, '.1f')} | {_cell(r.get('decision_s'))} |"
                         + (f" {_cell(r.get('decision_memory_gib'), 1)} |" if predicted else ""))  # fmt: skip
        fitted = [_cell(None if s[k] is None else round(s[k], 2) + 0.0, 1, ".2f") for k in keys]  # no "-0.00"
        lines.append("| **slope** | **" + "** | **".join(fitted) + "** |")
        lines += ["", verdict(block), ""]
    return "\n".join(lines) + "\n"
