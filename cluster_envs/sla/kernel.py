"""The SLA-sharing model of Perez-Salazar et al. (paper 003) as plain numpy and numba, without gymnasium.

One divisible resource of capacity 1 is shared by N users. In step t the allocator plays h_t, the
load L_t arrives, and each user is served w_t = min(h_t, Q_t + L_t) (D1); the rest waits,
Q_{t+1} = Q_t + L_t - w_t (D2). The allocator's feedback is a_t = 1[Q_{t+1} > 0] (convention A1 of
docs/specs/sla_mwu.md). The env (env.py) and the long-horizon runner (runner.py) both step
:class:`SLASimulator` through the compiled :func:`advance`, so there is one implementation of the physics.
"""

from __future__ import annotations

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
# The per-step series the step reads, stacked on one axis: L_t, W'_t and the relaxed W'^ε_t.
LOAD, STATIC_CUM, STATIC_RELAXED_CUM = range(3)


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


# The step functions below index batch arrays with a copy index b: per-copy state (B, ...), per-step series
# time-major, (T, B, 3, N) stacked as LOAD, STATIC_CUM, STATIC_RELAXED_CUM, and OPT (T, B). The single env and the
# runner are batches of one, the vector env a batch of B. Indexing beats per-copy views: inside a compiled loop over
# 4,096 copies, a view and a call cost several times the arithmetic; fewer array arguments also dispatch faster.


def to_allocation(action: np.ndarray, mode: int) -> np.ndarray:
    """Map a finite float64 action of shape (N,) to an allocation h ≥ 0 with Σh ≤ 1 (spec §3.3).

    ``mode`` indexes ``ACTION_MODES``: 0 normalize (a⁺/Σa⁺, uniform if Σa⁺ = 0), 1 sub_simplex (clip to
    [0, 1], rescale only if Σ > 1: idle capacity allowed), 2 softmax.
    """
    states = np.empty((1, STATE_ROWS, action.size))
    allocate(np.ascontiguousarray(action, dtype=np.float64).reshape(1, -1), 0, mode, states)
    return states[0, ALLOC].copy()


@njit(cache=True, inline="always")
def row_max(values, b) -> float:
    """max(values[b]) without a view (see the note above)."""
    top = values[b, 0]
    for i in range(1, values.shape[1]):
        top = max(top, values[b, i])
    return top


@njit(cache=True, inline="always")
def allocate(actions, b, mode, states) -> None:
    """:func:`to_allocation` of ``actions[b]`` written into ``states[b, ALLOC]``."""
    n = actions.shape[1]
    total = 0.0
    if mode == 2:
        top = row_max(actions, b)
        for i in range(n):
            states[b, ALLOC, i] = math.exp(actions[b, i] - top)
            total += states[b, ALLOC, i]
        for i in range(n):
            states[b, ALLOC, i] /= total
        return
    for i in range(n):
        states[b, ALLOC, i] = max(actions[b, i], 0.0) if mode == 0 else min(max(actions[b, i], 0.0), 1.0)
        total += states[b, ALLOC, i]
    if mode == 0 and total > 0 and not math.isfinite(total):  # entries near the float max overflow the sum
        top = row_max(actions, b)
        total = 0.0
        for i in range(n):
            states[b, ALLOC, i] /= top
            total += states[b, ALLOC, i]
    if mode == 0 and total <= 0:
        for i in range(n):
            states[b, ALLOC, i] = 1.0 / n
    elif mode == 0 or total > 1.0:
        for i in range(n):
            states[b, ALLOC, i] /= total


