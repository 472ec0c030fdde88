"""ClusterApprox ids' ``action_mode`` and ``observation_format``: how an action is read from the observation the
policy saw, and that a mode changes nothing else (dynamics, rewards, metrics)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from cluster_envs.approx.actions import (
    PRESENT,
    REMAINING_BUDGET,
    REMAINING_SLOTS,
    paced_occupants,
    paced_priority,
    work_conserving,
)

SMALL = {"horizon": 60}


def test_work_conserving_moves_empty_slot_choices_to_the_next_occupied_slot():
    present = np.array([[False, True, False, True]])  # slots 2 and 4 hold jobs
    np.testing.assert_array_equal(work_conserving(present, np.array([[0, 1, 2, 3, 4]])), [[0, 2, 2, 4, 4]])
    wrap = np.array([[False, True, False, False]])  # only slot 2: every non-idle choice goes there, cyclically
    np.testing.assert_array_equal(work_conserving(wrap, np.array([[3, 4, 1, 0]])), [[2, 2, 2, 0]])
    none = np.zeros((1, 4), dtype=bool)
    np.testing.assert_array_equal(work_conserving(none, np.array([[0, 1, 2, 3, 4]])), np.zeros((1, 5)))
    both = np.concatenate([present, wrap])  # rows are independent
    np.testing.assert_array_equal(work_conserving(both, np.array([[3, 1], [3, 1]])), [[4, 2], [2, 2]])


def test_work_conserving_leaves_values_that_are_not_slots_for_the_env_to_reject():
    present = np.array([[True, False]])
    out = work_conserving(present, np.array([[np.nan, 2.5, 7.0, -1.0, 2.0]]))
    np.testing.assert_array_equal(out[0, 1:4], [2.5, 7.0, -1.0])
    assert np.isnan(out[0, 0]) and out[0, 4] == 1
    env = gym.make("ClusterApprox-v1", action_mode="work_conserving", **SMALL)
    env.reset(seed=0)
    bad = np.zeros(env.action_space.shape)
    bad[0] = env.action_space.nvec[0]  # one past the last slot
    with pytest.raises(ValueError, match="must lie in"):
        env.step(bad)


def test_a_work_conserving_action_never_sends_a_machine_to_an_empty_slot():
    env = gym.make("ClusterApprox-v1", action_mode="work_conserving", **SMALL)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    served = 0
    for _ in range(SMALL["horizon"]):
        action = rng.integers(1, env.action_space.nvec, size=env.action_space.shape)  # never idle
        occupied = obs["jobs"][:, PRESENT] > 0
        obs, _, terminated, truncated, info = env.step(action)
        assert info["n_invalid"] == 0
        if occupied.any():  # every machine went to an occupied slot
            assert (info["executed"] > 0).sum() + info["n_budget_blocked"] == action.size
            served += 1
        if terminated or truncated:
            break
    assert served > 0  # jobs were there to serve


@pytest.mark.parametrize("env_id", ["ClusterApprox-v1", "ClusterApproxSingleJob-v0"])
def test_the_modes_play_the_base_episode(env_id):
    """An action the paper's reading and the mode read alike (machines only on occupied slots; for the paced
    priority the run set it picks, replayed as binary) gives the same episode: rewards, observations, metrics."""
    mode = "work_conserving" if env_id == "ClusterApprox-v1" else "paced_priority"
    plain = gym.make(env_id, **SMALL)
    mine = gym.make(env_id, action_mode=mode, observation_format="flat", **SMALL)
    obs, _ = plain.reset(seed=1)
    flat, _ = mine.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(SMALL["horizon"]):
        np.testing.assert_array_equal(flat, gym.spaces.flatten(plain.observation_space, obs))
        if mode == "work_conserving":
            choices = np.concatenate([[0], np.flatnonzero(obs["jobs"][:, PRESENT] > 0) + 1])
            action = theirs = rng.choice(choices, size=plain.action_space.shape)
        else:
            action = rng.random(mine.action_space.shape).astype(np.float32)
            theirs = paced_priority(action[None], obs["price"][None], obs["job"][None])[0]
        obs, r1, t1, _, i1 = plain.step(theirs)
        flat, r2, t2, _, i2 = mine.step(action)
        assert r1 == r2 and t1 == t2 and i1["utility_true"] == i2["utility_true"]
        if t1:
            assert i1["episode_summary"] == i2["episode_summary"]
            break


def test_paced_priority_runs_the_preferred_machines_within_the_pace():
    prices = np.array([[0.5, 0.2, 0.4, 0.3]])
    rows = np.zeros((1, 12))
    rows[0, PRESENT], rows[0, REMAINING_BUDGET], rows[0, REMAINING_SLOTS] = 1.0, 10.0, 10.0  # pace 1.0
    priority = np.array([[0.9, 0.1, 0.8, 0.7]])  # machine 0 (0.5), then 2 (0.4): 0.9; then 3 would be 1.2
    np.testing.assert_array_equal(paced_priority(priority, prices, rows), [[1, 0, 1, 0]])
    rows[0, REMAINING_BUDGET] = 0.8  # the pace is now 0.08: not even the first machine fits
    np.testing.assert_array_equal(paced_priority(priority, prices, rows), [[0, 0, 0, 0]])
    rows[0, REMAINING_BUDGET], rows[0, REMAINING_SLOTS] = 0.9, 0.0  # last slot: everything left, strictly below
    np.testing.assert_array_equal(paced_priority(priority, prices, rows), [[1, 0, 0, 0]])
    rows[0, PRESENT] = 0.0  # an exhausted job runs nothing
    np.testing.assert_array_equal(paced_priority(priority, prices, rows), [[0, 0, 0, 0]])
    with pytest.raises(ValueError, match="finite"):
        paced_priority(np.array([[np.nan, 0, 0, 0]]), prices, rows)


def test_the_paced_priority_never_exhausts_the_budget_early():
    env = gym.make("ClusterApproxSingleJob-v0", action_mode="paced_priority")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = False
    while not terminated:
        _, _, terminated, _, info = env.step(rng.random(env.action_space.shape))
    summary = info["episode_summary"]
    assert summary["n_exhausted"] == 0 and summary["mean_consumed_budget"] > 0.9


@pytest.mark.parametrize(
    ("env_id", "kwargs", "allowed"),
    [
        ("ClusterApprox-v1", {"action_mode": "binary"}, "occupant"),
        ("ClusterApproxSingleJob-v0", {"action_mode": "work_conserving"}, "paced_priority"),
        ("ClusterApprox-v1", {"action_mode": "work_conserving", "capacity": 2}, "capacity=None"),
        ("ClusterApprox-v1", {"observation_format": "box"}, "flat"),
    ],
)
def test_bad_modes_are_refused_by_name(env_id, kwargs, allowed):
    with pytest.raises(ValueError, match=allowed):
        gym.make(env_id, **kwargs)


def _rows(budget_left, remaining, present=1.0):
    """Job rows (1, K, 12) with the columns the paced priority reads."""
    rows = np.zeros((1, len(budget_left), 12))
    rows[0, :, PRESENT] = present
    rows[0, :, REMAINING_BUDGET] = budget_left
    rows[0, :, REMAINING_SLOTS] = remaining
    return rows


def test_paced_occupants_serve_the_slots_by_priority_within_each_pace():
    prices = np.array([[0.5, 0.15, 0.4, 0.3, 0.1]])
    rows = _rows([10.0, 6.0], [10.0, 10.0])  # paces 1.0 and 0.6
    machines = np.array([[0.9, 0.1, 0.8, 0.7, 0.6]])  # order 0, 2, 3, 4, 1
    # slot 2 first: machine 0 (0.5) fits its pace 0.6, machine 2 would make 0.9; then slot 1 takes the free ones,
    # 2, 3, 4 and 1 (0.95 in all, within its pace 1.0)
    np.testing.assert_array_equal(paced_occupants([[0.2, 0.7]], machines, prices, rows), [[2, 1, 1, 1, 1]])
    # slot 1 first: 0, 2 (0.9), then 3 would make 1.2; slot 2 takes the free machines from the top: 3, 4 and 1
    # (0.55, within its pace 0.6)
    np.testing.assert_array_equal(paced_occupants([[0.7, 0.2]], machines, prices, rows), [[1, 2, 1, 2, 2]])
    # equal priorities: the lower slot first
    np.testing.assert_array_equal(paced_occupants([[0.5, 0.5]], machines, prices, rows), [[1, 2, 1, 2, 2]])


def test_paced_occupants_keep_the_budget_check_and_never_serve_empty_slots():
    prices = np.array([[0.5, 0.5, 0.5]])
    machines = np.array([[0.3, 0.2, 0.1]])
    last = _rows([1.0], [0.0])  # last slot: the whole remaining budget, strictly below it (Alg. 1's check)
    np.testing.assert_array_equal(paced_occupants([[1.0]], machines, prices, last), [[1, 0, 0]])
    empty = _rows([0.0, 5.0], [10.0, 10.0])
    empty[0, 0] = 0.0  # slot 1 is empty (a zero row), top priority: it takes nothing, slot 2 its pace 0.5
    np.testing.assert_array_equal(paced_occupants([[1.0, 0.0]], machines, prices, empty), [[2, 0, 0]])
    exhausted = _rows([5.0], [10.0], present=0.0)  # not present: no machine whatever its budget column says
    np.testing.assert_array_equal(paced_occupants([[1.0]], machines, prices, exhausted), [[0, 0, 0]])
    free = np.zeros((1, 3))  # machines that cost nothing all run
    np.testing.assert_array_equal(paced_occupants([[1.0]], machines, free, _rows([1.0], [10.0])), [[1, 1, 1]])
    two = np.concatenate([_rows([1.0], [0.0]), _rows([5.0], [10.0], present=0.0)])  # rows are independent
    np.testing.assert_array_equal(paced_occupants([[1.0], [1.0]], np.repeat(machines, 2, 0), np.repeat(prices, 2, 0),
                                                  two), [[1, 0, 0], [0, 0, 0]])  # fmt: skip


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_paced_priority_refuses_priorities_that_are_not_finite_by_name(bad):
    env = gym.make("ClusterApprox-v1", action_mode="paced_priority", **SMALL)
    env.reset(seed=0)
    action = np.full(env.action_space.shape, 0.5)
    action[-1] = bad
    with pytest.raises(ValueError, match="action must be finite"):
        env.step(action)
    with pytest.raises(ValueError, match="must be finite"):
        paced_occupants([[bad]], [[0.5]], np.ones((1, 1)), _rows([1.0], [1.0]), "priorities")
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(np.zeros(env.unwrapped.config.n_machines))  # the machine priorities alone


def test_the_paced_priority_serves_only_occupied_slots_within_their_pace():
    """On ClusterApprox-v1: an episode of random priorities never sends a machine to an empty slot, never exhausts
    a budget, and each job's spend in a slot stays within the pace of the observation the priorities were read on."""
    env = gym.make("ClusterApprox-v1", action_mode="paced_priority")
    obs, _ = env.reset(seed=4)
    assert env.action_space.shape == (env.unwrapped.config.max_visible_jobs + env.unwrapped.config.n_machines,)
    rng = np.random.default_rng(4)
    served = 0
    for _ in range(300):
        rows = obs["jobs"]
        obs, _, _, _, info = env.step(rng.random(env.action_space.shape))
        assert info["n_invalid"] == 0 and info["n_budget_blocked"] == 0
        slots = info["executed"]
        assert rows[slots[slots > 0] - 1, PRESENT].all()  # every served slot was occupied
        for k in np.unique(slots[slots > 0]):
            spent = obs["price"][slots == k].sum()
            assert spent <= rows[k - 1, REMAINING_BUDGET] / max(rows[k - 1, REMAINING_SLOTS], 1.0) + 1e-12
        served += int((slots > 0).any())
    assert served > 0 and env.unwrapped.simulator.summary()["n_exhausted"] == 0


