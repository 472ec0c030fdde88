"""How the ClusterApprox ids read an action (``action_mode``), before the compiled slot transition runs it.

Each reading maps a policy's action to one of the paper's actions from the observation the policy saw, so the
dynamics, rewards and metrics are the paper's whatever the mode (docs/rl_ablations.md measured the modes):

- ``"occupant"`` (ClusterApprox-v0's default) and ``"binary"`` (ClusterApproxSingleJob-v0's): as given.
- ``"work_conserving"`` (ClusterApprox-v0): a machine sent to an empty job slot goes to the next occupied slot
  (cyclically) instead of idling, so a policy cannot waste machines on empty slots; 0 (idle) stays a choice, since
  with prices idling a machine can be right. Values that are not a slot number (NaN, fractions, out of range)
  are left as they are, so the env rejects them as in ``"occupant"``.
- ``"paced_priority"`` (ClusterApproxSingleJob-v0): ``Box(0, 1, (M,))``, a priority per machine. The machines run
  in descending priority while the slot's cost stays within the paced budget (B − C)/(T − t) and below the
  remaining budget B − C (Alg. 1's check), the pacing of ``greedy_ucb``: a policy cannot spend the budget early
  and idle afterwards, and what it learns is which machines to prefer.

Every function takes a batch (B rows; the single envs pass a batch of one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.common.env import invalid_action

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


def paced_priority(priority: Any, prices: np.ndarray, rows: np.ndarray, name: str = "action") -> np.ndarray:
    """Run/idle (B, M) uint8 from a priority per machine (B, M): descending priority (ties by machine index) while
    the cumulative price stays ≤ the pace (B − C)/max(T − t, 1) and < B − C; ``rows`` (B, F) the job rows, ``prices``
    (B, M). A ``ValueError`` naming ``name`` for a priority that is not finite."""
    priority = np.asarray(priority, dtype=np.float64)
    if not np.isfinite(priority).all():
        raise invalid_action("must be finite (no NaN or inf) in action_mode='paced_priority'", name)
    left = rows[:, REMAINING_BUDGET] * (rows[:, PRESENT] > 0)
    pace = left / np.maximum(rows[:, REMAINING_SLOTS], 1.0)
    order = np.argsort(-priority, axis=1, kind="stable")
    cost = np.cumsum(np.take_along_axis(prices, order, axis=1), axis=1)
    take = (cost <= pace[:, None]) & (cost < left[:, None])
    run = np.zeros(priority.shape, dtype=np.uint8)
    np.put_along_axis(run, order, take.astype(np.uint8), axis=1)
    return run


def read_actions(mode: str, actions: np.ndarray, observation: dict[str, np.ndarray], name: str = "action") -> Any:
    """The paper's actions for the numeric ``actions`` (B, M), of the mode's shape, read as ``mode`` on the batched
    ``observation`` the policy saw (the raw Dict: ``jobs`` (B, K, F) or ``job`` (B, F), ``price`` (B, M))."""
    if mode == "work_conserving":
        return work_conserving(observation["jobs"][..., PRESENT] > 0, actions)
    if mode == "paced_priority":
        return paced_priority(actions, observation["price"], observation["job"], name)
    return actions
