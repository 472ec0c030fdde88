"""Long-horizon runner (spec §3.7): steps an env's simulator directly, without Gymnasium's per-step overhead.

It feeds the agent exactly the observations ``ClusterSLA-v0`` would (paper observation mode) and maps its
actions with the env's action mode, on the same :class:`SLASimulator`, so its results equal env stepping;
it records every ``record_every``-th step, which keeps T = 3·10⁶ runs small in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_envs.sla.dynamics import feedback_vector, to_allocation
from cluster_envs.sla.env import ClusterSLAEnv


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


def simulate(agent, env: ClusterSLAEnv, *, record_every: int = 1000) -> Trajectory:
    """Run ``agent`` (already reset) on ``env`` (already reset) until the horizon."""
    cfg = env.config
    if cfg.obs_mode != "binary" or cfg.obs_format != "box" or cfg.include_time:
        raise ValueError("simulate() supports obs_mode='binary', obs_format='box', include_time=False only")
    if record_every < 1:
        raise ValueError(f"record_every must be a positive integer, got {record_every}")
    sim = env.simulator
    sla_bar = sim.problem.static_share
    obs = feedback_vector(sim.active, sim.alloc, sla_bar)
    records: dict[str, list] = {k: [] for k in ("times", "cum_work", "work", "deficit", "queue", "queue_l2")}
    while sim.t < sim.horizon:
        sim.step(to_allocation(np.asarray(agent.act(obs), dtype=np.float64), cfg.action_mode))
        obs = feedback_vector(sim.active, sim.alloc, sla_bar)
        if sim.t % record_every == 0 or sim.t == sim.horizon:
            for key, value in (
                ("times", sim.t),
                ("cum_work", sim.cum_work.copy()),
                ("work", sim.work),
                ("deficit", sim.deficit),
                ("queue", sim.queue),
                ("queue_l2", sim.queue_l2),
            ):
                records[key].append(value)
    arrays = {k: np.asarray(v) for k, v in records.items()}
    return Trajectory(
        **arrays,
        opt_cum_work=sim.opt_cum_work[arrays["times"] - 1],
        max_deficit=sim.max_deficit.copy(),
        summary=sim.summary(),
    )