def test_greedy_ucbs_orders_read_as_paced_priorities_are_greedy_ucbs_schedule():
    """The reading is greedy_ucb's pacing: its job order (marginal utility) and machine order (UCB rate per price),
    given as priorities, make the schedule greedy_ucb acts, step for step."""
    from agents import make_agent
    from agents.approx.common import COL, default_gamma, ucb
    from cluster_envs.approx.model import utility_derivative

    env = gym.make("ClusterApprox-v1", horizon=200)
    obs, _ = env.reset(seed=2)
    agent = make_agent("ClusterApprox-v1", "greedy_ucb")
    agent.reset(env.unwrapped.problem, seed=2)
    problem, served = env.unwrapped.problem, 0
    for _ in range(200):
        rows = obs["jobs"]
        theta = ucb(obs["n_obs"], obs["sum_obs"], default_gamma(problem, agent.delta))
        avg = np.maximum(rows[:, COL["work"]] / np.maximum(rows[:, COL["elapsed"]], 1.0), agent.y_floor)
        slope = utility_derivative(problem.utility, rows[:, COL["value"]], problem.beta, avg)
        action = agent.act(obs)
        mine = paced_occupants(slope[None], (theta / obs["price"])[None], obs["price"][None], rows[None])[0]
        np.testing.assert_array_equal(mine, action)
        served += int((action > 0).any())
        obs, _, terminated, _, _ = env.step(action)
        if terminated:
            break
    assert served > 20  # slots where greedy_ucb ran machines (53 on this seed)


