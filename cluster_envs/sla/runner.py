"""Long-horizon runner (spec §3.7): steps an env's simulator directly, without Gymnasium's per-step overhead.

It feeds the agent exactly what ``ClusterSLA-v1`` would (paper observation mode), maps its actions with
the env's action mode and steps the same compiled :func:`advance`, so its results equal env stepping.
Agents that expose a compiled decision rule (``kernel``, ``params``, ``memory``) run entirely in one
compiled loop (the T = 3·10⁶ experiment takes seconds per policy); other agents run in a Python loop.

Kernel protocol: ``kernel(params, memory, active, queue, next_load) -> action``, where ``memory`` is the
agent's mutable state. ``queue`` and ``next_load`` are the hidden state Q_t and L_t: they are passed only
to privileged agents (offline oracles); online agents receive ``NO_HIDDEN_STATE``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from numba import njit

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.sla.config import ACTION_MODES
from cluster_envs.sla.env import ClusterSLAEnv
from cluster_envs.sla.kernel import (
    ACTIVE,
    CUM_WORK,
    DEFICIT,
    LOAD,
    QUEUE,
    QUEUE_L2,
    WORK,
    advance,
    allocate,
    to_allocation,
)
from cluster_envs.sla.simulator import feedback_vector

NO_HIDDEN_STATE = np.empty(0)


@dataclass
class Trajectory:
    """Recorded steps t (1-based) and, at those steps, per-user cumulative work W_t, instantaneous work w_t,
    SLA deficits D_t and queues Q_{t+1}, the queue 2-norm; and over every step, each user's largest deficit
    max_t D_t(i), plus the episode summary."""

    times: np.ndarray
    cum_work: np.ndarray
    work: np.ndarray
    deficit: np.ndarray
    queue: np.ndarray
    queue_l2: np.ndarray
    opt_cum_work: np.ndarray
    max_deficit: np.ndarray
    summary: dict[str, float]


class _Recorder:
    """Preallocated arrays for every ``record_every``-th step and the last one."""

    def __init__(self, horizon: int, n_users: int, record_every: int):
        self.times = np.unique(np.append(np.arange(record_every, horizon + 1, record_every), horizon))
        self.rows = np.zeros((4, self.times.size, n_users))  # cum_work, work, deficit, queue
        self.queue_l2 = np.zeros(self.times.size)


@cached_njit
def _record(times, rows, queue_l2, index, t, state, stats) -> int:
    if index < times.size and times[index] == t:
        rows[0, index] = state[CUM_WORK]
        rows[1, index] = state[WORK]
        rows[2, index] = state[DEFICIT]
        rows[3, index] = state[QUEUE]
        queue_l2[index] = stats[QUEUE_L2]
        return index + 1
    return index


@njit  # not cached: numba cannot cache a function that takes another compiled function as argument
def _run_compiled(kernel, params, memory, privileged, sim_arrays, mode, empty_tol, sla_tol, recorder_arrays):
    states, stats, series = sim_arrays
    state = states[0]
    times, rows, queue_l2 = recorder_arrays
    hidden = np.empty(0)
    index = 0
    for t in range(series.shape[0]):
        if privileged:
            action = kernel(params, memory, state[ACTIVE], state[QUEUE], series[t, 0, LOAD])
        else:
            action = kernel(params, memory, state[ACTIVE], hidden, hidden)
        allocate(action.reshape((1, action.size)), 0, mode, states)
        advance(states, stats, 0, series, t, empty_tol, sla_tol)
        index = _record(times, rows, queue_l2, index, t + 1, state, stats[0])


def simulate(agent, env: gym.Env, *, record_every: int = 1000) -> Trajectory:
    """Run ``agent`` (already reset) on ``env`` (already reset, at t = 0) until the horizon. ``env`` is a
    ``ClusterSLAEnv`` or ``gym.make("ClusterSLA-v1", ...)``: the runner steps the simulator under the wrappers."""
    env = getattr(env, "unwrapped", env)
    if not isinstance(env, ClusterSLAEnv):
        raise ValueError(f"env must be a ClusterSLA-v1 env (gym.make or ClusterSLAEnv), got {env!r}")
    cfg = env.config
    if cfg.observation_mode != "binary" or cfg.observation_format != "flat" or cfg.include_time:
        raise ValueError(
            "simulate() supports observation_mode='binary', observation_format='flat', include_time=False only"
        )
    if not isinstance(record_every, int) or record_every < 1:
        raise ValueError(f"record_every must be a positive integer, got {record_every!r}")
    sim = env.simulator
    if sim.t != 0:
        raise ValueError("simulate() needs an env just reset (t = 0)")
    mode = ACTION_MODES.index(cfg.action_mode)
    rec = _Recorder(sim.horizon, sim.problem.n_users, record_every)
    if hasattr(agent, "kernel"):
        sim_arrays = (sim.states, sim.statistics, sim.series)
        _run_compiled(agent.kernel, agent.params, agent.memory, bool(agent.privileged), sim_arrays, mode,
                      sim.empty_tol, sim.sla_tol, (rec.times, rec.rows, rec.queue_l2))  # fmt: skip
        sim.t = sim.horizon
    else:
        sla_bar = sim.problem.static_share
        obs = feedback_vector(sim.active, sim.alloc, sla_bar)
        index = 0
        while sim.t < sim.horizon:
            sim.step(to_allocation(np.asarray(agent.act(obs), dtype=np.float64), mode))
            obs = feedback_vector(sim.active, sim.alloc, sla_bar)
            index = _record(rec.times, rec.rows, rec.queue_l2, index, sim.t, sim.state, sim.stats)
    cum_work, work, deficit, queue = rec.rows
    return Trajectory(
        times=rec.times,
        cum_work=cum_work,
        work=work,
        deficit=deficit,
        queue=queue,
        queue_l2=rec.queue_l2,
        opt_cum_work=sim.opt_cum_work[rec.times - 1],
        max_deficit=sim.max_deficit.copy(),
        summary=sim.summary(),
    )
