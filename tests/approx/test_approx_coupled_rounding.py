"""OPM's temporally coupled rounding (``rounding="coupled"``): the occupant's law is still x (E[x̃] = x, Eq. 72)
after a chain of slots whose x moves and whose job slots renew, a machine changes occupant with the maximal
coupling's probability Σ (x_old − x_new)⁺, and the agent keeps the default rounding unless asked."""

from __future__ import annotations

import numpy as np
import pytest

from agents.approx.primal_dual import OPM
from baselines.eval.harness import rollout
from cluster_envs.approx.projection import categorical_round, coupled_round

X0 = np.array([[0.2, 0.5, 0.0, 0.3], [0.3, 0.1, 0.5, 0.3], [0.1, 0.2, 0.5, 0.4]])
X1 = np.array([[0.3, 0.4, 0.1, 0.0], [0.1, 0.1, 0.4, 0.5], [0.5, 0.1, 0.5, 0.4]])
X2 = np.array([[0.0, 0.4, 0.6, 0.1], [0.6, 0.0, 0.2, 0.5], [0.2, 0.5, 0.1, 0.2]])


def _law(x):
    return np.vstack([1 - x.sum(axis=0), x])  # category 0 idle, k slot k


def test_the_occupant_keeps_the_law_of_x_through_a_chain_of_slots_and_renewals():
    rng, draws = np.random.default_rng(0), 40_000
    counts, changes = np.zeros((2, 4, 4)), np.zeros((2, 4))
    renewals = (np.array([False, True, False]), np.array([False, False, False]))
    for _ in range(draws):
        prev = categorical_round(X0, rng)
        for step, (x_old, x_new) in enumerate(((X0, X1), (X1, X2))):
            new = coupled_round(x_new, x_old, prev, renewals[step], rng)
            counts[step, new, np.arange(4)] += 1
            changes[step] += new != prev
            prev = new
    tolerance = 4 * np.sqrt(0.25 / draws)  # four standard errors of a frequency
    for step, x_new in enumerate((X1, X2)):
        np.testing.assert_allclose(counts[step] / draws, _law(x_new), atol=tolerance)
    # the maximal coupling: a change only where probability moved, Σ (x_old − x_new)⁺ over idle and the slots
    old_same = np.where(renewals[1][:, None], 0.0, X1)
    expected = np.maximum(np.vstack([1 - X1.sum(axis=0), old_same]) - _law(X2), 0).sum(axis=0)
    np.testing.assert_allclose(changes[1] / draws, expected, atol=tolerance)


def test_a_renewed_slot_never_keeps_the_old_job():
    """Slot 0 holds a new job with the same x as the old one: every machine the old job held is redrawn."""
    x = np.array([[1.0, 1.0]])
    occupant = coupled_round(x, x, np.array([1, 1]), np.array([True]), np.random.default_rng(0))
    np.testing.assert_array_equal(occupant, [1, 1])  # redrawn into slot 0 (its only grown category) ...
    still = coupled_round(x, x, np.array([1, 1]), np.array([False]), np.random.default_rng(0))
    np.testing.assert_array_equal(still, [1, 1])  # ... and kept when the job is the same


def test_opm_migrates_less_with_coupled_rounding_at_the_same_utility_scale():
    env = {"n_machines": 20, "horizon": 300, "max_visible_jobs": 16}
    runs = {r: rollout("ClusterApprox-v1", "opm", seed=0, env_kwargs=env, agent_kwargs={"rounding": r},
                       record=()).metrics for r in ("independent", "coupled")}  # fmt: skip
    assert runs["coupled"]["mean_migrations"] < runs["independent"]["mean_migrations"]
    assert runs["coupled"]["utility"] == pytest.approx(runs["independent"]["utility"], rel=0.1)


def test_a_bad_rounding_names_the_choices():
    with pytest.raises(ValueError, match=r"rounding='sticky' is not allowed; choose one of \['independent', "):
        OPM(rounding="sticky")
