"""Hypothesis over ClusterApprox-v1 and ClusterApproxSingleJob-v0 instances, from one machine, one job slot and
horizon 1 up to hundreds of machines, under random well-formed actions.

Every step: capacity (each machine runs at most one job, or within C_i and u_j in the Sec. V-C mode), the executed
assignment is a subset of the proposal restricted to occupied slots, the hard budget (C_j + cost < B_j strictly
for a job that ran), and the info metrics recomputed from the trajectory alone (observation before the step, the
action, the observed rates): per-slot work and cost, ``n_invalid``, the feedback statistics of the observation,
``utility_true`` / ``utility_approx`` and the reward of each ``reward_mode``; at the end the episode summary
(utility, total work and cost, counters, Fit, regret = benchmark − achieved).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_envs.approx.model import perspective, utility

from .robust_common import sample_action
from .robust_instances import approx_multi, approx_single

TOL = 1e-9
# Columns of the observation's job rows (ClusterApprox-v1 docstring).
PRESENT, VALUE, BUDGET, SPENT, ELAPSED, WORK, LIFETIME, DEMAND, PARALLELISM = 0, 2, 4, 5, 8, 10, 11, 12, 13


def _assignment(env, action: np.ndarray) -> np.ndarray:
    """An action (or ``info["executed"]``) as the (K, M) 0/1 matrix of job slot × machine."""
    a = np.asarray(action)
    if env.single_job:
        return a[None, :].astype(bool)
    if env.config.capacity is not None:
        return a.astype(bool)
    return a[None, :] == np.arange(1, env.config.max_visible_jobs + 1)[:, None]


class _Recount:
    """The episode's metrics recomputed from the trajectory (observations, actions, info) alone."""

    def __init__(self, env):
        self.kind, self.beta = env.config.utility, env.config.beta
        self.value, self.arrival, self.lifetime = {}, {}, {}
        self.work, self.spent = {}, {}
        self.n_obs = np.zeros(env.config.n_machines)
        self.sum_obs = np.zeros(env.config.n_machines)
        self.totals = {"work": 0.0, "cost": 0.0, "n_invalid": 0.0, "n_budget_blocked": 0.0, "n_repaired": 0.0}
        self.departed_utility = self.return_so_far = 0.0
        self.slot_jobs = env._sim.slot_job.copy()  # which job sits in which slot is public (arrival order)

    def f(self, value: float, work: float) -> float:
        return float(utility(self.kind, np.array([value]), self.beta, np.array([work]))[0])

    def utility_true(self) -> float:
        return sum(self.f(self.value[j], w) for j, w in self.work.items())

    def utility_approx(self, t: int) -> float:
        total = 0.0
        for j, w in self.work.items():
            length = min(t, self.arrival[j] + self.lifetime[j]) - self.arrival[j]
            total += float(perspective(self.kind, np.array([self.value[j]]), self.beta, np.array([w]), length)[0])
        return total


