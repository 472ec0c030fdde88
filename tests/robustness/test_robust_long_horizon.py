"""Long horizons for every id: memory stays flat as the episode goes on.

One episode of ``steps`` steps (``horizon=steps`` where the env has that kwarg, else repeated episodes of
the default preset) under random actions from a pre-drawn pool. The run is cut into tenths; the memory after the
last is compared with the memory after the second (the first tenth warms caches up). Each tenth's CPU time is
printed, not asserted: on a shared machine a tenth's time moves with the other processes (a slowdown of the step
over an episode is a benchmark's question, ``cluster-envs bench``). The fast variant (10^4 steps, fewer for an
env too slow for ~2 s) measures Python and numpy allocations with tracemalloc; the slow one (10^6 steps,
``-m slow``) measures the process's resident set size.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from .robust_common import IDS, config_fields, sample_action

FAST_STEPS, SLOW_STEPS = 9_960, 999_960  # ≈ 10^4 and 10^6, multiples of 60 (ClusterSLA's scenario has six periods)
FAST_CPU_SECONDS = 2.0  # the default run's budget for one id
POOL = 997  # distinct actions, cycled (a prime, so the cycle does not line up with a tenth)


def _rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


def _traced_bytes() -> int:
    return tracemalloc.get_traced_memory()[0]


def _make_long(env_id: str, steps: int) -> gym.Env:
    """One episode of ``steps`` steps where the env takes that horizon, else the default preset."""
    if any(f.name == "horizon" for f in config_fields(gym.make(env_id))):
        try:
            return gym.make(env_id, horizon=steps)
        except ValueError:
            pass  # the env restricts its horizon (e.g. to whole periods): fall back to repeated episodes
    return gym.make(env_id)


def _run(env_id: str, steps: int, trace: bool) -> tuple[list[float], list[int]]:
    """CPU seconds and memory (tracemalloc, or RSS) after each tenth of ``steps`` random steps."""
    env = _make_long(env_id, steps)
    rng = np.random.default_rng(0)
    pool = [sample_action(env.action_space, rng) for _ in range(POOL)]
    env.reset(seed=0)
    env.step(pool[0])  # compile / warm up before the clock starts
    if trace:
        tracemalloc.start()
    times, mem = [], []
    try:
        for tenth in range(10):
            start = time.process_time()
            for t in range(max(1, tenth * steps // 10), (tenth + 1) * steps // 10):
                _, _, terminated, truncated, _ = env.step(pool[t % POOL])
                if (terminated or truncated) and t < steps - 1:  # no reset after the last step: not measured
                    env.reset()
            times.append(time.process_time() - start)
            mem.append(_traced_bytes() if trace else _rss_bytes())
    finally:
        if trace:
            tracemalloc.stop()
    env.close()
    return times, mem


def _check(env_id: str, times: list[float], mem: list[int], max_growth: int) -> None:
    growth = mem[-1] - mem[1]
    print(f"{env_id}: CPU s per tenth {[round(x, 2) for x in times]}; memory growth {growth / 1e6:+.3f} MB")
    assert growth <= max_growth, f"{env_id}: memory grew {growth / 1e6:.2f} MB after warm-up ({mem})"


def _fast_steps(env_id: str) -> int:
    """Up to 10^4 steps, fewer (a multiple of 60, at least 1200) where they would take over FAST_CPU_SECONDS."""
    env = gym.make(env_id)
    rng = np.random.default_rng(1)
    actions = [sample_action(env.action_space, rng) for _ in range(60)]
    env.reset(seed=1)
    env.step(actions[0])
    tracemalloc.start()
    start = time.process_time()
    for action in actions:
        if any(env.step(action)[2:4]):
            env.reset()
    per_step = (time.process_time() - start) / len(actions)
    tracemalloc.stop()
    return int(min(FAST_STEPS, max(1200, FAST_CPU_SECONDS / per_step)) // 60 * 60)


@pytest.mark.parametrize("env_id", IDS)
def test_long_episode_flat_memory(env_id):
    times, mem = _run(env_id, _fast_steps(env_id), trace=True)
    _check(env_id, times, mem, max_growth=256 * 1024)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_million_steps_flat_memory(env_id):
    times, mem = _run(env_id, SLOW_STEPS, trace=False)
    _check(env_id, times, mem, max_growth=16 * 2**20)