@njit(cache=True, inline="always")
def advance(states, stats, b, series, t, empty_tol, sla_tol) -> None:
    """Execute step t (0-based) of copy b with the allocation in ``states[b, ALLOC]``: (D1)-(D2), feedback (F)
    and the evaluation trackers.

    Queues ≤ ``empty_tol`` count as empty (A2). The SLA deficit D_t = W'_t - W_t is measured against the
    precomputed static benchmark; its running maxima, the queue 2-norm and the count of steps with a
    deficit above ``sla_tol`` are kept for the episode summary.
    """
    l2 = 0.0
    violated = False
    for i in range(states.shape[2]):
        load = series[t, b, LOAD, i]
        demand = states[b, QUEUE, i] + load
        work = min(states[b, ALLOC, i], demand)
        queue = demand - work
        if queue <= empty_tol:
            queue = 0.0
        states[b, QUEUE, i] = queue
        states[b, WORK, i] = work
        states[b, ACTIVE, i] = 1.0 if queue > 0.0 else 0.0
        states[b, CUM_LOAD, i] += load
        states[b, CUM_WORK, i] += work
        states[b, PREVIOUS_DEFICIT, i] = states[b, DEFICIT, i]
        deficit = series[t, b, STATIC_CUM, i] - states[b, CUM_WORK, i]
        states[b, DEFICIT, i] = deficit
        states[b, MAX_DEFICIT, i] = max(states[b, MAX_DEFICIT, i], deficit)
        states[b, MAX_RELAXED_DEFICIT, i] = max(
            states[b, MAX_RELAXED_DEFICIT, i], series[t, b, STATIC_RELAXED_CUM, i] - states[b, CUM_WORK, i]
        )
        violated = violated or deficit > sla_tol
        l2 += queue * queue
    l2 = math.sqrt(l2)
    stats[b, QUEUE_L2] = l2
    stats[b, QUEUE_L2_SUM] += l2
    stats[b, QUEUE_L2_MAX] = max(stats[b, QUEUE_L2_MAX], l2)
    stats[b, VIOLATION_STEPS] += 1.0 if violated else 0.0


@njit(cache=True, inline="always")
def step_reward(states, b, opt_cum, t, reward_mode, sla_bar, kappa, sla_tol) -> float:
    """The built-in reward of copy b's step t (1-based, after :func:`advance`); ``reward_mode`` indexes
    ``REWARD_MODES``.

    Σw_t, minus OPT(t) - OPT(t-1) for the ``neg_regret`` modes, minus κ Σ([D_t]⁺ - [D_{t-1}]⁺) for
    ``work_sla``/``neg_regret_sla`` or κ Σ_i s_i 1[D_t(i) > sla_tol] for ``work_sla_level``.
    """
    n = states.shape[2]
    reward = 0.0
    for i in range(n):
        reward += states[b, WORK, i]
    if reward_mode == 3 or reward_mode == 4:
        reward -= opt_cum[t - 1, b] - (opt_cum[t - 2, b] if t > 1 else 0.0)
    if reward_mode == 1 or reward_mode == 4:
        now = 0.0
        before = 0.0
        for i in range(n):
            now += max(states[b, DEFICIT, i], 0.0)
            before += max(states[b, PREVIOUS_DEFICIT, i], 0.0)
        reward -= kappa * (now - before)
    elif reward_mode == 2:
        level = 0.0
        for i in range(n):
            if states[b, DEFICIT, i] > sla_tol:
                level += sla_bar[b, i]
        reward -= kappa * level
    return reward