def _check_step(env, rc: _Recount, prev: dict, action, obs: dict, reward: float, info: dict) -> None:
    cfg, t = env.config, info["t"]
    rows = prev["job"][None, :] if env.single_job else prev["jobs"]
    prices = prev["price"]
    proposed = _assignment(env, action)
    executed = _assignment(env, info["executed"])
    present = rows[:, PRESENT] == 1
    # Feasibility of the executed assignment.
    assert not (executed & ~proposed).any(), "a machine ran a job that was not proposed for it"
    assert not executed[~present].any(), "an empty job slot ran"
    if cfg.capacity is None:
        assert (executed.sum(axis=0) <= 1).all(), "capacity (Eq. 3): a machine ran two jobs"
    else:
        assert ((executed * rows[:, [DEMAND]]).sum(axis=0) <= np.asarray(cfg.capacity) + TOL).all(), "capacity C_i"
        assert (executed.sum(axis=1) <= np.where(present, rows[:, PARALLELISM], 0)).all(), "parallelism u_j"
    cost = executed @ prices
    if cfg.budget_mode == "hard":
        ran = executed.any(axis=1)
        slack = 1e-12 * rows[ran, BUDGET]  # the env sums the prices in another order
        assert (rows[ran, SPENT] + cost[ran] < rows[ran, BUDGET] + slack).all(), "hard budget (Alg. 1, strict)"
        assert (env._sim.spent <= env._sim.budget * (1 + 1e-12)).all()
    # Per-slot metrics from the proposal, the observed rates and the public prices.
    ran_machine = executed.any(axis=0)
    rates = info["observed_rates"]
    np.testing.assert_array_equal(rates < 0, ~ran_machine)
    assert ((rates[ran_machine] >= 0) & (rates[ran_machine] <= 1)).all()
    seen = np.where(ran_machine, rates, 0.0)
    np.testing.assert_allclose(info["work"], executed @ seen, rtol=1e-12, atol=TOL)
    np.testing.assert_allclose(info["cost"], cost, rtol=1e-12, atol=TOL)
    assert info["n_invalid"] == int(proposed[~present].sum())
    assert 0.0 <= info["migrations"] <= 1.0
    # The feedback statistics of the observation (Eq. 12).
    rc.n_obs += ran_machine
    rc.sum_obs += seen
    np.testing.assert_array_equal(obs["n_obs"], rc.n_obs)
    np.testing.assert_allclose(obs["sum_obs"], rc.sum_obs, rtol=1e-12, atol=TOL)
    np.testing.assert_array_equal(obs["last_mask"], ran_machine)
    np.testing.assert_array_equal(obs["last_rate"], seen)
    # Per-job accounting: the jobs in the slots before the step, their public data from the observation.
    for k in np.flatnonzero(present):
        j = int(rc.slot_jobs[k])
        if j not in rc.value:
            rc.value[j], rc.lifetime[j] = rows[k, VALUE], int(rows[k, LIFETIME])
            rc.arrival[j] = (t - 1) - int(rows[k, ELAPSED])
            rc.work[j] = rc.spent[j] = 0.0
        rc.work[j] += info["work"][k]
        rc.spent[j] += info["cost"][k]
        np.testing.assert_allclose(rows[k, WORK], rc.work[j] - info["work"][k], rtol=1e-12, atol=TOL)
    rc.slot_jobs = info["slot_job_ids"]
    for key in rc.totals:
        rc.totals[key] += float(np.sum(info[key])) if key in ("work", "cost") else info[key]
    departed = [j for j in info["departures"] if j in rc.work]
    sparse = sum(rc.f(rc.value[j], rc.work[j]) for j in departed)
    rc.departed_utility += sparse
    utility_true, utility_approx = rc.utility_true(), rc.utility_approx(t)
    assert math.isclose(info["utility_true"], utility_true, rel_tol=1e-9, abs_tol=TOL)
    assert math.isclose(info["utility_approx"], utility_approx, rel_tol=1e-9, abs_tol=TOL)
    expected = {"true": utility_true, "approx": utility_approx, "sparse": rc.departed_utility}[cfg.reward_mode]
    rc.return_so_far += reward
    assert math.isclose(rc.return_so_far, expected, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, abs(expected)))


def _check_summary(env, rc: _Recount, info: dict) -> None:
    summary, sim = info["episode_summary"], env._sim
    assert all(math.isfinite(v) or k == "frac_cost_utility_below_50" for k, v in summary.items()), summary
    assert math.isclose(summary["utility"], rc.utility_true(), rel_tol=1e-9, abs_tol=TOL)
    assert math.isclose(summary["utility"], rc.departed_utility, rel_tol=1e-9, abs_tol=TOL)  # every job departed
    assert math.isclose(summary["total_work"], rc.totals["work"], rel_tol=1e-9, abs_tol=TOL)
    assert math.isclose(summary["total_cost"], rc.totals["cost"], rel_tol=1e-9, abs_tol=TOL)
    for key in ("n_invalid", "n_budget_blocked", "n_repaired"):
        assert summary[key] == rc.totals[key], key
    for j, spent in rc.spent.items():
        assert math.isclose(sim.spent[j], spent, rel_tol=1e-9, abs_tol=TOL)
    assert math.isclose(summary["fit"], float((sim.spent - sim.budget).sum()), rel_tol=1e-9, abs_tol=1e-6)
    if "regret" in summary:
        assert math.isclose(summary["oracle_total"], info["oracle_total"])
        assert summary["benchmark_total"] == summary["oracle_total"]  # the deprecated alias, until 0.3
        regret = summary["oracle_total"] - summary["utility_approx"]
        assert math.isclose(summary["regret"], regret, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, abs(regret)))
        assert math.isclose(info["regret"], summary["regret"])


def _run(env_id: str, kwargs: dict, seed: int) -> None:
    env = gym.make(env_id, **kwargs).unwrapped
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rc = _Recount(env)
    for t in range(1, kwargs["horizon"] + 1):
        action = sample_action(env.action_space, rng) * (rng.random() > 0.1)  # sometimes all idle
        next_obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(next_obs), f"step {t}: observation outside its space"
        assert type(reward) is float and math.isfinite(reward)
        assert not truncated and terminated == (t == kwargs["horizon"])
        _check_step(env, rc, obs, action, next_obs, reward, info)
        obs = next_obs
    _check_summary(env, rc, info)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kwargs=approx_multi(), seed=st.integers(0, 2**31 - 1))
def test_cluster_approx_invariants_on_every_step(kwargs, seed):
    _run("ClusterApprox-v1", kwargs, seed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kwargs=approx_single(), seed=st.integers(0, 2**31 - 1))
def test_cluster_approx_single_job_invariants_on_every_step(kwargs, seed):
    _run("ClusterApproxSingleJob-v0", kwargs, seed)
