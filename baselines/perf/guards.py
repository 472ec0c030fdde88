"""Estimated against measured memory and time of the guarded solvers (cluster_envs.common.guards).

``python baselines/perf/guards.py [--cases knapsack gang approx]`` runs every case in a fresh process: it builds the
instance with the oracle off, asks the solver's estimate, runs the solve once and reports the wall time and the
growth of the peak resident memory (``ru_maxrss``) during the solve. Cases stay below the limits by design
(the instances above them are the ones the guards refuse). docs/robustness.md holds the table of a run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # run from a fresh clone without installing

CASES = {
    "knapsack": [
        {"preset": "default"},
        {"preset": "default", "edge_prob": 0.3},
        {"preset": "default", "edge_prob": 0.5},
        {"preset": "default", "edge_prob": 0.7},
        {"preset": "default", "edge_prob": 1.0},
        {"preset": "default", "edge_prob": 1.0, "n_device_types": 2, "capacity_beta": 1.0},
        {"preset": "default", "edge_prob": 1.0, "n_device_types": 1, "req_high": 5, "capacity_beta": 1000.0},
        {"preset": "default", "edge_prob": 0.3, "req_high": 3, "capacity_beta": 0.7},
    ],
    "gang": [
        {"preset": "default"},
        {"preset": "paper"},
        {"preset": "paper", "edge_prob": 0.5},
        {"preset": "paper", "edge_prob": 1.0},
        {"preset": "paper", "edge_prob": 1.0, "n_ports": 20, "n_servers": 100},
        {"preset": "paper", "edge_prob": 1.0, "n_ports": 20, "n_servers": 200, "tasks_high": 8},
        {"preset": "paper", "edge_prob": 0.3, "n_ports": 40, "n_servers": 100, "tasks_high": 8, "min_tasks": "half"},
    ],
    "approx": [
        {"preset": "common_deadline"},
        {"n_machines": 10, "horizon": 50, "load": 1.0, "lifetime_median": 10.0},
        {"n_machines": 20, "horizon": 100, "load": 2.0, "lifetime_median": 20.0},
        {"n_machines": 20, "horizon": 3, "load": 20.0, "lifetime_median": 1.0},
        {"n_machines": 20, "horizon": 3, "load": 50.0, "lifetime_median": 1.0},
    ],
}


def _knapsack(kwargs: dict):
    import gymnasium as gym

    from cluster_envs import register_envs
    from cluster_envs.multiserver import knapsack

    register_envs()

    inst = gym.make("ClusterMultiServer-v0", compute_regret=False, **kwargs).unwrapped.instance
    usable = inst.rho[inst.port_of_edge] > 0
    knapsack.solve(inst.v_tilde[:1], inst.A[:, :1].copy(), inst.c)  # compiled (or loaded) before the measurement
    return knapsack.estimate(inst.A, inst.c, usable=usable), lambda: knapsack.solve(
        inst.v_tilde, inst.A, inst.c, usable=usable
    )


def _gang(kwargs: dict):
    import gymnasium as gym

    from cluster_envs import register_envs
    from cluster_envs.multiserver import gang

    register_envs()

    inst = gym.make("ClusterGang-v0", compute_regret=False, **kwargs).unwrapped.instance
    ports = inst.rho > 0
    return gang.milp_estimate(inst), lambda: gang.gang_milp(inst.v_tilde, inst, ports)


def _approx(kwargs: dict):
    import gymnasium as gym

    from cluster_envs import register_envs
    from cluster_envs.approx import model

    register_envs()

    env = gym.make("ClusterApprox-v1", **{**kwargs, "compute_regret": False}).unwrapped
    env.reset(seed=0)
    inst, cfg = env._instance, env.config
    args = (cfg.utility, cfg.beta, inst.jobs, inst.means, inst.prices, cfg.horizon, cfg.oracle_kind)
    return model.oracle_estimate(inst.jobs, cfg.horizon, cfg.n_machines), lambda: model.opt_per_job(*args)


def measure(solver: str, kwargs: dict) -> dict:
    """One case in this process: estimate, then the solve's wall time and peak-RSS growth."""
    estimate, solve = {"knapsack": _knapsack, "gang": _gang, "approx": _approx}[solver](kwargs)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    solve()
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return {"size": estimate.size, "est_mib": estimate.memory / 2**20, "mib": grown / 2**20,
            "est_s": estimate.seconds, "s": seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: solver and kwargs as JSON, in a fresh process
    args = parser.parse_args()
    if args.one:
        solver, kwargs = json.loads(args.one)
        print(json.dumps(measure(solver, kwargs)))
        return
    print("| solver | kwargs | size | est. MiB | measured MiB | est. s | measured s |\n|---|---|---|---|---|---|---|")
    for solver in args.cases:
        for kwargs in CASES[solver]:
            out = subprocess.run([sys.executable, __file__, "--one", json.dumps([solver, kwargs])],
                                 capture_output=True, text=True, check=True)  # fmt: skip
            r = json.loads(out.stdout.strip().splitlines()[-1])
            shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            print(f"| {solver} | {shown} | {r['size']} | {r['est_mib']:.1f} | {r['mib']:.1f} | {r['est_s']:.3g} | "
                  f"{r['s']:.3g} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
