"""The SLA-sharing model of Perez-Salazar et al. (paper 003) as plain numpy, without gymnasium.

One divisible resource of capacity 1 is shared by N users. In step t the allocator plays h_t, the
load L_t arrives, and each user is served w_t = min(h_t, Q_t + L_t) (D1); the rest waits,
Q_{t+1} = Q_t + L_t - w_t (D2). The allocator's feedback is a_t = 1[Q_{t+1} > 0] (convention A1 of
specs/sla_mwu.md). The env (env.py) and the long-horizon runner (runner.py) both step
:class:`SLASimulator`, so there is one implementation of the physics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTION_MODES = ("normalize", "sub_simplex", "softmax")


@dataclass(frozen=True)
class SLAProblem:
    """The static public data an allocator is given: N, the SLA shares β and the horizon."""

    n_users: int
    sla: tuple[float, ...]
    horizon: int

    @property
    def sla_array(self) -> np.ndarray:
        return np.asarray(self.sla, dtype=np.float64)

    @property
    def static_share(self) -> np.ndarray:
        """s = β / max(1, Σβ): the static SLA benchmark's share (β̄ under over-commitment, A26)."""
        beta = self.sla_array
        return beta / max(1.0, float(beta.sum()))


def to_allocation(action: np.ndarray, mode: str) -> np.ndarray:
    """Map a finite float64 action of shape (N,) to an allocation h with h ≥ 0 and Σh ≤ 1 (spec §3.3)."""
    if mode == "softmax":
        z = np.exp(action - action.max())
        return z / z.sum()
    if mode == "normalize":
        a = np.maximum(action, 0.0)
        total = a.sum()
        return a / total if total > 0 else np.full(a.shape, 1.0 / a.size)
    a = np.clip(action, 0.0, 1.0)  # sub_simplex: idle capacity allowed
    total = a.sum()
    return a / total if total > 1.0 else a


def serve(alloc: np.ndarray, queue: np.ndarray, load: np.ndarray, empty_tol: float) -> tuple[np.ndarray, np.ndarray]:
    """One step of (D1)-(D2): return (work w_t, next queue Q_{t+1}); queues ≤ empty_tol count as empty (A2)."""
    demand = queue + load
    work = np.minimum(alloc, demand)
    next_queue = demand - work
    next_queue[next_queue <= empty_tol] = 0.0
    return work, next_queue


def capped_cumulative_work(loads: np.ndarray, capacity: float | np.ndarray) -> np.ndarray:
    """Cumulative work of a work-conserving server of rate ``capacity`` fed by ``loads``, for every prefix.

    ``loads`` has time on its last axis; ``capacity`` broadcasts against the leading axes. This is
    Proposition 2 of the paper, OPT_c(t) = min_{0≤s≤t} [Σ_{r≤s} ℓ_r + c (t - s)], evaluated for all t at
    once as c·t + cummin_s (S_s - c·s). Applied to the aggregate load it gives the offline optimum
    OPT_c(t); applied per user with c = s_i it gives the static SLA benchmark W'_t(i).
    """
    loads = np.asarray(loads, dtype=np.float64)
    horizon = loads.shape[-1]
    capacity = np.asarray(capacity, dtype=np.float64)
    steps = np.arange(horizon + 1, dtype=np.float64)
    cum = np.concatenate([np.zeros(loads.shape[:-1] + (1,)), np.cumsum(loads, axis=-1)], axis=-1)
    scaled_steps = capacity[..., None] * steps
    best = np.minimum.accumulate(cum - scaled_steps, axis=-1)
    return (scaled_steps + best)[..., 1:]


def feedback_vector(active: np.ndarray, alloc: np.ndarray, sla_bar: np.ndarray) -> np.ndarray:
    """The paper-faithful observation [a_t, h_t, β̄] as float32 (spec §3.2)."""
    return np.concatenate([active, alloc, sla_bar]).astype(np.float32)


