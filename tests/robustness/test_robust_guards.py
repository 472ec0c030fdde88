"""Resource guards of the exact oracles and benchmarks (cluster_envs.common.guards, issue 19).

Oversized oracles are refused at construction, before any large allocation, with a message naming the keywords;
every preset stays under the limits; the knapsack DP's memory estimate matches what the solve allocates."""

from __future__ import annotations

import importlib
import tracemalloc

import gymnasium as gym
import pytest

from cluster_envs.approx.model import oracle_estimate
from cluster_envs.common import guards
from cluster_envs.multiserver import knapsack

OVERSIZED = [  # the findings: 40 GiB (knapsack), ~3 s per step (knapsack), 76 GiB (SLSQP)
    ("ClusterMultiServer-v0", {"edge_prob": 1.0, "req_high": 5, "capacity_beta": 1000.0}, "compute_regret=False"),
    ("ClusterMultiServer-v0", {"preset": "default", "edge_prob": 1.0}, "compute_regret=False"),
    ("ClusterGang-v0", {"preset": "paper", "edge_prob": 1.0, "n_ports": 20, "n_servers": 200, "tasks_high": 8},
     "compute_regret=False"),
    ("ClusterApprox-v1", {"compute_regret": True, "load": 1000.0, "lifetime_median": 1.0, "horizon": 3},
     "compute_regret=False"),
]  # fmt: skip


@pytest.mark.parametrize(("env_id", "kwargs", "off"), OVERSIZED)
def test_oversized_oracle_refused_at_construction_before_allocating(env_id, kwargs, off):
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="would need about") as refused:
            gym.make(env_id, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < guards.MEMORY_LIMIT / 8, f"{peak / 2**20:.0f} MiB allocated before the refusal"
    message = str(refused.value)
    assert off in message and ("n_servers" in message or "n_machines" in message), message
    # the same configuration with the oracle off runs
    env = gym.make(env_id, **{**kwargs, off.split("=")[0]: False})
    env.reset(seed=0)
    env.step(env.action_space.sample())


GUARDED = ["ClusterMultiServer-v0", "ClusterGang-v0", "ClusterApprox-v1", "ClusterApproxSingleJob-v0"]
PRESETS = [(env_id, preset) for env_id in GUARDED for preset in type(gym.make(env_id).unwrapped).presets]


@pytest.mark.parametrize(("env_id", "preset"), PRESETS)
def test_every_preset_is_under_the_limits(env_id, preset, request):
    """With its oracle on (the ClusterApprox presets with their own ``compute_regret``), and the estimate a
    quarter of the limits at most (a margin against instance-to-instance variation). A preset that reads a trace
    (``TRACE_PRESETS`` of the config module) runs on the shared one, or skips."""
    config_module = importlib.import_module(type(gym.make(env_id).unwrapped.config).__module__)
    data = {}
    if preset in getattr(config_module, "TRACE_PRESETS", ()):
        data["trace_dir"] = request.getfixturevalue("alibaba_trace_dir")
    env = gym.make(env_id, preset=preset, **data).unwrapped
    if env_id in ("ClusterMultiServer-v0", "ClusterGang-v0") and not env.config.compute_regret:  # production
        with pytest.raises(ValueError, match="regret oracle"):  # off because the guard refuses it at this size
            gym.make(env_id, preset=preset, compute_regret=True)
        return
    env.reset(seed=0)
    if env_id in ("ClusterMultiServer-v0", "ClusterGang-v0"):
        estimate, time_limit = env._oracle_estimate(), guards.ORACLE_TIME_LIMIT
    elif env.config.compute_regret:
        estimate = oracle_estimate(env._instance.jobs, env.config.horizon, env.config.n_machines)
        time_limit = guards.EPISODE_ORACLE_TIME_LIMIT
    else:
        return
    assert estimate.memory < guards.MEMORY_LIMIT / 4 and estimate.seconds < time_limit / 4, estimate


@pytest.mark.parametrize(
    "kwargs",
    [
        {"preset": "default", "edge_prob": 0.3},
        {"preset": "default", "edge_prob": 1.0, "n_device_types": 2, "capacity_beta": 1.0},
        {"preset": "small", "n_device_types": 1, "req_high": 4},
    ],
)
def test_knapsack_memory_estimate_matches_the_solve(kwargs):
    """Traced peak of a solve (numpy's value table and take bits; the compiled reach bounds are not traced, so the
    instances keep them small) within 10% of the estimate."""
    inst = gym.make("ClusterMultiServer-v0", compute_regret=False, **kwargs).unwrapped.instance
    estimate = knapsack.estimate(inst.A, inst.c)
    knapsack.solve(inst.v_tilde, inst.A, inst.c)  # compiled first: the compiler's allocations are not the solve's
    tracemalloc.start()
    try:
        knapsack.solve(inst.v_tilde, inst.A, inst.c)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.9 * estimate.memory <= peak + 2**16 and peak <= 1.1 * estimate.memory + 2**16, (peak, estimate)


def test_approx_benchmark_is_checked_again_at_reset(monkeypatch):
    """A non-fixed instance is redrawn each reset: the drawn one is checked before the episode changes."""
    env = gym.make("ClusterApprox-v1", preset="common_deadline", horizon=50).unwrapped
    obs, _ = env.reset(seed=1)
    monkeypatch.setattr("cluster_envs.approx.env.EPISODE_ORACLE_TIME_LIMIT", 0.0)
    instance = env._instance
    with pytest.raises(ValueError, match="compute_regret=False"):
        env.reset(seed=2)
    assert env._instance is instance  # the previous episode's state is untouched
    monkeypatch.undo()
    env.reset(seed=2)


def test_check_names_the_estimate_and_the_limits():
    estimate = guards.Estimate(3 * 2**30, 0.5, "one size")
    with pytest.raises(ValueError, match=r"solver would need about 3 GiB and 0\.5 s per solve \(one size\); the "
                       r"limits are 2 GiB and 1 s \(cluster_envs\.common\.guards\)\. remedy"):  # fmt: skip
        guards.check(estimate, "solver", "remedy", memory_limit=2 * 2**30, time_limit=1.0)
    guards.check(estimate, "solver", "remedy", memory_limit=4 * 2**30, time_limit=1.0)  # under both: no error
    with pytest.raises(ValueError, match="0.5 s"):
        guards.check(estimate, "solver", "remedy", memory_limit=4 * 2**30, time_limit=0.25)
