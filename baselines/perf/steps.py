"""Step-rate benchmark: every registered id next to CartPole-v1 measured in the same process, as ratios.

Each RL-ready id (``Cluster<Name>RL-vN``) is also timed against its base id in the same way: the base id with the
RL id's problem kwargs (reward, service model, horizon, preset) and the same minimal info, so that the ratio is the
cost of the RL interface alone (its action reading and one-Box observation).

The machines are shared and noisy, so each rate is timed ``repeats`` times, interleaved with the CartPole
reference, and a ratio is the median of the paired per-repeat ratios. Actions are drawn before the timed
loop (``Space.sample()`` costs more than a whole env step). Batched rates use each id's
``vector_entry_point`` (``gym.make_vec(..., vectorization_mode="vector_entry_point")``); the reset of the
batch is timed separately and not counted in its step rate.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import gymnasium as gym
import numpy as np

import cluster_envs
from baselines.eval import harness
from baselines.eval.outputs import write_text
from baselines.perf import training as bench_training
from baselines.rl.config import ALGOS
from cluster_envs.registration import RL_IDS

REFERENCE = "CartPole-v1"
RL_TARGET = 0.8  # an RL-ready id's single-env rate over its base id's (issue 27)
BATCH_SIZES = (1, 64, 1024, 4096)
SLA_POLICIES = ("mwu", "mwu_extended", "static", "proportional", "owm", "pg", "rest_pg")

# The targets, as ratios to CartPole-v1 (single) and to Gymnasium's batched CartPole (4,096 copies).
SINGLE_TARGETS = {"ClusterSLA-v1": 1.0}
DEFAULT_SINGLE_TARGET = 0.3
BATCH_TARGET = 0.25
BATCH_TARGET_SIZE = 4096
SLA_LONG_HORIZON_TARGET_S = 60.0
MEMORY_TARGET_MB = 2048.0
# ESDP's dynamic program at the paper's scale (spec §4.3): |E| = 32, m = 16, c_k = 24, K = 3, slot t = 2,000.
ESDP_DP_SCALE = {"n_edges": 32, "m": 16, "capacity": 24, "n_device_types": 3, "t": 2000}
ESDP_DP_TARGET_S = 0.3
# ClusterApprox-v1 at the paper's scale (issue 17): per-slot cost of each Table I scheme and of the env step,
# timed after a warm-up that brings the concurrent jobs near the preset's steady state (≈ 80 at load 3).
APPROX_SLOT_AGENTS = ("opm", "opm_no_estimation", "fair", "deadline_aware")
APPROX_SLOT_SCALE = {"preset": "paper", "warmup": 3000, "steps": 500}
# Paper-scale episodes the issue times (opt-in, they are long): id -> (agent, env kwargs, target wall seconds).
# ESDP's 8,000 slots get the per-slot DP target times the horizon (ours; the issue asks that the run completes).
PAPER_EPISODES = {
    "ClusterApprox-v1": ("opm", {"preset": "paper"}, 300.0),
    "ClusterMultiServer-v0": ("esdp", {"preset": "default", "horizon": 8000}, 8000 * ESDP_DP_TARGET_S),
}

_EPISODE_SCRIPT = """
import json, resource, sys, time
from baselines.eval.harness import rollout
env_id, agent, kwargs = json.loads(sys.argv[1])
start = time.perf_counter()
episode = rollout(env_id, agent, 0, env_kwargs=kwargs)
print(json.dumps({"seconds": time.perf_counter() - start, "steps": episode.metrics.get("steps"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def single_target(env_id: str) -> float:
    return SINGLE_TARGETS.get(env_id, DEFAULT_SINGLE_TARGET)


@dataclass
class Measurement:
    """Rates (steps/s; env-steps/s when batched) of one configuration and its CartPole reference."""

    env_id: str
    variant: str
    rate: float
    reference_rate: float
    ratio: float
    rates: list[float] = field(default_factory=list)
    reference_rates: list[float] = field(default_factory=list)
    reset_seconds: float | None = None
    reference: str = REFERENCE


def _predrawn_actions(space: gym.Space, count: int, seed: int = 0) -> list:
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def has_info_level(env_id: str) -> bool:
    config = getattr(gym.make(env_id).unwrapped, "config", None)
    return hasattr(config, "info_level")


def _single_rate(env: gym.Env, actions: list, steps: int) -> float:
    env.reset(seed=0)
    count = len(actions)
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i % count])
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def _vector_rate(env: gym.vector.VectorEnv, actions: list, steps: int) -> float:
    count = len(actions)
    start = time.perf_counter()
    for i in range(steps):
        env.step(actions[i % count])
    return steps * env.num_envs / (time.perf_counter() - start)


def _paired(env_id: str, variant: str, run, reference_run, repeats: int, reset_seconds=None) -> Measurement:
    rates, reference_rates = [], []
    for _ in range(repeats):  # interleaved, so a load spike hits both sides of a pair
        reference_rates.append(reference_run())
        rates.append(run())
    ratio = median(r / c for r, c in zip(rates, reference_rates, strict=True))
    return Measurement(env_id, variant, median(rates), median(reference_rates), ratio, rates, reference_rates,
                       reset_seconds)  # fmt: skip


def bench_single(env_id: str, steps: int, repeats: int, **env_kwargs: Any) -> Measurement:
    """Steps/s of one env through ``gym.make`` (resets included) against CartPole-v1 through ``gym.make``."""
    variant = "single, " + ", ".join(f"{k}={v}" for k, v in env_kwargs.items()) if env_kwargs else "single"
    return _single_pair(env_id, variant, gym.make(env_id, **env_kwargs), gym.make(REFERENCE), steps, repeats)


def base_side(rl_id: str) -> tuple[str, dict[str, Any]]:
    """The base id and kwargs an RL-ready id is timed against: the kwargs the RL id fixes other than its interface
    (``action_mode``, ``observation_mode``), with the RL id's minimal info."""
    base, fixed = RL_IDS[rl_id]
    return base, {k: v for k, v in fixed.items() if k not in ("action_mode", "observation_mode")}


def bench_rl_vs_base(rl_id: str, steps: int, repeats: int) -> Measurement:
    """Steps/s of an RL-ready id through ``gym.make`` against its base id (:func:`base_side`), interleaved."""
    base, kwargs = base_side(rl_id)
    variant = "single, vs " + ", ".join(f"{k}={v}" for k, v in kwargs.items())
    measured = _single_pair(rl_id, variant, gym.make(rl_id), gym.make(base, **kwargs), steps, repeats)
    measured.reference = base
    return measured


def _single_pair(env_id: str, variant: str, env: gym.Env, reference: gym.Env, steps: int, repeats: int):
    actions = _predrawn_actions(env.action_space, min(steps, 1024))
    reference_actions = _predrawn_actions(reference.action_space, min(steps, 1024))
    for e, a in ((env, actions), (reference, reference_actions)):  # warm up: first-call compilation, caches
        _single_rate(e, a, min(steps, 100))
    return _paired(env_id, variant, lambda: _single_rate(env, actions, steps),
                   lambda: _single_rate(reference, reference_actions, steps), repeats)  # fmt: skip


def bench_batched(env_id: str, num_envs: int, steps: int, repeats: int) -> Measurement:
    """Env-steps/s of ``num_envs`` copies through the id's vector entry point against batched CartPole."""
    make = lambda i: gym.make_vec(i, num_envs=num_envs, vectorization_mode="vector_entry_point")  # noqa: E731
    env, reference = make(env_id), make(REFERENCE)
    start = time.perf_counter()
    env.reset(seed=0)
    reset_seconds = time.perf_counter() - start
    reference.reset(seed=0)
    actions = _predrawn_actions(env.action_space, 16)
    reference_actions = _predrawn_actions(reference.action_space, 16)
    for e, a in ((env, actions), (reference, reference_actions)):  # warm up, as above
        _vector_rate(e, a, 2)
    measurement = _paired(env_id, f"batched x{num_envs}", lambda: _vector_rate(env, actions, steps),
                          lambda: _vector_rate(reference, reference_actions, steps), repeats,
                          reset_seconds)  # fmt: skip
    env.close()
    return measurement


def has_vector_entry_point(env_id: str) -> bool:
    return gym.spec(env_id).vector_entry_point is not None


def bench_episode(env_id: str, agent: str, env_kwargs: dict[str, Any]) -> dict[str, float]:
    """Wall seconds, steps and peak resident memory (MB) of one harness rollout (seed 0) in a fresh process,
    so that the peak is this run's alone."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    argv = [sys.executable, "-c", _EPISODE_SCRIPT, json.dumps([env_id, agent, env_kwargs])]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{env_id} with {agent} {env_kwargs}: the episode failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_sla_long_horizon(horizon: int = 3_000_000, seed: int = 0, policies=SLA_POLICIES) -> dict[str, float]:
    """Wall seconds per policy of ClusterSLA's synthetic experiment through the long-horizon runner.

    Each time covers the env reset (drawing T loads and the benchmarks) and the run; the first policy
    also pays the runner's compilation (numba cannot cache it).
    """

    seconds = {}
    for name in policies:
        start = time.perf_counter()
        harness.simulate("ClusterSLA-v1", name, seed, env_kwargs={"preset": "paper", "horizon": horizon},
                 record_every=max(1, horizon // 1000))  # fmt: skip
        seconds[name] = time.perf_counter() - start
    return seconds


def esdp_bench_agent(seed: int = 0):
    """The ESDP agent of :func:`bench_esdp_dp` on its random ``ESDP_DP_SCALE`` instance (``A ∈ {1, 2}``, every edge
    played 1–300 times, ``v̂ ~ U(0, 1)``, seeded), before its slot ``t``."""
    from agents.multiserver.esdp import ESDP
    from cluster_envs.multiserver.model import MultiServerProblem

    scale = ESDP_DP_SCALE
    rng = np.random.default_rng(seed)
    n_edges, n_types = scale["n_edges"], scale["n_device_types"]
    edges = np.column_stack([np.arange(n_edges) // 4, np.arange(n_edges)])
    A = rng.integers(1, 3, size=(n_types, n_edges))
    problem = MultiServerProblem(n_edges // 4, n_edges, n_types, edges, A, np.full(n_types, scale["capacity"]),
                                 np.zeros(n_edges), scale["t"], "affine_clip")  # fmt: skip
    agent = ESDP(alpha=scale["m"] / n_edges)
    agent.reset(problem)
    agent.n = rng.integers(1, 301, size=n_edges)
    agent.sums = rng.random(n_edges) * agent.n
    return agent


def bench_esdp_dp(repeats: int = 5, seed: int = 0) -> dict[str, Any]:
    """Seconds of one ESDP slot (the DP of Algorithm 2, the selection (21) and the backtrack) at
    ``ESDP_DP_SCALE``, interleaved with CartPole-v1 single-env rates timed in the same process.

    The instance is :func:`esdp_bench_agent`'s. ``cartpole_steps`` = seconds × CartPole's rate: what one slot
    costs in CartPole steps, which cancels most of the machine's load.
    """
    scale = ESDP_DP_SCALE
    agent = esdp_bench_agent(seed)
    n_edges = scale["n_edges"]
    observation = {"last_action": np.zeros(n_edges), "last_utility": np.zeros(n_edges),
                   "edge_mask": np.ones(n_edges)}  # fmt: skip
    reference = gym.make(REFERENCE)
    reference_actions = _predrawn_actions(reference.action_space, 1024)

    def one_slot() -> float:
        agent.t = scale["t"] - 1  # act() advances to slot t
        start = time.perf_counter()
        agent.act(observation)
        return time.perf_counter() - start

    one_slot()  # compilation (cached on disk after the first run)
    seconds, reference_rates = [], []
    for _ in range(repeats):
        reference_rates.append(_single_rate(reference, reference_actions, 20_000))
        seconds.append(one_slot())
    return {**scale, "s_max": agent.last_s_max, "nominal_cells": agent.last_cells, "seconds": median(seconds),
            "all_seconds": seconds, "reference_rate": median(reference_rates),
            "cartpole_steps": median(s * r for s, r in zip(seconds, reference_rates, strict=True))}  # fmt: skip


def bench_approx_slots(agent_names=APPROX_SLOT_AGENTS, *, preset: str = "paper", warmup: int = 3000,
                       steps: int = 500, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Per-slot seconds of each agent's decision and of the env step at a paper-scale preset of ClusterApprox-v1,
    over ``steps`` slots after ``warmup`` slots of the same agent (seed ``seed``): wall (``act_seconds``,
    ``step_seconds``) and CPU (``cpu_seconds``, both together), next to CartPole-v1's single-env rate timed in the
    same process (``cartpole_steps``: what a slot costs in CartPole steps, which cancels most of the load)."""
    reference = gym.make(REFERENCE)
    reference_actions = _predrawn_actions(reference.action_space, 1024)
    rows = {}
    for name in agent_names:
        env, agent, observation = harness.start("ClusterApprox-v1", name, seed, env_kwargs={"preset": preset})
        with env:
            for _ in range(warmup):
                observation, *_ = env.step(agent.act(observation))
            act = step = 0.0
            visible = 0
            cpu = time.process_time()
            for _ in range(steps):
                start = time.perf_counter()
                action = agent.act(observation)
                middle = time.perf_counter()
                observation, *_ = env.step(action)
                act, step = act + middle - start, step + time.perf_counter() - middle
                visible += int((observation["jobs"][:, 0] > 0).sum())
            cpu = time.process_time() - cpu
        rate = _single_rate(reference, reference_actions, 20_000)
        rows[name] = {"act_seconds": act / steps, "step_seconds": step / steps, "cpu_seconds": cpu / steps,
                      "visible_jobs": visible / steps, "reference_rate": rate,
                      "cartpole_steps": (act + step) / steps * rate}  # fmt: skip
    return {"preset": preset, "warmup": warmup, "steps": steps, "seed": seed, "agents": rows}


def run_bench(env_ids=None, *, steps: int = 20_000, repeats: int = 5, batch_sizes=BATCH_SIZES,
              batch_env_steps: int = 2_000_000, long_horizon: int | None = 3_000_000, paper_episodes: bool = False,
              esdp_dp: bool = True, approx_slots: bool = True, step_rates: bool = True,
              training: dict[str, int] | None = None, progress=None) -> dict[str, Any]:  # fmt: skip
    """Every measurement as a JSON-ready dict. ``batch_env_steps`` sets each batched timing's length
    (steps = batch_env_steps / B, at least 20 and at most ``steps``); ``long_horizon=None`` skips the SLA
    long-horizon runs; ``paper_episodes=True`` adds the (long) ``PAPER_EPISODES`` runs; ``esdp_dp`` times
    ESDP's DP at paper scale when ClusterMultiServer-v0 is among the ids; ``approx_slots`` times the Table I
    schemes' slots at M = 1,000 (``bench_approx_slots``) when ClusterApprox-v1 is; ``step_rates=False`` skips the
    single and batched step rates; ``training`` (the keyword arguments of ``baselines.perf.training.run``: copies,
    iterations, repeats) adds the PPO training section."""
    say = progress or (lambda message: None)
    requested = list(env_ids or [*cluster_envs.env_ids(), *cluster_envs.rl_ids()])
    rl_ids = [i for i in requested if i in RL_IDS]  # each timed against its base id (bench_rl_vs_base)
    env_ids = [i for i in requested if i not in RL_IDS]
    long_horizon_result = None
    if long_horizon and "ClusterSLA-v1" in env_ids:  # first, so that the process's peak memory is this run's
        say(f"ClusterSLA-v1 long horizon T={long_horizon}")
        seconds = bench_sla_long_horizon(long_horizon)
        long_horizon_result = {"horizon": long_horizon, "seconds": seconds, "total": sum(seconds.values()),
                               "peak_rss_mb": _peak_rss_mb()}  # fmt: skip
    single, batched = [], []
    for env_id in env_ids if step_rates else []:
        levels = [{"info_level": "minimal"}, {"info_level": "full"}] if has_info_level(env_id) else [{}]
        for kwargs in levels:
            say(f"{env_id} single {kwargs}")
            single.append(bench_single(env_id, steps, repeats, **kwargs))
        if has_vector_entry_point(env_id):
            for size in batch_sizes:
                say(f"{env_id} batched x{size}")
                batched.append(bench_batched(env_id, size, min(steps, max(20, batch_env_steps // size)), repeats))
    rl_vs_base = []
    for rl_id in rl_ids if step_rates else []:
        say(f"{rl_id} single against {RL_IDS[rl_id][0]}")
        rl_vs_base.append(bench_rl_vs_base(rl_id, steps, repeats))
    result: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "load_average": _load_average(),
        },  # fmt: skip
        "settings": {"steps": steps, "repeats": repeats, "batch_env_steps": batch_env_steps},
        "single": [asdict(m) for m in single],
        "batched": [asdict(m) for m in batched],
        "rl_vs_base": [asdict(m) for m in rl_vs_base],
        "missing_vector_entry_point": [i for i in env_ids if step_rates and not has_vector_entry_point(i)],
    }
    if long_horizon_result:
        result["sla_long_horizon"] = long_horizon_result
    if esdp_dp and "ClusterMultiServer-v0" in env_ids:
        say("ClusterMultiServer-v0 ESDP dynamic program at paper scale")
        result["esdp_dp"] = bench_esdp_dp(repeats)
    if approx_slots and "ClusterApprox-v1" in env_ids:
        say("ClusterApprox-v1 per-slot cost of the Table I schemes at M = 1,000")
        result["approx_slots"] = bench_approx_slots(**APPROX_SLOT_SCALE)
    if paper_episodes:
        result["paper_episodes"] = {}
        for env_id, (agent, kwargs, target) in PAPER_EPISODES.items():
            if env_id in env_ids:
                say(f"{env_id} paper-scale episode with {agent}")
                run = bench_episode(env_id, agent, kwargs)
                result["paper_episodes"][env_id] = {
                    "agent": agent,
                    "env_kwargs": kwargs,
                    "target_seconds": target,
                    **run,
                }
    if training is not None:
        result["training"] = bench_training.run(env_ids, **training, progress=say)
    result["targets"] = targets(result)
    return result


def _peak_rss_mb() -> float | None:
    """Peak resident memory of this process so far (Linux reports KiB), or None where unavailable."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load_average() -> list[float] | None:
    try:
        import os

        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets that this run measured, each with its measured value and whether it is met."""
    rows = []
    for m in result["single"]:
        if m["variant"] in ("single", "single, info_level=minimal"):
            goal = single_target(m["env_id"])
            rows.append({"target": f"{m['env_id']} single ≥ {goal}x CartPole-v1", "measured": m["ratio"],
                         "met": m["ratio"] >= goal})  # fmt: skip
    for m in result["batched"]:
        if m["variant"] == f"batched x{BATCH_TARGET_SIZE}":
            rows.append({"target": f"{m['env_id']} x{BATCH_TARGET_SIZE} ≥ {BATCH_TARGET}x batched CartPole",
                         "measured": m["ratio"], "met": m["ratio"] >= BATCH_TARGET})  # fmt: skip
    for m in result.get("rl_vs_base", []):
        rows.append({"target": f"{m['env_id']} single ≥ {RL_TARGET}x {m['reference']} (its problem kwargs)",
                     "measured": m["ratio"], "met": m["ratio"] >= RL_TARGET})  # fmt: skip
    for env_id in result["missing_vector_entry_point"]:
        rows.append({"target": f"{env_id} x{BATCH_TARGET_SIZE} ≥ {BATCH_TARGET}x batched CartPole", "measured": None,
                     "met": False})  # fmt: skip
    if "sla_long_horizon" in result:
        total = result["sla_long_horizon"]["total"]
        horizon = result["sla_long_horizon"]["horizon"]
        rows.append({"target": f"ClusterSLA T={horizon:,} all 7 policies ≤ {SLA_LONG_HORIZON_TARGET_S:.0f} s",
                     "measured": total, "met": total <= SLA_LONG_HORIZON_TARGET_S})  # fmt: skip
        peak = result["sla_long_horizon"].get("peak_rss_mb")
        if peak is not None:
            rows.append({"target": f"ClusterSLA T={horizon:,} peak memory ≤ {MEMORY_TARGET_MB:.0f} MB",
                         "measured": peak, "met": peak <= MEMORY_TARGET_MB})  # fmt: skip
    if "esdp_dp" in result:
        dp = result["esdp_dp"]
        rows.append({"target": f"ESDP DP at paper scale (t = {dp['t']:,}) ≤ {ESDP_DP_TARGET_S} s per slot",
                     "measured": dp["seconds"], "met": dp["seconds"] <= ESDP_DP_TARGET_S})  # fmt: skip
    for env_id, run in result.get("paper_episodes", {}).items():
        rows.append({"target": f"{env_id} {run['env_kwargs']} with {run['agent']} ≤ {run['target_seconds']:.0f} s",
                     "measured": run["seconds"], "met": run["seconds"] <= run["target_seconds"]})  # fmt: skip
        rows.append({"target": f"{env_id} {run['env_kwargs']} peak memory ≤ {MEMORY_TARGET_MB:.0f} MB",
                     "measured": run["peak_rss_mb"], "met": run["peak_rss_mb"] <= MEMORY_TARGET_MB})  # fmt: skip
    if "training" in result:
        rows += bench_training.targets(result["training"])
    return rows


def to_markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [f"Python {m['python']}, gymnasium {m['gymnasium']}, numpy {m['numpy']}, load average {m['load_average']}."]
    if result["single"] or result["batched"]:
        lines += [f"\nStep rates, median of {result['settings']['repeats']} interleaved repeats:", "",
                  "| env | variant | steps/s | CartPole steps/s (same run) | ratio | batch reset (s) |",
                  "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for row in result["single"] + result["batched"]:
        reset = "" if row["reset_seconds"] is None else f"{row['reset_seconds']:.2f}"
        lines.append(f"| {row['env_id']} | {row['variant']} | {row['rate']:,.0f} | {row['reference_rate']:,.0f} | "
                     f"{row['ratio']:.3f} | {reset} |")  # fmt: skip
    if result.get("rl_vs_base"):
        lines += ["", "RL-ready ids against their base id with the same problem kwargs and minimal info, median of "
                  f"{result['settings']['repeats']} interleaved repeats:", "",
                  "| RL id | base id, kwargs | steps/s | base id steps/s (same run) | ratio |",
                  "|---|---|---:|---:|---:|"]  # fmt: skip
        lines += [f"| {row['env_id']} | {row['reference']}, {row['variant'].removeprefix('single, vs ')} | "
                  f"{row['rate']:,.0f} | {row['reference_rate']:,.0f} | {row['ratio']:.3f} |"
                  for row in result["rl_vs_base"]]  # fmt: skip
    if result["missing_vector_entry_point"]:
        lines += ["", "No vector entry point yet: " + ", ".join(result["missing_vector_entry_point"]) + "."]
    if "sla_long_horizon" in result:
        lh = result["sla_long_horizon"]
        lines += ["", f"ClusterSLA-v1 long-horizon runner, T = {lh['horizon']:,} (wall s, reset included):", "",
                  "| policy | seconds |", "|---|---:|"]  # fmt: skip
        lines += [f"| {name} | {s:.2f} |" for name, s in lh["seconds"].items()]
        lines.append(f"| **total** | **{lh['total']:.2f}** |")
        if lh.get("peak_rss_mb") is not None:
            lines.append(f"\nPeak resident memory after these runs: {lh['peak_rss_mb']:,.0f} MB.")
    if "esdp_dp" in result:
        dp = result["esdp_dp"]
        lines.append(f"\nESDP slot at paper scale (|E| = {dp['n_edges']}, m = {dp['m']}, c_k = {dp['capacity']}, "
                     f"K = {dp['n_device_types']}, t = {dp['t']:,}, S_max = {dp['s_max']}, "
                     f"{dp['nominal_cells']:.3g} nominal DP cells): {dp['seconds']:.3f} s (median), "
                     f"= {dp['cartpole_steps']:,.0f} CartPole-v1 steps at {dp['reference_rate']:,.0f} steps/s "
                     f"in the same run.")  # fmt: skip
    if "approx_slots" in result:
        slots = result["approx_slots"]
        lines += ["", f"ClusterApprox-v1 `preset={slots['preset']!r}` (M = 1,000), slots {slots['warmup']:,} to "
                  f"{slots['warmup'] + slots['steps']:,}, seconds per slot:", "",
                  "| agent | decision (wall) | env step (wall) | both (CPU) | visible jobs | CartPole steps |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        lines += [f"| {name} | {r['act_seconds'] * 1e3:.2f} ms | {r['step_seconds'] * 1e3:.2f} ms | "
                  f"{r['cpu_seconds'] * 1e3:.2f} ms | {r['visible_jobs']:.0f} | {r['cartpole_steps']:,.0f} |"
                  for name, r in slots["agents"].items()]  # fmt: skip
    for env_id, run in result.get("paper_episodes", {}).items():
        lines.append(f"\n{env_id} {run['env_kwargs']} with {run['agent']}: {run['steps']:,} steps in "
                     f"{run['seconds']:.1f} s, peak memory {run['peak_rss_mb']:,.0f} MB.")  # fmt: skip
    if "training" in result:
        lines += bench_training.to_markdown(result["training"])
    lines += ["", "| target | measured | met |", "|---|---:|---|"]
    for row in result["targets"]:
        measured = "—" if row["measured"] is None else f"{row['measured']:.3f}"
        lines.append(f"| {row['target']} | {measured} | {'yes' if row['met'] else 'no'} |")
    return "\n".join(lines) + "\n"


def write(result: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``bench.md`` and ``bench.json`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "bench.md", out / "bench.json"
    md.write_text(to_markdown(result))
    js.write_text(json.dumps(result, indent=2))
    return md, js


def add_arguments(parser) -> None:
    """The options of ``cluster-envs bench``."""
    parser.add_argument("--ids", nargs="+", default=None,
                        help="env ids (default: all registered); an RL-ready id is timed against its base")  # fmt: skip
    parser.add_argument("--steps", type=int, default=20_000, help="single-env steps per timing (default: 20000)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per rate (default: 5)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(BATCH_SIZES), help="batch sizes")
    parser.add_argument("--batch-env-steps", type=int, default=2_000_000, help="env-steps per batched timing")
    parser.add_argument("--long-horizon", type=int, default=3_000_000,
                        help="ClusterSLA runner horizon; 0 skips it (default: 3000000)")  # fmt: skip
    parser.add_argument("--paper-episodes", action="store_true",
                        help="also time the paper-scale episodes (ClusterApprox M=1000 with OPM: minutes)")  # fmt: skip
    parser.add_argument("--no-esdp-dp", action="store_true", help="skip the paper-scale ESDP DP timing")
    parser.add_argument("--no-approx-slots", action="store_true",
                        help="skip the ClusterApprox-v1 per-slot timing of Table I's schemes at M = 1,000")  # fmt: skip
    parser.add_argument("--no-training", action="store_true", help="skip the PPO training throughput section")
    parser.add_argument("--training-copies", type=int, default=128,
                        help="copies of the native and null envs in the training section (default 128)")  # fmt: skip
    parser.add_argument("--training-repeats", type=int, default=3, help="interleaved repeats per training rate")
    parser.add_argument("--training-iterations", type=int, default=2,
                        help="PPO rollouts (and updates) per timed training repeat (default 2)")  # fmt: skip
    parser.add_argument("--training-algo", default="ppo",
                        help="the training section's algorithm (its hyperparams file; default ppo)")  # fmt: skip
    parser.add_argument("--training-only", action="store_true",
                        help="time only the training section (no step rates, long horizon, DP, slots)")  # fmt: skip
    parser.add_argument("--scaling-only", action="store_true",
                        help="time only the scaling with size (scaling.md and .json; --ids picks envs)")  # fmt: skip
    parser.add_argument(
        "--out", default="results/bench", help="output folder for bench.md and bench.json (default: results/bench)"
    )


def _training(args) -> dict[str, int] | None:
    """The training section's settings, or None with ``--no-training``."""
    if args.no_training:
        if args.training_only:
            raise ValueError("--training-only and --no-training exclude each other")
        return None

    if args.training_algo not in ALGOS:
        raise ValueError(f"--training-algo {args.training_algo!r} is not allowed; allowed: {list(ALGOS)}")
    for name in ("training_copies", "training_repeats", "training_iterations"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    return {"copies": args.training_copies, "repeats": args.training_repeats, "iterations": args.training_iterations,
            "algo": args.training_algo}  # fmt: skip


def run_from_args(args) -> Path:
    """Run the benchmark the parsed options describe, print the Markdown table, return its path."""
    for name in ("steps", "repeats", "batch_env_steps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    known = [*cluster_envs.env_ids(), *cluster_envs.rl_ids()]
    unknown = sorted(set(args.ids or []) - set(known))
    if unknown:
        raise ValueError(f"--ids: unknown env id(s) {unknown}; registered: {known}")
    if args.scaling_only:
        return _scaling_from_args(args)
    others = not args.training_only
    result = run_bench(args.ids, steps=args.steps, repeats=args.repeats, batch_sizes=args.sizes,
                       batch_env_steps=args.batch_env_steps, long_horizon=others and args.long_horizon or None,
                       paper_episodes=others and args.paper_episodes, esdp_dp=others and not args.no_esdp_dp,
                       approx_slots=others and not args.no_approx_slots, step_rates=others,
                       training=_training(args), progress=lambda message: print(message, file=sys.stderr))  # fmt: skip
    md, js = write(result, args.out)
    print(md.read_text())
    print(f"written {md} and {js}")
    return md


def _scaling_from_args(args) -> Path:
    """``--scaling-only``: the scaling table of ``baselines.perf.scaling`` into ``scaling.md`` and ``scaling.json``.
    With ``--ids``, the ids measured replace their blocks in the folder's ``scaling.json`` and the others are kept,
    so the table of every id can be built by one run per id."""
    from baselines.perf import scaling

    unknown = sorted(set(args.ids or []) - set(scaling.SCALING))
    if unknown:
        raise ValueError(f"--ids: no size knob for {unknown} in the scaling section; allowed: {list(scaling.SCALING)}")
    command = "cluster-envs bench --scaling-only" + (f" --ids {' '.join(args.ids)}" if args.ids else "")
    command += f" --repeats {args.repeats}" if args.repeats != 5 else ""
    out = Path(args.out)
    md, js = out / "scaling.md", out / "scaling.json"
    previous = json.loads(js.read_text()) if args.ids and js.is_file() else {}
    result = scaling.run(args.ids, repeats=args.repeats, command=command,
                         progress=lambda message: print(message, file=sys.stderr))  # fmt: skip
    result = scaling.merge(previous, result)
    out.mkdir(parents=True, exist_ok=True)
    write_text(md, scaling.to_markdown(result, command))
    write_text(js, json.dumps(result, indent=2))
    print(md.read_text())
    print(f"written {md} and {js}")
    return md
