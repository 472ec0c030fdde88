"""How the ClusterApprox ids read an action (``action_mode``), before the compiled slot transition runs it.

Each reading maps a policy's action to one of the paper's actions from the observation the policy saw, so the
dynamics, rewards and metrics are the paper's whatever the mode (docs/appendix/rl_ablations.md measured the modes):

- ``"occupant"`` (ClusterApprox-v1's default) and ``"binary"`` (ClusterApproxSingleJob-v0's): as given.
- ``"work_conserving"`` (ClusterApprox-v1): a machine sent to an empty job slot goes to the next occupied slot
  (cyclically) instead of idling, so a policy cannot waste machines on empty slots; 0 (idle) stays a choice, since
  with prices idling a machine can be right. Values that are not a slot number (NaN, fractions, out of range)
  are left as they are, so the env rejects them as in ``"occupant"``.
- ``"paced_priority"``: a priority per machine, and on ClusterApprox-v1 one per job slot first:
  ``Box(-1, 1, (K + M,))`` (ClusterApproxSingleJob-v0: ``Box(0, 1, (M,))``; priorities are only compared, so any
  finite values are read, ties by index). The occupied job slots, in descending priority, each take the free
  machines in descending machine priority while the job's cost in the slot stays within its paced budget
  (B_j − C_j)/(d_j − t) and below its remaining budget B_j − C_j (Alg. 1's check); the other machines idle. This is
  the pacing of ``greedy_ucb``: a policy cannot spend a budget early and idle afterwards, nor send a machine to an
  empty slot; what it learns is which jobs and machines to prefer.

Every function takes a batch (B rows; the single envs pass a batch of one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.common.env import invalid_action
from cluster_envs.common.numba_cache import cached_njit

PRESENT, REMAINING_BUDGET, REMAINING_SLOTS = 0, 6, 9  # columns of an observation's job rows


def work_conserving(present: np.ndarray, actions: Any) -> np.ndarray:
    """``actions`` (B, M) with every choice of an empty slot k moved to the first occupied slot ≥ k, cyclically
    (idle where no slot is occupied); ``present`` (B, K) bool, the slots occupied when the policy acted."""
    actions = np.asarray(actions)
    n_slots = present.shape[1]
    slots = np.arange(1, n_slots + 1)
    candidates = np.where(present, slots, n_slots + 1)
    following = np.minimum.accumulate(candidates[:, ::-1], axis=1)[:, ::-1]  # first occupied slot >= k
    following = np.where(following > n_slots, following[:, :1], following)  # past the last: wrap to the first
    table = np.concatenate([np.zeros((len(present), 1), np.int64), np.where(following > n_slots, 0, following)], 1)
    with np.errstate(invalid="ignore"):
        valid = (actions == np.floor(actions)) & (actions >= 0) & (actions <= n_slots)
    mapped = np.take_along_axis(table, np.where(valid, actions, 0).astype(np.int64), axis=1)
    return np.where(valid, mapped, actions)


def paced_occupants(slot_priority: Any, machine_priority: Any, prices: np.ndarray, rows: np.ndarray,
                     name: str = "action") -> np.ndarray:  # fmt: skip
    """Occupants (B, M) (job slot 1..K, 0 = idle) from a priority per job slot (B, K) and per machine (B, M): the
    slots in descending priority (ties by slot index) each take the free machines in descending priority (ties by
    machine index) while their cumulative price stays ≤ the slot's pace (B_j − C_j)/max(d_j − t, 1) and
    < B_j − C_j; ``rows`` (B, K, F) the job rows (an empty or exhausted slot's budget is 0: it takes nothing),
    ``prices`` (B, M). A ``ValueError`` naming ``name`` for a priority that is not finite."""

    def contiguous(array):
        return np.ascontiguousarray(array, dtype=np.float64)

    out = _paced_occupants(
        contiguous(slot_priority), contiguous(machine_priority), contiguous(prices), contiguous(rows)
    )
    if out is None:
        raise invalid_action("must be finite (no NaN or inf) in action_mode='paced_priority'", name)
    return out


@cached_njit
def _paced_occupants(slot_priority, machine_priority, prices, rows):  # pragma: no cover (compiled)
    """The compiled reading, row by row (None if a priority is not finite): each slot's budget left B_j − C_j (0
    for an empty slot) and pace (B_j − C_j)/max(d_j − t, 1), stable descending orders, then each slot takes the free
    machines (in machine order) while their running price sum, summed in that order, stays within its pace and
    budget."""
    if not (np.isfinite(slot_priority).all() and np.isfinite(machine_priority).all()):
        return None
    n_rows, n_machines = machine_priority.shape
    out = np.zeros((n_rows, n_machines), dtype=np.int64)
    free = np.empty(n_machines, dtype=np.bool_)
    for b in range(n_rows):
        machines = np.argsort(-machine_priority[b], kind="mergesort")
        free[:] = True
        for slot in np.argsort(-slot_priority[b], kind="mergesort"):
            left = rows[b, slot, REMAINING_BUDGET] * (1.0 if rows[b, slot, PRESENT] > 0 else 0.0)
            pace = left / max(rows[b, slot, REMAINING_SLOTS], 1.0)
            cost = 0.0
            for i in range(n_machines):
                if free[i]:
                    cost += prices[b, machines[i]]
                    if cost <= pace and cost < left:
                        out[b, machines[i]] = slot + 1
                        free[i] = False
    return out


def paced_priority(priority: Any, prices: np.ndarray, rows: np.ndarray, name: str = "action") -> np.ndarray:
    """Run/idle (B, M) uint8 of the single job from a priority per machine (B, M): ``paced_occupants`` with one
    job slot; ``rows`` (B, F) the job rows, ``prices`` (B, M)."""
    priority = np.asarray(priority, dtype=np.float64)
    return paced_occupants(np.zeros((len(priority), 1)), priority, prices, rows[:, None], name).astype(np.uint8)


def read_actions(mode: str, actions: np.ndarray, observation: dict[str, np.ndarray], name: str = "action") -> Any:
    """The paper's actions for the numeric ``actions`` (B, M) (``paced_priority`` on ClusterApprox-v1: (B, K + M)),
    of the mode's shape, read as ``mode`` on the batched
    ``observation`` the policy saw (the raw Dict: ``jobs`` (B, K, F) or ``job`` (B, F), ``price`` (B, M))."""
    if mode == "work_conserving":
        return work_conserving(observation["jobs"][..., PRESENT] > 0, actions)
    if mode == "paced_priority" and "job" in observation:
        return paced_priority(actions, observation["price"], observation["job"], name)
    if mode == "paced_priority":
        k = observation["jobs"].shape[1]
        return paced_occupants(actions[:, :k], actions[:, k:], observation["price"], observation["jobs"], name)
    return actions
