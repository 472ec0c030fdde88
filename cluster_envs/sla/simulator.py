"""One episode of the SLA-sharing model (paper 003): :class:`SLASimulator` holds its state and the kernel's record
of it (:class:`~cluster_envs.sla.kernel.Batch`, a batch of one) and steps it through the compiled
:func:`~cluster_envs.sla.kernel.step_copies` (the env) or :func:`~cluster_envs.sla.kernel.advance` (the
long-horizon runner)."""

from __future__ import annotations

import numpy as np

from cluster_envs.common.fluid import capped_cumulative_work
from cluster_envs.common.record import HoldsRecord
from cluster_envs.sla.kernel import (
    ACTIVE,
    ALLOC,
    CUM_LOAD,
    CUM_WORK,
    DEFICIT,
    LOAD,
    MAX_DEFICIT,
    MAX_RELAXED_DEFICIT,
    PREVIOUS_DEFICIT,
    QUEUE,
    QUEUE_L2,
    QUEUE_L2_MAX,
    QUEUE_L2_SUM,
    STATE_ROWS,
    STATIC_CUM,
    STATIC_RELAXED_CUM,
    VIOLATION_STEPS,
    WORK,
    Batch,
    advance,
    batch_record,
    step_copies,
)
from cluster_envs.sla.model import SLAProblem


def feedback_vector(active: np.ndarray, alloc: np.ndarray, sla_bar: np.ndarray) -> np.ndarray:
    """The paper-faithful observation [a_t, h_t, β̄] as float32 (spec §3.2)."""
    return np.concatenate([active, alloc, sla_bar]).astype(np.float32)


class SLASimulator(HoldsRecord):
    """State of one episode: queues, cumulative work and the evaluation trackers, stepped by allocations.

    The offline optimum OPT_c(t) and the static SLA reference W'_t are precomputed in closed form from the
    whole load matrix at construction, so that a step costs O(N). The arrays the compiled step reads are a
    batch of one (``states`` (1, rows, N), ``statistics`` (1, 4), the time-major ``series`` (T, 1, 3, N) and
    ``opt_series`` (T, 1)); the (N, T) properties below are views of them. ``record`` is the kernel's record of
    them with the step's parameters: ``action_mode`` and ``reward_mode`` (indices of the kernel's modes; -1: a
    callable reward, which the env computes) and ``kappa``.
    """

    def __init__(self, problem: SLAProblem, loads: np.ndarray, *, empty_tol: float, eps_ref: float, sla_tol: float,
                 action_mode: int = 0, reward_mode: int = 0, kappa: float = 1.0):  # fmt: skip
        self.problem = problem
        self.empty_tol = empty_tol
        self.sla_tol = sla_tol
        self.action_mode, self.reward_mode, self.kappa = action_mode, reward_mode, kappa
        # step_copies' t, stepping mask and reward for this episode as a batch of one
        self._batch_of_one = (np.zeros(1, dtype=np.int64), np.ones(1, dtype=bool), np.zeros(1))
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
        """Make these arrays (a batch of one, shaped as above) the simulator's, and its record theirs: the vector
        env binds each copy's simulator to its slice of the batch."""
        self.states, self.statistics, self.series, self.opt_series = states, statistics, series, opt_series
        self.record = self.make_record()

    def make_record(self) -> Batch:
        """:func:`~cluster_envs.sla.kernel.step_copies`' record of this episode's arrays (a batch of one)."""
        return batch_record(
            states=self.states, stats=self.statistics, series=self.series, opt_cum=self.opt_series,
            ts=self._batch_of_one[0], sla_bar=self.problem.static_share[None], mode=self.action_mode,
            reward_mode=self.reward_mode, kappa=self.kappa, empty_tol=self.empty_tol, sla_tol=self.sla_tol,
        )  # fmt: skip

    def step_action(self, action: np.ndarray, feedback: np.ndarray) -> float:
        """Play step t with a float64 action (N,), read by ``action_mode``: the paper's feedback [a_t, h_t, β̄]
        into ``feedback[0]``; the built-in reward (0 for a callable one). NaN if the action is not finite: then
        nothing changed but ``feedback``."""
        ts, stepping, rewards = self._batch_of_one
        ts[0] = self.t
        step_copies(self.record, action[None], stepping, feedback, rewards)
        reward = float(rewards[0])
        if reward == reward:
            self.t += 1
        return reward

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