def test_random_paced_is_the_paced_reading_of_random_priorities():
    """The control agent plays what the env's paced_priority mode makes of the same random priorities: the two
    episodes (default action mode with the agent; paced_priority with the draws as actions) have the same
    trajectory, so the control measures PPO's action reading without learning."""
    from agents import make_agent

    played = gym.make("ClusterApprox-v1", horizon=200)
    read = gym.make("ClusterApprox-v1", horizon=200, action_mode="paced_priority")
    obs, _ = played.reset(seed=3)
    read.reset(seed=3)
    agent = make_agent("ClusterApprox-v1", "random_paced")
    agent.reset(played.unwrapped.problem, seed=5)
    draws = np.random.default_rng(5)
    n_slots, n_machines = obs["jobs"].shape[0], obs["price"].shape[0]
    busy = 0
    for _ in range(200):
        action = agent.act(obs)
        priorities = np.concatenate([draws.uniform(-1, 1, n_slots), draws.uniform(-1, 1, n_machines)])
        obs, reward, terminated, _, info = played.step(action)
        _, reward_read, _, _, info_read = read.step(priorities.astype(np.float32))
        np.testing.assert_array_equal(info["executed"], info_read["executed"])
        assert reward == reward_read
        busy += int((action > 0).any())
        if terminated:
            break
    assert busy > 20
