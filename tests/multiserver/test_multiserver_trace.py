"""The ``alibaba_gpu_2023`` preset of ClusterMultiServer-v0 and ClusterGang-v0, built from the shared trace files
(skipped with a reason when they are absent): the mapping of cluster_envs.multiserver.alibaba, replayed
arrivals, agent episodes and the errors for a missing folder, file or column."""

from __future__ import annotations

import csv
import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.eval.harness import rollout
from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE, load_gpu_trace
from cluster_envs.multiserver.alibaba import binding_share, trace_workload
from cluster_envs.multiserver.gang import GangInstance
from cluster_envs.multiserver.gang import binding_share as gang_binding_share
from cluster_envs.multiserver.model import MultiServerInstance, UtilityModel

PRESET = "alibaba_gpu_2023"
IDS = ("ClusterMultiServer-v0", "ClusterGang-v0")


def _pods(folder):
    with open(folder / POD_FILE, newline="") as handle:
        return list(csv.DictReader(handle))


def test_job_types_are_the_most_frequent_pod_shapes_and_arrive_in_creation_order(alibaba_trace_dir):
    """Ports and the arrival schedule against an independent reading of the pod CSV (csv module, no numpy)."""
    horizon, n_ports = 400, 5
    pods = _pods(alibaba_trace_dir)
    created = sorted(float(p["creation_time"]) for p in pods)
    start = created[int(np.floor(0.01 * (len(created) - 1)))]  # close to the 1 % quantile (interpolated there)
    in_window = [p for p in pods if float(p["creation_time"]) >= start]

    def shape(p):
        return (float(p["cpu_milli"]) / 1000, float(p["memory_mib"]) / 1024,
                float(p["num_gpu"]) * float(p["gpu_milli"]) / 1000)  # fmt: skip

    counts: dict[tuple, int] = {}
    for p in in_window:
        counts[shape(p)] = counts.get(shape(p), 0) + 1
    top = sorted(counts, key=lambda s: (-counts[s], s))[:n_ports]
    work = trace_workload(load_gpu_trace(alibaba_trace_dir), n_ports, 40, horizon, np.random.default_rng(0))
    assert work.schedule.shape == (horizon, n_ports)
    for port, s in enumerate(top):
        times = sorted(float(p["creation_time"]) for p in in_window if shape(p) == s)
        slots = np.flatnonzero(work.schedule[:, port])
        assert 1 <= slots.size <= len(times)  # several pods of a slot collapse into one job
        span = created[-1] - start
        first, last = (int((t - start) / span * horizon) for t in (times[0], times[-1]))
        assert abs(slots[0] - first) <= 1 and abs(slots[-1] - min(last, horizon - 1)) <= 1


def test_multiserver_preset_replays_the_trace(alibaba_trace_dir):
    env = gym.make(IDS[0], preset=PRESET, trace_dir=str(alibaba_trace_dir)).unwrapped
    inst = env.instance
    assert (inst.n_device_types, inst.n_ports, inst.n_servers) == (3, 8, 40)
    assert inst.schedule.shape == (env.config.horizon, inst.n_ports)
    np.testing.assert_allclose(inst.rho, inst.schedule.mean(axis=0))
    assert (inst.A >= 0).all() and (inst.A.max(axis=0) >= 1).all()
    assert (inst.A.max(axis=1) <= inst.c).all(), "alpha_sum: every channel fits the capacity alone"
    for seed in (0, 1):  # the arrivals are the trace's whatever the seed; the utilities are not
        obs, _ = env.reset(seed=seed)
        rewards = []
        for t in range(30):
            np.testing.assert_array_equal(obs["arrivals"], inst.schedule[t])
            obs, reward, *_ = env.step(np.ones(inst.n_edges, np.int8))
            rewards.append(reward)
        if seed == 0:
            first = rewards
    assert rewards != first


def test_channels_only_join_nodes_that_can_host_the_job(alibaba_trace_dir):
    trace = load_gpu_trace(alibaba_trace_dir)
    work = trace_workload(trace, 8, 40, 2000, np.random.default_rng(np.random.SeedSequence(0)))
    inst = gym.make(IDS[0], preset=PRESET, trace_dir=alibaba_trace_dir).unwrapped.instance
    assert work.hosts[inst.edges[:, 0], inst.edges[:, 1]].all()
    np.testing.assert_array_equal(inst.A, work.requests[:, inst.edges[:, 0]])


def test_gang_preset_uses_the_nodes_own_capacities(alibaba_trace_dir):
    env = gym.make(IDS[1], preset=PRESET, trace_dir=alibaba_trace_dir).unwrapped
    inst, cfg = env.instance, env.config
    counts = inst.n_tasks_of_port
    assert ((counts >= cfg.tasks_low) & (counts <= cfg.tasks_high)).all()
    work = trace_workload(load_gpu_trace(alibaba_trace_dir), cfg.n_ports, cfg.n_servers, cfg.horizon,
                          np.random.default_rng(np.random.SeedSequence(cfg.instance_seed)))  # fmt: skip
    np.testing.assert_array_equal(inst.server_cap, work.node_capacity)
    np.testing.assert_array_equal(inst.task_req, work.requests[:, inst.task_port])
    assert env._fits_alone(inst).all(), "an arm joins a node that can host its task"


