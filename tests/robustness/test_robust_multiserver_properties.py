"""Hypothesis over ClusterMultiServer-v0 and ClusterGang-v0 instances, from one port and one server (zero load:
no job ever arrives) up to hundreds of edges, under random well-formed actions in both action modes and both
``invalid_action`` modes.

Every step, recomputed from the public problem data and the trajectory alone: the executed action is feasible
(arrival gating; ``Ax ≤ c`` for the cluster-wide capacity; for gangs single placement, all-or-nothing and the
per-server capacity), it keeps only requested edges, first-fit cannot add a dropped edge (ClusterMultiServer),
``capacity_used``, the request accounting ``requested = executed + dropped``, the reward, the feedback in the next
observation, the oracle's action is feasible and no worse, and the cumulative metrics (regret = oracle − expected
utility, AOU) step by step and in the episode summary. ``invalid_action="raise"`` accepts exactly the feasible
actions.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .robust_common import sample_action
from .robust_instances import gang, multiserver


class _MultiServer:
    """Feasibility and load from ``ClusterMultiServer-v0``'s public problem data."""

    def __init__(self, problem):
        self.p = problem

    def load(self, x: np.ndarray) -> np.ndarray:
        return self.p.A @ x.astype(np.int64)

    def feasible(self, x: np.ndarray, arrivals: np.ndarray) -> bool:
        gated = not (x.astype(bool) & ~arrivals.astype(bool)[self.p.port_of_edge]).any()
        return gated and bool((self.load(x) <= self.p.c).all())

    def check_first_fit(self, x: np.ndarray, dropped: np.ndarray) -> None:
        """First-fit only ever adds load, so an edge it dropped for capacity does not fit the final action."""
        room = self.p.c - self.load(x)
        assert not (self.p.A[:, dropped] <= room[:, None]).all(axis=0).any(), "repair dropped an edge that fits"


class _Gang:
    """(G1)–(G4) and the (K, |R|) server load from ``ClusterGang-v0``'s public problem data."""

    def __init__(self, problem):
        self.p = problem

    def load(self, x: np.ndarray) -> np.ndarray:
        p, used = self.p, np.flatnonzero(x)
        load = np.zeros(p.server_cap.shape, dtype=np.int64)
        for arm in used:
            load[:, p.arms[arm, 2]] += p.task_req[:, p.arms[arm, 1]]
        return load

    def feasible(self, x: np.ndarray, arrivals: np.ndarray) -> bool:
        p, used = self.p, x.astype(bool)
        if (used & ~arrivals.astype(bool)[p.arms[:, 0]]).any():  # G2
            return False
        if (np.bincount(p.arms[used, 1], minlength=p.task_port.size) > 1).any():  # G1
            return False
        placed = np.bincount(p.arms[used, 0], minlength=p.n_ports)
        if ((placed > 0) & (placed < p.min_tasks)).any():  # G3
            return False
        return bool((self.load(x) <= p.server_cap).all())  # G4

    def check_first_fit(self, x: np.ndarray, dropped: np.ndarray) -> None:
        pass  # a gang's roll-back frees capacity again: no such monotonicity