class SLASimulator:
    """State of one episode: queues, cumulative work and the evaluation trackers, stepped by allocations.

    The offline optimum OPT_c(t) and the static benchmark W'_t are precomputed in closed form from the
    whole load matrix at construction, so that a step costs O(N).
    """

    def __init__(self, problem: SLAProblem, loads: np.ndarray, *, empty_tol: float, eps_ref: float, sla_tol: float):
        self.problem = problem
        self.loads = loads
        self.empty_tol = empty_tol
        self.sla_tol = sla_tol
        share = problem.static_share
        aggregate = loads.sum(axis=0)
        self.opt_cum_work = capped_cumulative_work(aggregate, 1.0)
        self.opt_eps_cum_work = capped_cumulative_work(aggregate, 1.0 - eps_ref)
        self.static_cum_work = capped_cumulative_work(loads, share)
        self.static_relaxed_cum_work = capped_cumulative_work(loads, (1.0 - 2.0 * eps_ref) * share)
        n = problem.n_users
        self.t = 0
        self.queue = np.zeros(n)
        self.cum_load = np.zeros(n)
        self.cum_work = np.zeros(n)
        self.work = np.zeros(n)
        self.alloc = np.full(n, 1.0 / n)
        self.active = np.zeros(n)
        self.deficit = np.zeros(n)
        self.previous_deficit = np.zeros(n)
        self.max_deficit = np.zeros(n)
        self.max_relaxed_deficit = np.zeros(n)
        self.queue_l2 = 0.0
        self.queue_l2_sum = 0.0
        self.queue_l2_max = 0.0
        self.violation_steps = 0

    @property
    def horizon(self) -> int:
        return self.loads.shape[1]

    @property
    def next_load(self) -> np.ndarray:
        """L_t of the step about to be executed (privileged: only offline oracles read it)."""
        return self.loads[:, self.t]

    def step(self, alloc: np.ndarray) -> None:
        load = self.loads[:, self.t]
        self.work, self.queue = serve(alloc, self.queue, load, self.empty_tol)
        self.alloc = alloc
        self.t += 1
        self.cum_load += load
        self.cum_work += self.work
        self.active = (self.queue > 0.0).astype(np.float64)
        self.previous_deficit = self.deficit
        self.deficit = self.static_cum_work[:, self.t - 1] - self.cum_work
        np.maximum(self.max_deficit, self.deficit, out=self.max_deficit)
        np.maximum(self.max_relaxed_deficit, self.relaxed_deficit, out=self.max_relaxed_deficit)
        self.queue_l2 = float(np.sqrt(self.queue @ self.queue))
        self.queue_l2_sum += self.queue_l2
        self.queue_l2_max = max(self.queue_l2_max, self.queue_l2)
        self.violation_steps += bool((self.deficit > self.sla_tol).any())

    @property
    def relaxed_deficit(self) -> np.ndarray:
        """D^ε_t: shortfall against the static policy with share (1 - 2 ε_ref) s (Theorem 4's form)."""
        return self.static_relaxed_cum_work[:, self.t - 1] - self.cum_work

    @property
    def total_work(self) -> float:
        return float(self.cum_work.sum())

    @property
    def opt_total_work(self) -> float:
        return float(self.opt_cum_work[self.t - 1]) if self.t else 0.0

    def summary(self) -> dict[str, float]:
        """Episode metrics up to the current step (the harness's per-episode result)."""
        opt_eps = float(self.opt_eps_cum_work[self.t - 1]) if self.t else 0.0
        total = self.total_work
        return {
            "total_work": total,
            "opt_total_work": self.opt_total_work,
            "opt_eps_total_work": opt_eps,
            "regret": self.opt_total_work - total,
            "work_ratio": total / self.opt_total_work if self.opt_total_work > 0 else 1.0,
            "max_sla_deficit": float(self.max_deficit.max()),
            "max_sla_deficit_relaxed": float(self.max_relaxed_deficit.max()),
            "sla_violation_fraction": self.violation_steps / max(self.t, 1),
            "final_queue_l2": self.queue_l2,
            "mean_queue_l2": self.queue_l2_sum / max(self.t, 1),
            "max_queue_l2": self.queue_l2_max,
        }


def windowed_sla_gap(
    loads: np.ndarray, start_queue: np.ndarray, work: np.ndarray, share: np.ndarray, tau: int
) -> np.ndarray:
    """r_i(t) of Sec. 4.2 [L434, L449] for every start t = 1..T-τ+1, shape (N, T-τ+1).

    r_i(t) is the work the static share s_i would do for user i over [t, t+τ) starting from the
    algorithm's start-of-step queue Q_t(i), minus the work the algorithm did there. Positive: Static
    would have been better in that window. ``start_queue[:, t-1]`` is Q_t and ``work[:, t-1]`` is w_t.
    """
    horizon = loads.shape[1]
    starts = horizon - tau + 1
    if starts < 1:
        raise ValueError(f"tau={tau} exceeds the horizon {horizon}")
    queue = start_queue[:, :starts].copy()
    static_work = np.zeros_like(queue)
    for k in range(tau):  # all windows advance together: O(N τ) vector operations of length T-τ+1
        demand = queue + loads[:, k : k + starts]
        served = np.minimum(share[:, None], demand)
        queue = demand - served
        static_work += served
    cum = np.concatenate([np.zeros((work.shape[0], 1)), np.cumsum(work, axis=1)], axis=1)
    return static_work - (cum[:, tau:] - cum[:, :starts])
