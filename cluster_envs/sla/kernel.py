"""The compiled step of the SLA-sharing model (paper 003) and its state layout, without gymnasium.

One divisible resource of capacity 1 is shared by N users. In step t the allocator plays h_t, the
load L_t arrives, and each user is served w_t = min(h_t, Q_t + L_t) (D1); the rest waits,
Q_{t+1} = Q_t + L_t - w_t (D2). The allocator's feedback is a_t = 1[Q_{t+1} > 0] (convention A1 of
docs/specs/sla_mwu.md). The env (env.py), the batched env (vector_env.py) and the long-horizon runner
(runner.py) all step through the compiled :func:`advance`, so there is one implementation of the physics.
The simulator (a batch of one) and the batched env step through :func:`step_copies`, which takes their state as
one record, :class:`Batch` (fields :data:`BATCH_FIELDS`, by name).
"""

from __future__ import annotations

import math

import numpy as np

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.record import declare_record

# Rows of the simulator's state matrix (one column per user) and entries of its statistics vector.
QUEUE, CUM_LOAD, CUM_WORK, WORK, ALLOC, ACTIVE, DEFICIT, PREVIOUS_DEFICIT, MAX_DEFICIT, MAX_RELAXED_DEFICIT = range(10)
STATE_ROWS = 10
QUEUE_L2, QUEUE_L2_SUM, QUEUE_L2_MAX, VIOLATION_STEPS = range(4)
# The per-step series the step reads, stacked on one axis: L_t, W'_t and the relaxed W'^ε_t.
LOAD, STATIC_CUM, STATIC_RELAXED_CUM = range(3)


# The record of the copies that :func:`step_copies` steps: their ``states`` (B, STATE_ROWS, N), ``stats`` (B, 4),
# per-step ``series`` (T, B, 3, N), ``opt_cum`` OPT(t) (T, B), step counts ``ts`` (B,) and static shares
# ``sla_bar`` (B, N); and the step's parameters: ``mode`` and ``reward_mode`` (indices of config.ACTION_MODES and
# config.REWARD_MODES, -1: a callable reward), ``kappa``, ``empty_tol``, ``sla_tol``.
BATCH_FIELDS = ("states", "stats", "series", "opt_cum", "ts", "sla_bar", "mode", "reward_mode", "kappa", "empty_tol",
                 "sla_tol")  # fmt: skip


BatchType, Batch, _batch_record = declare_record(
    __name__, "Batch", BATCH_FIELDS,
    "The record of the copies :func:`step_copies` steps (fields :data:`BATCH_FIELDS`); made by :func:`batch_record`.",
)  # fmt: skip


def batch_record(**fields) -> Batch:
    """The :class:`Batch` of ``fields`` (every name of :data:`BATCH_FIELDS`): the arrays are shared, not copied;
    the scalar parameters are stored as int64 (modes) and float64."""
    fields = {**fields, "mode": int(fields["mode"]), "reward_mode": int(fields["reward_mode"])}
    for name in ("kappa", "empty_tol", "sla_tol"):
        fields[name] = float(fields[name])
    return _batch_record(**fields)


# The step functions below index batch arrays with a copy index b: per-copy state (B, ...), per-step series
# time-major, (T, B, 3, N) stacked as LOAD, STATIC_CUM, STATIC_RELAXED_CUM, and OPT (T, B). The single env and the
# runner are batches of one, the vector env a batch of B. Indexing beats per-copy views: inside a compiled loop over
# 4,096 copies, a view and a call cost several times the arithmetic; fewer array arguments also dispatch faster.


def to_allocation(action: np.ndarray, mode: int) -> np.ndarray:
    """Map a finite float64 action of shape (N,) to an allocation h ≥ 0 with Σh ≤ 1 (spec §3.3).

    ``mode`` indexes ``config.ACTION_MODES``: 0 normalize (a⁺/Σa⁺, uniform if Σa⁺ = 0), 1 sub_simplex (clip to
    [0, 1], rescale only if Σ > 1: idle capacity allowed), 2 softmax.
    """
    states = np.empty((1, STATE_ROWS, action.size))
    allocate(np.ascontiguousarray(action, dtype=np.float64).reshape(1, -1), 0, mode, states)
    return states[0, ALLOC].copy()


@cached_njit(inline="always")
def row_max(values, b) -> float:
    """max(values[b]) without a view (see the note above)."""
    top = values[b, 0]
    for i in range(1, values.shape[1]):
        top = max(top, values[b, i])
    return top


@cached_njit(inline="always")
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


@cached_njit(inline="always")
def advance(states, stats, b, series, t, empty_tol, sla_tol) -> None:
    """Execute step t (0-based) of copy b with the allocation in ``states[b, ALLOC]``: (D1)-(D2), feedback (F)
    and the evaluation trackers.

    Queues ≤ ``empty_tol`` count as empty (A2). The SLA deficit D_t = W'_t - W_t is measured against the
    precomputed static SLA reference; its running maxima, the queue 2-norm and the count of steps with a
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


@cached_njit(inline="always")
def step_reward(states, b, opt_cum, t, reward_mode, sla_bar, kappa, sla_tol) -> float:
    """The built-in reward of copy b's step t (1-based, after :func:`advance`); ``reward_mode`` indexes
    ``config.REWARD_MODES``.

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


@cached_njit
def step_copies(batch, actions, stepping, obs, rewards) -> None:
    """One env step of every copy b with ``stepping[b]`` (of the record ``batch``), fused: allocation,
    :func:`advance`, the paper's observation into ``obs[b]``, the reward into ``rewards[b]``, and ``ts[b] += 1``.

    The single env calls it with a batch of one, the vector env with its B copies: one implementation of the
    step. A copy whose ``actions[b]`` is not finite gets reward NaN and is left unchanged. ``reward_mode`` -1 (a
    callable reward, computed by the env) gives 0. The body is written out here rather than in an inlined
    per-copy function: inlining a function with this many array arguments costs about three times the step
    (reference counting per argument).
    """
    states, stats, series, opt_cum, ts = batch.states, batch.stats, batch.series, batch.opt_cum, batch.ts
    sla_bar, mode, reward_mode, kappa = batch.sla_bar, batch.mode, batch.reward_mode, batch.kappa
    empty_tol, sla_tol = batch.empty_tol, batch.sla_tol
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
