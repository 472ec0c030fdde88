"""A/B of ESDP's knapsack DP in one process: ``python baselines/perf/knapsack_ab.py OLD_KNAPSACK_PY [--slots 150]``.

``OLD_KNAPSACK_PY`` is another version of ``cluster_envs/multiserver/knapsack.py``, e.g.
``git show REV:cluster_envs/multiserver/knapsack.py > /tmp/knapsack_old.py``; it is imported under its own module
name next to this tree's, so both run in the same process on the same inputs. The script

1. checks that both give identical tables (values, feasibility) and chosen sets (every feasible budget's backtrack)
   on ``--instances`` random instances (1 to 3 types, up to 13 edges, integer and float values, idle edges);
2. times one ``solve`` of each, interleaved, median of ``--repeats`` thread-CPU timings, on the bench's paper-scale
   ESDP slot (``baselines.perf.steps.ESDP_DP_SCALE``) at t = 2,000 and 8,000, and on the state of a real literal-ESDP
   and ESDP-AA episode (``preset="default"``, the paper's sizes, instance and episode seed 0) after ``--slots``
   slots, checking equality again; and prints the OLD/NEW ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from statistics import median

import numpy as np

from cluster_envs.multiserver import knapsack


def load(path: str):
    spec = importlib.util.spec_from_file_location("knapsack_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["knapsack_old"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def same(old, args, kwargs) -> None:
    a, b = old.solve(*args, **kwargs), knapsack.solve(*args, **kwargs)
    budgets = np.flatnonzero(a.feasible)
    if not (np.array_equal(a.feasible, b.feasible) and np.array_equal(a.values, b.values)
            and np.array_equal(a.backtrack(budgets), b.backtrack(budgets))):  # fmt: skip
        raise AssertionError(f"the two versions differ on {args}, {kwargs}")


def random_instances(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    for trial in range(n):
        k, n_edges = rng.integers(1, 4), rng.integers(1, 14)
        A = rng.integers(0, 4, size=(k, n_edges))
        A[0] = np.maximum(A[0], 1)
        upsilon = rng.integers(0, 8, size=n_edges) * (trial % 7 != 0)
        usable = rng.random(n_edges) < 0.8
        if trial % 3 == 0:
            values, s_max = rng.random(n_edges), 0
        else:
            values = rng.integers(0, 2**40 if trial % 3 == 1 else 60, size=n_edges)
            s_max = int(rng.integers(0, upsilon.sum() + 3))
        yield (values, A, rng.integers(1, 12, size=k)), {"budget_weights": upsilon, "s_max": s_max, "usable": usable}


def slot_inputs(agent, usable=None):
    """``solve``'s arguments for the agent's next slot, as ``ESDP.act`` builds them."""
    xi, g = agent.schedule(agent.t + 1)
    upsilon, sigma2, _ = agent.integer_weights(xi, g)
    return (sigma2, agent.A, agent.c), {"budget_weights": upsilon, "s_max": xi * agent.m, "usable": usable}


def bench_state(t: int):
    from baselines.perf import steps as bench

    agent = bench.esdp_bench_agent()
    agent.t = t - 1
    return slot_inputs(agent)


def episode_state(agent_name: str, slots: int):
    from baselines.eval import harness

    kwargs = {"preset": "default", "horizon": 8000, "instance_seed": 0, "info_level": "minimal"}
    env, agent, observation = harness.start("ClusterMultiServer-v0", agent_name, 0, env_kwargs=kwargs)
    for _ in range(slots):
        observation, *_ = env.step(agent.act(observation))
    usable = np.asarray(observation["edge_mask"], bool) if agent.arrival_aware else None
    return slot_inputs(agent, usable)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("--instances", type=int, default=400)
    parser.add_argument("--slots", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    old = load(args.old)
    for case in random_instances(args.instances):
        same(old, *case)
    print(f"{args.instances} random instances: identical tables and chosen sets")
    states = {f"bench slot, t = {t}": bench_state(t) for t in (2000, 8000)}
    for name in ("esdp", "esdp_aa"):
        states[f"{name}, paper preset seed 0, t = {args.slots + 1}"] = episode_state(name, args.slots)
    print("| state | old ms | new ms | old/new |\n|---|---:|---:|---:|")
    for label, (solve_args, kwargs) in states.items():
        same(old, solve_args, kwargs)  # also compiles both
        seconds = {"old": [], "new": []}
        for _ in range(args.repeats):
            for side, module in (("old", old), ("new", knapsack)):
                begin = time.thread_time()
                module.solve(*solve_args, **kwargs)
                seconds[side].append(time.thread_time() - begin)
        o, n = median(seconds["old"]), median(seconds["new"])
        print(f"| {label} | {1e3 * o:.1f} | {1e3 * n:.1f} | {o / n:.2f} |", flush=True)


if __name__ == "__main__":
    main()