@njit(cache=True)
def step_copies(states, stats, series, opt_cum, actions, ts, stepping, mode, reward_mode, kappa, empty_tol, sla_tol,
                sla_bar, obs, rewards) -> None:  # fmt: skip
    """One env step of every copy b with ``stepping[b]``, fused: allocation, :func:`advance`, the paper's
    observation into ``obs[b]``, the reward into ``rewards[b]``, and ``ts[b] += 1``.

    The single env calls it with a batch of one, the vector env with its B copies: one implementation of the
    step. A copy whose ``actions[b]`` is not finite gets reward NaN and is left unchanged. ``mode`` and
    ``reward_mode`` index ``ACTION_MODES`` and ``REWARD_MODES``; ``reward_mode`` -1 (a callable reward, computed
    by the env) gives 0. The body is written out here rather than in an inlined per-copy function: inlining a
    function with this many array arguments costs about three times the step (reference counting per argument).
    """
    n = states.shape[2]
    for b in range(states.shape[0]):
        if not stepping[b]:
            continue
        finite = True
        for i in range(n):
            finite = finite and math.isfinite(actions[b, i])
        if not finite:
            rewards[b] = np.nan
            continue
        t = ts[b]
        allocate(actions, b, mode, states)
        advance(states, stats, b, series, t, empty_tol, sla_tol)
        for i in range(n):
            obs[b, i] = states[b, ACTIVE, i]
            obs[b, n + i] = states[b, ALLOC, i]
            obs[b, 2 * n + i] = sla_bar[b, i]
        rewards[b] = 0.0 if reward_mode < 0 else step_reward(states, b, opt_cum, t + 1, reward_mode, sla_bar, kappa,
                                                             sla_tol)  # fmt: skip
        ts[b] = t + 1


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
    whole load matrix at construction, so that a step costs O(N). The arrays the compiled step reads are a
    batch of one (``states`` (1, rows, N), ``statistics`` (1, 4), the time-major ``series`` (T, 1, 3, N) and
    ``opt_series`` (T, 1)); the (N, T) properties below are views of them.
    """

    def __init__(self, problem: SLAProblem, loads: np.ndarray, *, empty_tol: float, eps_ref: float, sla_tol: float):
        self.problem = problem
        self.empty_tol = empty_tol
        self.sla_tol = sla_tol
        share = problem.static_share
        aggregate = loads.sum(axis=0)
        stacked = (
            loads,
            capped_cumulative_work(loads, share),
            capped_cumulative_work(loads, (1.0 - 2.0 * eps_ref) * share),
        )
        series = np.ascontiguousarray(np.stack(stacked).transpose(2, 0, 1))[:, None]  # (T, 1, 3, N)
        opt_series = capped_cumulative_work(aggregate, 1.0)[:, None]
        self.opt_eps_cum_work = capped_cumulative_work(aggregate, 1.0 - eps_ref)
        self.t = 0
        states = np.zeros((1, STATE_ROWS, problem.n_users))
        states[0, ALLOC] = 1.0 / problem.n_users  # h_0 reported at reset
        self.bind(states, np.zeros((1, 4)), series, opt_series)

    def bind(self, states: np.ndarray, statistics: np.ndarray, series: np.ndarray, opt_series: np.ndarray) -> None:
        """Make these arrays (a batch of one, shaped as above) the simulator's: the vector env binds each copy's
        simulator to its slice of the batch."""
        self.states, self.statistics, self.series, self.opt_series = states, statistics, series, opt_series

    # Views made on access, not stored: a stored view would stop being one in a pickled or deep-copied simulator.
    state = property(lambda self: self.states[0], doc="the state matrix (rows QUEUE, CUM_LOAD, ...; N columns)")
    stats = property(lambda self: self.statistics[0], doc="the statistics vector (QUEUE_L2, ...)")

    def step(self, alloc: np.ndarray) -> None:
        self.state[ALLOC] = alloc
        advance(self.states, self.statistics, 0, self.series, self.t, self.empty_tol, self.sla_tol)
        self.t += 1

    loads = property(lambda self: self.series[:, 0, LOAD].T, doc="L (N, T): privileged")
    static_cum_work = property(lambda self: self.series[:, 0, STATIC_CUM].T, doc="W' (N, T)")
    static_relaxed_cum_work = property(lambda self: self.series[:, 0, STATIC_RELAXED_CUM].T, doc="W'^ε (N, T)")
    opt_cum_work = property(lambda self: self.opt_series[:, 0], doc="OPT(t) (T,)")

    @property
    def horizon(self) -> int:
        return self.series.shape[0]

    @property
    def next_load(self) -> np.ndarray:
        """L_t of the step about to be executed (privileged: only offline oracles read it)."""
        if self.t >= self.horizon:
            raise RuntimeError(f"next_load: the episode ended at t = {self.t}; there is no next step (call reset())")
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
        return self.series[self.t - 1, 0, STATIC_RELAXED_CUM] - self.cum_work

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