def _run(env_id: str, kwargs: dict, seed: int, rules) -> None:
    env = gym.make(env_id, **kwargs).unwrapped
    obs, _ = env.reset(seed=seed)
    rules = rules(env.problem)
    v_tilde = env.instance.v_tilde  # hidden: the test reads it to recompute the evaluation-only metrics
    rng = np.random.default_rng(seed)
    horizon, penalty = kwargs["horizon"], kwargs["infeasible_penalty"]
    totals = dict.fromkeys(("aou", "expected", "oracle", "regret", "dropped"), 0.0)
    for t in range(1, horizon + 1):
        action = sample_action(env.action_space, rng)
        requested = np.asarray(action, dtype=np.float64) > 0.5
        arrivals = obs["arrivals"]
        mask = arrivals.astype(bool)[env.problem.port_of_edge]
        np.testing.assert_array_equal(obs["edge_mask"], mask)
        if kwargs["invalid_action"] == "raise":
            if not rules.feasible(requested, arrivals):
                with pytest.raises(ValueError, match="action is infeasible"):
                    env.step(action)
                action = requested = np.zeros_like(requested)  # go on with a feasible slot
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs), f"step {t}: observation outside its space"
        assert type(reward) is float and math.isfinite(reward)
        assert not terminated and truncated == (t == horizon)
        x = info["x"]
        np.testing.assert_array_equal(info["arrivals"], arrivals)
        assert rules.feasible(x, arrivals), f"step {t}: the executed action is infeasible"
        assert not (x.astype(bool) & ~requested).any(), "an edge that was not requested ran"
        np.testing.assert_array_equal(info["capacity_used"], rules.load(x))
        dropped = info["n_dropped_arrival"] + info["n_dropped_capacity"]
        assert requested.sum() == x.sum() + dropped
        assert info["n_dropped_arrival"] == (requested & ~mask).sum()
        rules.check_first_fit(x, np.flatnonzero(requested & mask & ~x.astype(bool)))
        # Feedback and reward: Z̃ on the executed edges only, in [0, 1] unless normalization="none".
        np.testing.assert_array_equal(obs["last_action"], x)
        assert (obs["last_utility"][x == 0] == 0).all()
        last_utility = float(obs["last_utility"].astype(np.float64).sum())  # float32 in the observation
        assert math.isclose(info["utility"], last_utility, rel_tol=1e-6, abs_tol=1e-6)
        assert math.isclose(reward, info["utility"] - penalty * dropped, rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(float(obs["time"][0]), min(1.0, t / horizon), rel_tol=1e-6)
        totals["aou"] += info["utility"]
        totals["dropped"] += dropped
        if kwargs["compute_regret"]:
            oracle_x = info["oracle_x"]
            assert rules.feasible(oracle_x, arrivals), "the oracle's action is infeasible"
            assert math.isclose(info["oracle_utility"], float(v_tilde @ oracle_x), rel_tol=1e-9, abs_tol=1e-12)
            assert math.isclose(info["expected_utility"], float(v_tilde @ x), rel_tol=1e-9, abs_tol=1e-12)
            assert info["slot_regret"] >= -1e-9, "the executed action beat the oracle"
            totals["expected"] += info["expected_utility"]
            totals["oracle"] += info["oracle_utility"]
            totals["regret"] += info["oracle_utility"] - info["expected_utility"]
            assert math.isclose(info["regret"], totals["regret"], rel_tol=1e-9, abs_tol=1e-9)
            assert math.isclose(info["realized_regret"], info["oracle_utility"] - info["utility"], abs_tol=1e-12)
    summary = info["episode_summary"]
    assert math.isclose(summary["aou"], totals["aou"], rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(summary["average_aou"], totals["aou"] / horizon, rel_tol=1e-9, abs_tol=1e-9)
    assert summary["dropped"] == totals["dropped"]
    assert math.isclose(summary["prob_all_arrive"], float(np.prod(env.instance.rho)), rel_tol=1e-12)
    if kwargs["compute_regret"]:
        assert math.isclose(summary["regret"], summary["oracle_aou"] - summary["expected_aou"], abs_tol=1e-9)
        assert math.isclose(summary["oracle_aou"], totals["oracle"], rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kwargs=multiserver(), seed=st.integers(0, 2**31 - 1))
def test_cluster_multiserver_invariants_on_every_step(kwargs, seed):
    _run("ClusterMultiServer-v0", kwargs, seed, _MultiServer)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kwargs=gang(), seed=st.integers(0, 2**31 - 1))
def test_cluster_gang_invariants_on_every_step(kwargs, seed):
    _run("ClusterGang-v0", kwargs, seed, _Gang)
