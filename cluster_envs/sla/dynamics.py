"""The SLA-sharing model of Perez-Salazar et al. (paper 003) as plain numpy and numba, without gymnasium.

One divisible resource of capacity 1 is shared by N users. In step t the allocator plays h_t, the
load L_t arrives, and each user is served w_t = min(h_t, Q_t + L_t) (D1); the rest waits,
Q_{t+1} = Q_t + L_t - w_t (D2). The allocator's feedback is a_t = 1[Q_{t+1} > 0] (convention A1 of
specs/sla_mwu.md). The env (env.py) and the long-horizon runner (runner.py) both step
:class:`SLASimulator` through the compiled :func:`advance`, so there is one implementation of the physics.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

ACTION_MODES = ("normalize", "sub_simplex", "softmax")
REWARD_MODES = ("work", "work_sla", "work_sla_level", "neg_regret", "neg_regret_sla")

# Rows of the simulator's state matrix (one column per user) and entries of its statistics vector.
QUEUE, CUM_LOAD, CUM_WORK, WORK, ALLOC, ACTIVE, DEFICIT, PREVIOUS_DEFICIT, MAX_DEFICIT, MAX_RELAXED_DEFICIT = range(10)
STATE_ROWS = 10
QUEUE_L2, QUEUE_L2_SUM, QUEUE_L2_MAX, VIOLATION_STEPS = range(4)


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


@njit(cache=True)
def to_allocation(action: np.ndarray, mode: int) -> np.ndarray:
    """Map a finite float64 action of shape (N,) to an allocation h ≥ 0 with Σh ≤ 1 (spec §3.3).

    ``mode`` indexes ``ACTION_MODES``: 0 normalize (a⁺/Σa⁺, uniform if Σa⁺ = 0), 1 sub_simplex (clip to
    [0, 1], rescale only if Σ > 1: idle capacity allowed), 2 softmax.
    """
    out = np.empty(action.size)
    allocation_into(action, mode, out)
    return out


@njit(cache=True)
def allocation_into(action, mode, out) -> None:
    """:func:`to_allocation` written into ``out`` (no allocation: the batched step calls it per copy)."""
    n = action.size
    total = 0.0
    if mode == 2:
        top = action.max()
        for i in range(n):
            out[i] = math.exp(action[i] - top)
            total += out[i]
        for i in range(n):
            out[i] /= total
        return
    for i in range(n):
        out[i] = max(action[i], 0.0) if mode == 0 else min(max(action[i], 0.0), 1.0)
        total += out[i]
    if mode == 0 and total > 0 and not math.isfinite(total):  # entries near the float max overflow the sum
        top = action.max()
        total = 0.0
        for i in range(n):
            out[i] /= top
            total += out[i]
    if mode == 0 and total <= 0:
        for i in range(n):
            out[i] = 1.0 / n
    elif mode == 0 or total > 1.0:
        for i in range(n):
            out[i] /= total


@njit(cache=True)
def advance(state, stats, loads, static_cum, static_relaxed_cum, alloc, t, empty_tol, sla_tol) -> None:
    """Execute step t (0-based) with allocation ``alloc``: (D1)-(D2), feedback (F) and the evaluation trackers.

    Queues ≤ ``empty_tol`` count as empty (A2). The SLA deficit D_t = W'_t - W_t is measured against the
    precomputed static benchmark; its running maxima, the queue 2-norm and the count of steps with a
    deficit above ``sla_tol`` are kept for the episode summary.
    """
    l2 = 0.0
    violated = False
    for i in range(state.shape[1]):
        load = loads[i, t]
        demand = state[QUEUE, i] + load
        work = min(alloc[i], demand)
        queue = demand - work
        if queue <= empty_tol:
            queue = 0.0
        state[QUEUE, i] = queue
        state[WORK, i] = work
        state[ALLOC, i] = alloc[i]
        state[ACTIVE, i] = 1.0 if queue > 0.0 else 0.0
        state[CUM_LOAD, i] += load
        state[CUM_WORK, i] += work
        state[PREVIOUS_DEFICIT, i] = state[DEFICIT, i]
        deficit = static_cum[i, t] - state[CUM_WORK, i]
        state[DEFICIT, i] = deficit
        state[MAX_DEFICIT, i] = max(state[MAX_DEFICIT, i], deficit)
        state[MAX_RELAXED_DEFICIT, i] = max(
            state[MAX_RELAXED_DEFICIT, i], static_relaxed_cum[i, t] - state[CUM_WORK, i]
        )
        violated = violated or deficit > sla_tol
        l2 += queue * queue
    l2 = math.sqrt(l2)
    stats[QUEUE_L2] = l2
    stats[QUEUE_L2_SUM] += l2
    stats[QUEUE_L2_MAX] = max(stats[QUEUE_L2_MAX], l2)
    stats[VIOLATION_STEPS] += 1.0 if violated else 0.0


@njit(cache=True)
def step_reward(state, opt_cum, t, reward_mode, sla_bar, kappa, sla_tol) -> float:
    """The built-in reward of step t (1-based, after :func:`advance`); ``reward_mode`` indexes ``REWARD_MODES``.

    Σw_t, minus OPT(t) - OPT(t-1) for the ``neg_regret`` modes, minus κ Σ([D_t]⁺ - [D_{t-1}]⁺) for
    ``work_sla``/``neg_regret_sla`` or κ Σ_i s_i 1[D_t(i) > sla_tol] for ``work_sla_level``.
    """
    n = state.shape[1]
    reward = 0.0
    for i in range(n):
        reward += state[WORK, i]
    if reward_mode == 3 or reward_mode == 4:
        reward -= opt_cum[t - 1] - (opt_cum[t - 2] if t > 1 else 0.0)
    if reward_mode == 1 or reward_mode == 4:
        now = 0.0
        before = 0.0
        for i in range(n):
            now += max(state[DEFICIT, i], 0.0)
            before += max(state[PREVIOUS_DEFICIT, i], 0.0)
        reward -= kappa * (now - before)
    elif reward_mode == 2:
        level = 0.0
        for i in range(n):
            if state[DEFICIT, i] > sla_tol:
                level += sla_bar[i]
        reward -= kappa * level
    return reward


@njit(cache=True, inline="always")  # inlined per copy into batch_step_kernel: a call would cost more than the step
def env_step(state, stats, loads, static_cum, static_relaxed_cum, opt_cum, action, t, mode, reward_mode, kappa,
             empty_tol, sla_tol, sla_bar, obs) -> float:  # fmt: skip
    """One env step fused: allocation, :func:`advance`, the paper's observation into ``obs`` and the reward.

    Returns NaN, changing nothing, if ``action`` is not finite. ``reward_mode`` -1 (a callable reward,
    computed by the env) returns 0.
    """
    n = state.shape[1]
    for i in range(n):
        if not math.isfinite(action[i]):
            return np.nan
    alloc = state[ALLOC]  # h_t is written where advance records it anyway
    allocation_into(action, mode, alloc)
    advance(state, stats, loads, static_cum, static_relaxed_cum, alloc, t, empty_tol, sla_tol)
    for i in range(n):
        obs[i] = state[ACTIVE, i]
        obs[n + i] = alloc[i]
        obs[2 * n + i] = sla_bar[i]
    return 0.0 if reward_mode < 0 else step_reward(state, opt_cum, t + 1, reward_mode, sla_bar, kappa, sla_tol)


@functools.cache
def batch_step_kernel(mode: int, reward_mode: int):
    """The compiled batched step for one action mode and reward mode (indices as in :func:`env_step`).

    ``kernel(states, stats, loads, static_cum, static_relaxed_cum, opt_cum, actions, ts, stepping, kappa,
    empty_tol, sla_tol, sla_bar, obs, rewards)`` runs :func:`env_step` (inlined) for every copy b with
    ``stepping[b]``, advances ``ts`` and writes ``obs`` and ``rewards``. Per-copy state has the copy axis
    first; the per-step series (``loads``, ``static_cum``, ``static_relaxed_cum``: (T, B, N); ``opt_cum``:
    (T, B)) have time first, so that one step of the batch reads contiguous memory. The two modes are
    compile-time constants, so the other modes' branches are dropped (≈30% less time per copy); the price is
    a compilation (under a second) per process and pair, as numba cannot cache closures.
    """

    @njit
    def kernel(states, stats, loads, static_cum, static_relaxed_cum, opt_cum, actions, ts, stepping, kappa,
               empty_tol, sla_tol, sla_bar, obs, rewards):  # fmt: skip
        for b in range(states.shape[0]):
            if stepping[b]:
                rewards[b] = env_step(states[b], stats[b], loads[:, b, :].T, static_cum[:, b, :].T,
                                      static_relaxed_cum[:, b, :].T, opt_cum[:, b], actions[b], ts[b], mode,
                                      reward_mode, kappa, empty_tol, sla_tol, sla_bar[b], obs[b])  # fmt: skip
                ts[b] += 1

    return kernel


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
        self.t = 0
        self.state = np.zeros((STATE_ROWS, problem.n_users))
        self.state[ALLOC] = 1.0 / problem.n_users  # h_0 reported at reset
        self.stats = np.zeros(4)

    def step(self, alloc: np.ndarray) -> None:
        advance(self.state, self.stats, self.loads, self.static_cum_work, self.static_relaxed_cum_work, alloc,
                self.t, self.empty_tol, self.sla_tol)  # fmt: skip
        self.t += 1

    @property
    def horizon(self) -> int:
        return self.loads.shape[1]

    @property
    def next_load(self) -> np.ndarray:
        """L_t of the step about to be executed (privileged: only offline oracles read it)."""
        return self.loads[:, self.t]

    queue = property(lambda self: self.state[QUEUE], doc="Q_{t+1}")
    cum_load = property(lambda self: self.state[CUM_LOAD], doc="Σ_{τ≤t} L_τ")
    cum_work = property(lambda self: self.state[CUM_WORK], doc="W_t")
    work = property(lambda self: self.state[WORK], doc="w_t")
    alloc = property(lambda self: self.state[ALLOC], doc="h_t")
    active = property(lambda self: self.state[ACTIVE], doc="a_t = 1[Q_{t+1} > 0]")
    deficit = property(lambda self: self.state[DEFICIT], doc="D_t = W'_t - W_t")
    previous_deficit = property(lambda self: self.state[PREVIOUS_DEFICIT], doc="D_{t-1}")
    max_deficit = property(lambda self: self.state[MAX_DEFICIT], doc="max_{τ≤t} D_τ per user")
    queue_l2 = property(lambda self: float(self.stats[QUEUE_L2]), doc="‖Q_{t+1}‖₂")

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
        steps = max(self.t, 1)
        return {
            "total_work": total,
            "opt_total_work": self.opt_total_work,
            "opt_eps_total_work": opt_eps,
            "regret": self.opt_total_work - total,
            "work_ratio": total / self.opt_total_work if self.opt_total_work > 0 else 1.0,
            "max_sla_deficit": float(self.state[MAX_DEFICIT].max()),
            "max_sla_deficit_relaxed": float(self.state[MAX_RELAXED_DEFICIT].max()),
            "sla_violation_fraction": float(self.stats[VIOLATION_STEPS]) / steps,
            "final_queue_l2": self.queue_l2,
            "mean_queue_l2": float(self.stats[QUEUE_L2_SUM]) / steps,
            "max_queue_l2": float(self.stats[QUEUE_L2_MAX]),
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
