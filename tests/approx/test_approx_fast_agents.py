"""The compiled decisions of Fair, Deadline-aware and OPM equal the loops and the assignment path they replaced."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents.approx.common import COL, affordable, affordable_occupants
from agents.approx.heuristics import deadline_occupants, fair_occupants
from agents.approx.primal_dual import OPM, OPS
from cluster_envs.approx.projection import categorical_round, occupant_to_assignment

MULTI, SINGLE = "ClusterApprox-v1", "ClusterApproxSingleJob-v0"


def fair_reference(order, last, prices, spent, budget, exhausted):
    """Fair's round-robin as the Python loop of spec §4.4 (the implementation before the compiled one)."""
    sticky = {k: [int(i) for i in np.flatnonzero(last == k + 1)] for k in order}
    free = np.ones(last.size, dtype=bool)
    occupant = np.zeros(last.size, dtype=np.int64)
    spend = {k: spent[k] for k in order}
    lowest, queue = 0, list(order)
    while queue and lowest < free.size:
        remaining = []
        for k in queue:
            while sticky[k] and not free[sticky[k][0]]:
                sticky[k].pop(0)
            while lowest < free.size and not free[lowest]:
                lowest += 1
            if lowest >= free.size:
                break
            i = sticky[k].pop(0) if sticky[k] else lowest
            if spend[k] + prices[i] < budget[k]:
                spend[k] += prices[i]
                free[i], occupant[i] = False, k + 1
                remaining.append(k)
            else:
                exhausted[k] = True
        queue = remaining
    return occupant


def deadline_reference(order, last, prices, spent, budget, exhausted):
    """Deadline-aware with numpy per job (the implementation before the compiled one)."""
    free = np.ones(last.size, dtype=bool)
    occupant = np.zeros(last.size, dtype=np.int64)
    for k in order:
        mine = free & (last == k + 1)
        candidates = np.concatenate([np.flatnonzero(mine), np.flatnonzero(free & ~mine)])
        if candidates.size == 0:
            break
        take = candidates[spent[k] + np.cumsum(prices[candidates]) < budget[k]]
        if take.size < candidates.size:
            exhausted[k] = True
        occupant[take] = k + 1
        free[take] = False
    return occupant


def random_slot(rng):
    """A random slot: M machines, K job slots, last occupants, prices, spends, budgets and an order of slots."""
    m, k = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    last = rng.integers(0, k + 1, size=m)
    prices = rng.uniform(0.1, 2.0, size=m)
    spent = rng.uniform(0.0, 5.0, size=k)
    budget = spent + rng.uniform(0.0, 3.0 * m, size=k)
    order = rng.permutation(k)[: int(rng.integers(0, k + 1))].astype(np.int64)
    return order, last.astype(np.int64), prices, spent, budget


@pytest.mark.parametrize(("compiled", "reference"), [(fair_occupants, fair_reference),
                                                     (deadline_occupants, deadline_reference)])  # fmt: skip
def test_compiled_schedulers_equal_their_reference_loops(compiled, reference):
    rng = np.random.default_rng(0)
    for _ in range(400):
        order, last, prices, spent, budget = random_slot(rng)
        exhausted, expected_exhausted = np.zeros(spent.size, bool), np.zeros(spent.size, bool)
        occupant = compiled(order, last, prices, spent, budget, exhausted)
        np.testing.assert_array_equal(occupant, reference(order, last, prices, spent, budget, expected_exhausted))
        np.testing.assert_array_equal(exhausted, expected_exhausted)


def test_budget_check_on_occupants_equals_the_assignment_check():
    rng = np.random.default_rng(1)
    for _ in range(200):
        _, occupant, prices, spent, budget = random_slot(rng)
        rows = np.zeros((spent.size, len(COL)))
        rows[:, COL["spent"]], rows[:, COL["budget"]] = spent, budget
        kept, exhausted = affordable_occupants(occupant, rows, prices)
        kept_assign, exhausted_assign = affordable(occupant_to_assignment(occupant, spent.size), rows, prices)
        np.testing.assert_array_equal(occupant_to_assignment(kept, spent.size), kept_assign)
        np.testing.assert_array_equal(exhausted, exhausted_assign)


class _AssignmentPath:
    """The engine's generic path (a (K, M) assignment, its budget check and encoding) with categorical rounding."""

    categorical = False

    def _round(self, x, rows):
        return occupant_to_assignment(categorical_round(x, self.rng), x.shape[0])


class OPMAssign(_AssignmentPath, OPM):
    pass


class OPSAssign(_AssignmentPath, OPS):
    pass


@pytest.mark.parametrize(
    ("env_id", "fast", "generic", "kwargs"),
    [
        (MULTI, OPM, OPMAssign, {}),
        (MULTI, OPM, OPMAssign, {"preset": "medium", "horizon": 300, "n_machines": 40}),
        (MULTI, OPM, OPMAssign, {"budget_mode": "soft", "prices": "flat", "speed_heterogeneity": 0.5}),
        (SINGLE, OPS, OPSAssign, {}),
    ],
)
def test_opm_occupant_path_decides_as_the_assignment_path(env_id, fast, generic, kwargs):
    env = gym.make(env_id, **kwargs).unwrapped
    obs, _ = env.reset(seed=4)
    one, two = fast(), generic()
    one.reset(env.problem, seed=4)
    two.reset(env.problem, seed=4)
    held = 0
    for _ in range(env.config.horizon):
        action, other = one.act(obs), two.act(obs)
        np.testing.assert_array_equal(action, other)
        assert action.dtype == other.dtype
        np.testing.assert_array_equal(one.x, two.x)
        held += int((action > 0).sum())
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert held > 0  # machines were given out, so the comparison covered real decisions
