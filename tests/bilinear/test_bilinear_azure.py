"""ClusterBilinear-v0's ``azure_llm_2023`` preset from the shared copy of the Azure LLM inference 2023 trace
(skipped with a reason when it is absent): one job per request in the trace's order, at most one admitted per slot,
classes by service and size, a window per seed; the batched env replays the same windows; bad input refused."""

from __future__ import annotations

import shutil

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.eval.harness import rollout
from cluster_envs.bilinear.azure import SLOT_SECONDS, admitted_classes, binding_share, trace_arrivals
from cluster_envs.common.azure_llm import FILES, LLMTrace, load_llm_trace

ENV = "ClusterBilinear-v0"
PRESET = "azure_llm_2023"


def _admitted_by_loop(trace: LLMTrace, n_sizes: int, slot: float) -> np.ndarray:
    """The admission rule written out: each request in order takes the first free slot at or after its own."""
    classes, out, next_free = trace.service * n_sizes + trace.size_classes(n_sizes), {}, 0
    for arrival, job_class in zip(trace.arrival, classes, strict=True):
        slot_k = max(int(np.floor(arrival / slot)), next_free)
        out[slot_k], next_free = job_class, slot_k + 1
    admitted = np.full(next_free, -1)
    admitted[list(out)] = list(out.values())
    return admitted


def test_admission_keeps_every_request_in_order_one_per_slot():
    arrival = np.array([0.0, 0.01, 0.02, 0.35, 0.36, 0.9])  # three in slot 0, two in slot 3 (slots of 0.1 s)
    trace = LLMTrace(np.array([0, 1, 0, 1, 1, 0]), arrival, np.array([5.0, 1.0, 9.0, 2.0, 8.0, 3.0]))
    admitted = admitted_classes(trace, 1, 0.1)
    np.testing.assert_array_equal(admitted, [0, 1, 0, 1, 1, -1, -1, -1, -1, 0])
    np.testing.assert_array_equal(admitted, _admitted_by_loop(trace, 1, 0.1))


def test_the_trace_s_requests_are_the_jobs(azure_trace_dir):
    trace = load_llm_trace(azure_trace_dir)
    admitted = trace_arrivals(azure_trace_dir, 6).classes
    np.testing.assert_array_equal(admitted, _admitted_by_loop(trace, 3, SLOT_SECONDS))
    counts = np.bincount(admitted[admitted >= 0], minlength=6)
    np.testing.assert_array_equal(counts, np.bincount(trace.service * 3 + trace.size_classes(3), minlength=6))
    assert counts.sum() == trace.arrival.size  # no request lost


def test_preset_rates_are_the_trace_s_and_each_seed_replays_a_window(azure_trace_dir):
    env = gym.make(ENV, preset=PRESET, trace_dir=azure_trace_dir).unwrapped
    admitted = trace_arrivals(azure_trace_dir, 6)
    np.testing.assert_allclose(env.rho * env.mu, admitted.rates, rtol=1e-12)
    assert env.rho.sum() < sum(env.config.servers_per_class)  # stable (Assumption II.1)
    windows = {}
    for seed in (0, 1, 0):
        env.reset(seed=seed)
        window = env.simulator.arrivals
        assert window.size == env.config.horizon + 1
        starts = [s for s in range(admitted.classes.size - window.size + 1)
                  if np.array_equal(admitted.classes[s : s + window.size], window)]  # fmt: skip
        assert starts, "an episode's arrivals are consecutive slots of the admitted trace"
        windows.setdefault(seed, window)
        np.testing.assert_array_equal(windows[seed], window)  # the same seed, the same window
    assert not np.array_equal(windows[0], windows[1])


def test_batched_env_replays_the_single_env_s_windows(azure_trace_dir):
    kwargs = {"preset": PRESET, "trace_dir": azure_trace_dir, "horizon": 6, "info_level": "minimal"}
    native = gym.make_vec(ENV, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    sync = gym.make_vec(ENV, num_envs=2, vectorization_mode="sync", **kwargs)
    np.testing.assert_array_equal(native.reset(seed=3)[0], sync.reset(seed=3)[0])
    rng = np.random.default_rng(0)
    for _ in range(20):  # past two autoresets of each copy
        actions = rng.uniform(0, 1, (2, sync.single_action_space.shape[0])).astype(np.float32)
        for a, b in zip(native.step(actions)[:4], sync.step(actions)[:4], strict=True):
            np.testing.assert_array_equal(a, b)


def test_binding_share_is_the_fluid_backlog_s_busy_slots():
    mu = np.array([0.5, 0.25])  # mean work 2 and 4 slots on n = 3 servers
    arrivals = np.array([1, 1, -1, 0, -1, -1])  # backlog 1, 2, 0, 0, 0, 0
    assert binding_share(arrivals, mu, 3) == pytest.approx(2 / 6)


@pytest.mark.parametrize("agent", ["sabr", "greedy", "uniform", "random", "clairvoyant"])
def test_agents_play_the_preset(azure_trace_dir, agent):
    episode = rollout(ENV, agent, 0, env_kwargs={"preset": PRESET, "trace_dir": azure_trace_dir, "horizon": 60},
                      record=())  # fmt: skip
    assert np.isfinite(episode.metrics["regret_served"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "trace_dir=<folder with the Azure LLM"),
    ({"traffic_intensity": 2.0}, "traffic_intensity=2.0 with arrivals='azure_llm_2023'"),
    ({"num_job_classes": 5}, "num_job_classes=5 with arrivals='azure_llm_2023': allowed are multiples of 2"),
    ({"horizon": 10**6}, "horizon=1000000: the Azure LLM inference 2023 trace has"),
])  # fmt: skip
def test_bad_input_is_refused_with_what_is_allowed(azure_trace_dir, kwargs, message):
    kwargs = {"trace_dir": azure_trace_dir, **kwargs} if kwargs else {}
    with pytest.raises(ValueError, match=message):  # at construction
        gym.make(ENV, preset=PRESET, **kwargs)


def test_trace_dir_without_the_trace_arrivals_is_refused(azure_trace_dir):
    with pytest.raises(ValueError, match="trace_dir is only read by arrivals='azure_llm_2023'"):
        gym.make(ENV, trace_dir=azure_trace_dir)


def test_a_missing_column_names_the_file_and_column(azure_trace_dir, tmp_path):
    for file in FILES.values():
        shutil.copy(azure_trace_dir / file, tmp_path / file)
    broken = tmp_path / FILES["conv"]
    lines = broken.read_text().splitlines()
    broken.write_text("\n".join([lines[0].replace("GeneratedTokens", "Generated")] + lines[1:50]) + "\n")
    with pytest.raises(ValueError, match=f"{FILES['conv']}.*GeneratedTokens"):
        gym.make(ENV, preset=PRESET, trace_dir=tmp_path)


def test_binding_share_counts_no_backlog_at_an_exact_tie():
    # 22 jobs of mean work 1/0.22 bring exactly 100 = 25 slots of 4 servers: the backlog (0.55, 1.09, …, 12 after
    # slot 22, then 8, 4) is exactly 0 from slot 25 on, whatever the rounding of the sums of 1/0.22
    arrivals = np.array([0] * 22 + [-1] * 10)
    assert binding_share(arrivals, np.array([0.22]), 4) == pytest.approx(24 / 32)