# ESDP-gang solves MILPs every slot (about 1 s per slot here): its episode is short
@pytest.mark.parametrize(
    ("env_id", "agents", "horizon"),
    [(IDS[0], ("esdp_aa", "lcf", "oracle"), 150), (IDS[1], ("esdp_gang", "oracle"), 12)],
)
def test_agent_episodes_on_the_trace(alibaba_trace_dir, env_id, agents, horizon):
    kwargs = {"preset": PRESET, "trace_dir": alibaba_trace_dir, "horizon": horizon}
    runs = {agent: rollout(env_id, agent, seed=0, env_kwargs=kwargs, record=()).metrics for agent in agents}
    for agent, metrics in runs.items():
        assert metrics["steps"] == horizon and metrics["regret"] >= -1e-9, agent
    oracle = runs["oracle"]
    assert oracle["regret"] == pytest.approx(0.0, abs=1e-9)
    assert all(oracle["expected_aou"] >= m["expected_aou"] - 1e-9 for m in runs.values())


@pytest.mark.parametrize("env_id", IDS)
def test_preset_without_trace_dir_says_what_to_pass(env_id):
    with pytest.raises(ValueError, match=f"trace_dir=.*{NODE_FILE}"):
        gym.make(env_id, preset=PRESET)
    with pytest.raises(ValueError, match="trace_dir is only read by"):
        gym.make(env_id, trace_dir="anywhere")


@pytest.mark.parametrize("env_id", IDS)
def test_a_folder_that_is_not_there_is_named(env_id, tmp_path):
    with pytest.raises(ValueError, match="is not a folder"):
        gym.make(env_id, preset=PRESET, trace_dir=tmp_path / "absent")


@pytest.mark.parametrize(("file", "column"), [(NODE_FILE, None), (POD_FILE, None), (NODE_FILE, "gpu"),
                                              (POD_FILE, "creation_time")])  # fmt: skip
def test_missing_file_or_column_names_the_file_and_the_columns(malformed_trace, file, column):
    folder = malformed_trace(file, column)
    with pytest.raises(ValueError) as err:
        gym.make(IDS[0], preset=PRESET, trace_dir=folder)
    message = str(err.value)
    assert message.startswith("trace_dir: ") and file in message and "expected a CSV with the columns" in message
    assert ("no file at" if column is None else f"lacks the column(s) ['{column}']") in message


def test_the_batched_env_refuses_replayed_arrivals(alibaba_trace_dir):
    with pytest.raises(ValueError, match="workload='alibaba_gpu_2023' is not supported by the batched env"):
        gym.make_vec(IDS[0], 2, vectorization_mode="vector_entry_point", preset=PRESET, trace_dir=alibaba_trace_dir)


def test_the_binding_preset_binds_in_the_share_it_states(alibaba_trace_dir):
    """``alibaba_gpu_2023_binding`` (documented: binds in 58 % of the slots) against the unscaled preset (never)."""
    shares = {
        preset: binding_share(gym.make(IDS[0], preset=preset, trace_dir=alibaba_trace_dir).unwrapped.instance)
        for preset in (PRESET, f"{PRESET}_binding")
    }
    assert shares[PRESET] == 0.0
    assert shares[f"{PRESET}_binding"] == pytest.approx(0.58, abs=0.005)


def test_binding_share_counts_the_slots_whose_arrivals_exceed_capacity():  # no trace needed
    """Two ports asking 2 and 3 units of one device type on capacity 4: only the slots where both arrive bind."""
    schedule = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], np.int8)
    inst = MultiServerInstance.from_arrays(2, 1, edges=[(0, 0), (1, 0)], A=[[2, 3]], c=[4], mu=[0.5, 0.5],
                                           sigma=[0.1, 0.1], cost=[0.0], rho=[0.5, 0.5])  # fmt: skip
    inst = dataclasses.replace(inst, schedule=schedule)
    assert binding_share(inst) == 0.25


def test_the_gang_binding_preset_binds_in_at_least_half_of_the_slots(alibaba_trace_dir):
    """``ClusterGang-v0``'s ``alibaba_gpu_2023_binding`` (at least half, as its page states; the share itself is on
    the generated traces page) against the unscaled preset (never)."""
    shares = {
        preset: gang_binding_share(gym.make(IDS[1], preset=preset, trace_dir=alibaba_trace_dir).unwrapped.instance)
        for preset in (PRESET, f"{PRESET}_binding")
    }
    assert shares[PRESET] == 0.0
    assert shares[f"{PRESET}_binding"] >= 0.5


def test_gang_binding_share_counts_contention_not_jobs_that_fit_nowhere():  # no trace needed
    """One server of capacity 2; port 0 asks 1 + 1 units, port 1 asks 2, port 2 asks 3 (fits nowhere even alone):
    only the slots where ports 0 and 1 both arrive bind."""
    task_port = np.array([0, 0, 1, 2])
    arms = np.array([(0, 0, 0), (0, 1, 0), (1, 2, 0), (2, 3, 0)])
    utility = UtilityModel.build(np.full(4, 0.5), np.full(4, 0.1), np.zeros((1, 4)), "affine_clip")
    schedule = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [1, 1, 1], [0, 0, 1]], np.int8)
    inst = GangInstance(3, 1, arms, task_port, np.array([2, 1, 1]), np.array([[1, 1, 2, 3]]), np.array([[2]]),
                        utility=utility, rho=np.full(3, 0.5), schedule=schedule)  # fmt: skip
    assert gang_binding_share(inst) == pytest.approx(2 / 5)


def test_capacity_scale_scales_every_server_and_is_validated():
    base = gym.make(IDS[1]).unwrapped.instance.server_cap
    assert np.array_equal(gym.make(IDS[1], capacity_scale=1.0).unwrapped.instance.server_cap, base)
    assert np.array_equal(gym.make(IDS[1], capacity_scale=2.5).unwrapped.instance.server_cap, np.floor(2.5 * base))
    for bad in (0.0, -1.0, float("nan"), "half"):
        with pytest.raises(ValueError, match="capacity_scale"):
            gym.make(IDS[1], capacity_scale=bad)
