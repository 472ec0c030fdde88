"""The ``alibaba_gpu_2023`` preset of ClusterSLA-v1 from the shared trace files (skipped with a reason when they
are absent): tenants are QoS classes, loads their GPU demand per slot, SLA shares their mean demand; agent
episodes; errors for a missing folder, file or column and for a wrong number of users."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.eval.harness import rollout
from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE, load_gpu_trace
from cluster_envs.sla.config import SLAConfig
from cluster_envs.sla.model import alibaba_gpu_loads

ENV = "ClusterSLA-v1"
PRESET = "alibaba_gpu_2023"


def test_loads_are_the_qos_classes_gpu_demand(alibaba_trace_dir):
    """Summed over the window, a class's load is the GPU-time its pods hold in it (an independent sum per pod)."""
    horizon = 500
    loads = alibaba_gpu_loads(alibaba_trace_dir, 4, horizon)
    start, length = load_gpu_trace(alibaba_trace_dir).window(horizon)
    end = start + horizon * length
    held: dict[str, float] = {}
    with open(alibaba_trace_dir / POD_FILE, newline="") as handle:
        for pod in csv.DictReader(handle):
            alive = min(float(pod["deletion_time"]), end) - max(float(pod["creation_time"]), start)
            gpus = float(pod["num_gpu"]) * float(pod["gpu_milli"]) / 1000
            held[pod["qos"]] = held.get(pod["qos"], 0.0) + gpus * max(alive, 0.0) / length
    expected = sorted(held.values(), reverse=True)  # users: classes by descending total demand
    np.testing.assert_allclose(loads.sum(axis=1), expected, rtol=1e-9)
    assert (loads >= 0).all()


def test_preset_rescales_the_trace_and_takes_sla_from_its_history(alibaba_trace_dir):
    env = gym.make(ENV, preset=PRESET, trace_dir=alibaba_trace_dir, horizon=800).unwrapped
    env.reset(seed=0)
    first = env.loads.copy()
    history, raw = np.split(alibaba_gpu_loads(alibaba_trace_dir, 4, 1600, history=800), 2, axis=1)
    np.testing.assert_allclose(first, raw * 0.99 / raw.sum(axis=0).mean())  # scenario_kwargs rho = 0.99
    means = history.mean(axis=1)  # the previous period's mean demand, not the replayed window's
    np.testing.assert_allclose(env.problem.sla, means / means.sum())
    env.reset(seed=1)
    np.testing.assert_array_equal(env.loads, first)  # the trace, whatever the seed


def test_agent_episodes_on_the_trace(alibaba_trace_dir):
    kwargs = {"preset": PRESET, "trace_dir": alibaba_trace_dir, "horizon": 600}
    runs = {a: rollout(ENV, a, seed=0, env_kwargs=kwargs, record=()).metrics for a in ("mwu", "static", "owm")}
    for agent, metrics in runs.items():
        assert metrics["steps"] == 600, agent
        assert np.isfinite(list(metrics.values())).all(), agent


def test_preset_without_trace_dir_says_what_to_pass():
    with pytest.raises(ValueError, match=f"trace_dir=.*{NODE_FILE}"):
        gym.make(ENV, preset=PRESET)
    with pytest.raises(ValueError, match="trace_dir is only read by"):
        gym.make(ENV, trace_dir="anywhere")


def test_the_config_checks_trace_dir_against_the_scenario_before_any_load_generator():
    with pytest.raises(ValueError, match=f"trace_dir=.*{NODE_FILE}"):
        SLAConfig(scenario=PRESET, n_users=4, sla="mean")
    with pytest.raises(ValueError, match="trace_dir is only read by"):
        SLAConfig(scenario=lambda rng, n_users, horizon: None, trace_dir="anywhere")  # a user scenario too


def test_users_must_match_the_qos_classes(alibaba_trace_dir):
    with pytest.raises(ValueError, match=r"n_users=3 but .* has 4 QoS classes"):
        gym.make(ENV, preset=PRESET, trace_dir=alibaba_trace_dir, n_users=3)


@pytest.mark.parametrize(("file", "column"), [(POD_FILE, None), (POD_FILE, "qos"), (NODE_FILE, "cpu_milli")])
def test_missing_file_or_column_names_the_file_and_the_columns(malformed_trace, file, column):
    with pytest.raises(ValueError) as err:
        gym.make(ENV, preset=PRESET, trace_dir=malformed_trace(file, column))
    message = str(err.value)
    assert message.startswith("trace_dir: ") and file in message and "expected a CSV with the columns" in message
    assert ("no file at" if column is None else f"lacks the column(s) ['{column}']") in message
