"""The compiled ClusterBilinear-v0: NumPy's draws and sums bit for bit, the minimal info, the compiled
simplex_logits softmax and stats observations (equal to the numpy computation they replace) and the batched env,
which equals B single envs (SyncVectorEnv, copy i seeded s + i) step for step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from numba import njit

from cluster_envs.bilinear import env as bilinear_env
from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.env import LOGIT_SCALE, ClusterBilinearEnv
from cluster_envs.bilinear.rng import next_double, permute, standard_normal
from cluster_envs.bilinear.simulator import logits_to_allocation
from cluster_envs.common.pcg import state_row

ENV_ID = "ClusterBilinear-v0"


@njit
def _draw_sequence(state, n, slots, uniforms, normals, orders):
    """Draws from stream 1 of copy 1 of ``state`` (copies, streams, 6): the functions index the words in place."""
    for t in range(slots):
        for k in range(n):
            uniforms[t, k] = next_double(state, 1, 1)
        permute(state, 1, 1, orders, 1, t)
        for k in range(n):
            normals[t, k] = standard_normal(state, 1, 1)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_draws_continue_numpys_pcg64_stream_exactly(seed):
    """Interleaved random / permutation (buffered 32-bit halves) / ziggurat normals, and the final state."""
    gen = np.random.default_rng(seed)
    gen.random(seed)  # start mid-stream, possibly with a buffered half
    gen.permutation(seed + 2)
    state = np.zeros((2, 2, 6), dtype=np.uint64)
    state[1, 1] = state_row(gen)
    n, slots = 1 + 2 * seed, 300
    uniforms, normals, orders = np.zeros((slots, n)), np.zeros((slots, n)), np.zeros((2, slots, n), dtype=np.int64)
    _draw_sequence(state, n, slots, uniforms, normals, orders)
    for t in range(slots):
        np.testing.assert_array_equal(uniforms[t], gen.random(n))
        np.testing.assert_array_equal(orders[1, t], gen.permutation(n))
        np.testing.assert_array_equal(normals[t], gen.standard_normal(n))
    np.testing.assert_array_equal(state[1, 1], state_row(gen))
    assert not state[0].any() and not state[1, 0].any()


def test_minimal_info_has_the_full_values_and_the_same_trajectory():
    full, minimal = gym.make(ENV_ID, horizon=60), gym.make(ENV_ID, horizon=60, info_level="minimal")
    rng = np.random.default_rng(0)
    for env in (full, minimal):
        env.reset(seed=3)
    for _ in range(60):
        action = rng.uniform(0, 1, 20).astype(np.float32)
        a, b = full.step(action), minimal.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        assert set(b[4]) - {"episode_summary"} == {"reward_noisy", "reward_mean", "reward_expected", "queue_total",
                                                   "n_duplicates", "n_collisions", "regret"}  # fmt: skip
        for key, value in b[4].items():
            assert value == a[4][key], key
    assert b[2] or b[3]


B = 4
HORIZON = 40


def _actions(rng, steps, width=20):
    """Random fractions (or logits); copy 0 idles (or sends zero logits) for the first 70 steps, so its queue
    outgrows the initial job arrays."""
    out = rng.uniform(0, 1, (steps, B, width))
    out[:70, 0] = 0.0
    out[rng.random((steps, B)) < 0.1] = 0.0
    return out.astype(np.float32)


@pytest.mark.parametrize("kwargs", [
    {},
    {"service_model": "exclusive", "reward_mode": "cost_adjusted", "holding_cost_weight": 0.05},
    {"reward_mode": "expected", "queue_cap": 6, "noise_std": 1.0},
    {"preset": "paper_holding", "reward_mode": "mean", "horizon": 90},
    {"instance_seed": 3, "job_features": np.full((10, 2), 0.6)},  # the instance fixed, part of it overridden
    {"servers_per_class": 1, "traffic_intensity": 1.9, "service_rate": 0.5, "theta": (0.5,) * 4},  # binds: HiGHS
    {"action_mode": "simplex_logits", "observation_mode": "full", "service_model": "exclusive"},  # the RL setting
    {"action_mode": "simplex_logits", "observation_mode": "queues_stats", "instance_seed": 5},
])  # fmt: skip
def test_batched_env_equals_single_envs_step_for_step(kwargs):
    kwargs = {"horizon": HORIZON, "info_level": "minimal", **kwargs}  # sync then has the reset info keys only on resets
    native = gym.make_vec(ENV_ID, num_envs=B, vectorization_mode="vector_entry_point", **kwargs)
    sync = gym.make_vec(ENV_ID, num_envs=B, vectorization_mode="sync", **kwargs)
    assert native.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    obs, info = native.reset(seed=11)
    obs_sync, info_sync = sync.reset(seed=11)
    np.testing.assert_array_equal(obs, obs_sync)
    np.testing.assert_array_equal(info["queue_total"], info_sync["queue_total"])
    ended = 0
    width = sync.single_action_space.shape[0]
    for actions in _actions(np.random.default_rng(0), 2 * kwargs["horizon"] + 15, width):
        step, expected = native.step(actions), sync.step(actions)
        for a, b in zip(step[:4], expected[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        info, info_sync = step[4], expected[4]
        for key in ("reward_noisy", "reward_mean", "reward_expected", "queue_total", "n_duplicates", "n_collisions",
                    "regret"):  # fmt: skip
            mask = info_sync.get(f"_{key}", np.zeros(B, dtype=bool))
            assert (f"_{key}" in info) == (f"_{key}" in info_sync), key  # as Sync: no key where no copy steps
            np.testing.assert_array_equal(info.get(f"_{key}", mask), mask)
            if mask.any():  # Sync has no key on a step where every copy resets
                np.testing.assert_array_equal(info[key][mask], info_sync[key][mask])
        for key in ("t", "Q", "r_star", "oracle_allocation"):  # the reset info of the copies autoreset
            assert (f"_{key}" in info) == (f"_{key}" in info_sync), key
            if f"_{key}" in info_sync:
                np.testing.assert_array_equal(info[f"_{key}"], info_sync[f"_{key}"])
                np.testing.assert_array_equal(info[key], info_sync[key])
        assert ("episode_summary" in info) == ("episode_summary" in info_sync)
        if "episode_summary" in info_sync:
            ended += int(info_sync["_episode_summary"].sum())
            for key, value in info_sync["episode_summary"].items():
                np.testing.assert_array_equal(info["episode_summary"][key], value, err_msg=key)
    assert ended >= 2 * B
    if kwargs["horizon"] > 70:  # copy 0 idled long enough for its queue to outgrow the initial job arrays
        assert native.unwrapped.simulators[0].jobs.shape[1] > 64


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"action_mode": "job_allocation"}, "action_mode"), ({"action_mode": "server_choice"}, "action_mode"),
    ({"server_schedule": np.full((500, 2), 2)}, "server_schedule"), ({"num_envs": 0}, "num_envs"),
    ({"include_server_counts": True}, "include_server_counts"),
    ({"render_mode": "ansi"}, "render_mode"),
])  # fmt: skip
def test_unsupported_settings_name_the_argument(kwargs, name):
    from cluster_envs.bilinear.vector_env import ClusterBilinearVectorEnv

    with pytest.raises(ValueError, match=name):
        ClusterBilinearVectorEnv(**{"num_envs": 2, **kwargs})


def test_bad_actions_are_rejected_and_leave_the_batch_unchanged():
    native = gym.make_vec(ENV_ID, num_envs=B, vectorization_mode="vector_entry_point")
    native.reset(seed=0)
    native.step(np.full((B, 20), 0.1))
    before = {name: array.copy() for name, array in native.unwrapped._batch.items()}
    with pytest.raises(ValueError, match="actions"):
        native.step(np.ones((B, 21)))
    bad = np.ones((B, 20))
    bad[2, 5] = np.nan
    with pytest.raises(ValueError, match="finite"):
        native.step(bad)
    for name, array in native.unwrapped._batch.items():
        np.testing.assert_array_equal(array, before[name], err_msg=name)


@pytest.mark.parametrize("kwargs", [{}, {"preset": "rl"}, {"action_mode": "job_allocation", "max_visible_jobs": 3},
                                    {"observation_mode": "queues_stats", "num_server_classes": 3}])  # fmt: skip
def test_split_names_every_part_of_the_observation_in_order(kwargs):
    env = gym.make(ENV_ID, **kwargs).unwrapped
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    problem = env.problem
    parts = problem.split(obs)
    assert {name: part.shape for name, part in parts.items()} == problem.observation_parts()
    np.testing.assert_array_equal(np.concatenate([part.ravel() for part in parts.values()]), obs)
    np.testing.assert_array_equal(parts["queues"], env.simulator.queue())


class _Reference(ClusterBilinearEnv):
    """The single env as it was before the compiled ``simplex_logits`` and stats-observation paths: the softmax
    by :func:`logits_to_allocation` (numpy's exponential and row sums) and the observation by
    :func:`kernel.stats_observation` with numpy's ``log1p``, converted to float32."""

    def _advance(self, a):
        if self.config.action_mode != "simplex_logits":
            return super()._advance(a)
        sim = self._sim
        caps = sim.caps_now()
        r_star = self._r_star if self.config.server_schedule is None else self._oracle(caps)[0]
        logits = np.asarray(a, dtype=np.float64).reshape(len(caps), -1)
        sim.run_classes(logits_to_allocation(logits, sim.queue() > 0, caps, LOGIT_SCALE), r_star)
        self._slot = (r_star, caps, None)

    def _observe(self):
        sim, cfg = self._sim, self.config
        if cfg.observation_mode == "queues":
            return sim.obs.copy()
        counts, sums = sim.slot_stats[kernel.TOTAL_COUNTS], sim.slot_stats[kernel.TOTAL_SUMS]
        features = self._features if cfg.observation_mode == "full" else np.zeros(0)
        out = kernel.stats_observation(sim.obs, sim.t, cfg.horizon, counts, np.log1p(counts), sums, features)
        return out.astype(np.float32)


FAST_CASES = [
    {"preset": "rl"},
    {"action_mode": "simplex_logits", "observation_mode": "queues_stats", "service_model": "paper"},
    {"action_mode": "simplex_logits", "preset": "production"},
    # 140 classes: each softmax row sums 141 exponentials (numpy's pairwise split above 128 terms)
    {"action_mode": "simplex_logits", "observation_mode": "full", "num_job_classes": 140, "num_server_classes": 1,
     "servers_per_class": [3], "traffic_intensity": 0.9},
    {"action_mode": "simplex_logits", "observation_mode": "full", "server_schedule": np.tile([[2, 1], [1, 2]], (20, 1)),
     "traffic_intensity": 0.8},
    {"observation_mode": "full"},  # the allocation action with the compiled observation
    {"action_mode": "server_choice", "observation_mode": "queues_stats"},
]  # fmt: skip


@pytest.mark.parametrize("kwargs", FAST_CASES)
@pytest.mark.parametrize("big_horizon_path", [False, True])
def test_compiled_softmax_and_stats_observation_equal_numpy_bit_for_bit(kwargs, big_horizon_path, monkeypatch):
    """The single env's simplex_logits softmax (the exponents in a kernel, numpy's exponential, the row sums and y
    in the slot's kernel) and its queues_stats / full observation (written in the slot's kernel, log1p from a table
    of numpy's values; or, past the table's size, numpy's log1p of each observation) equal the numpy computation
    they replace, bit for bit: observations, rewards, allocations and info, over episodes and their resets; actions
    of several dtypes, logits far outside the Box, ties and empty classes."""
    if big_horizon_path:
        monkeypatch.setattr(bilinear_env, "LOG_TABLE_MAX", 0)
    kwargs = {"horizon": 40, **kwargs}
    fast, reference = ClusterBilinearEnv(**kwargs), _Reference(**kwargs)
    assert (fast._log_table is None) == big_horizon_path
    rng = np.random.default_rng(7)
    fast.action_space.seed(7)
    np.testing.assert_array_equal(fast.reset(seed=3)[0], reference.reset(seed=3)[0])
    for t in range(2 * fast.config.horizon + 5):
        if fast.config.action_mode == "server_choice":
            action = fast.action_space.sample()
        else:
            action = rng.uniform(-1, 1, fast.action_space.shape) * rng.choice([1e-3, 1.0, 40.0])
            if t % 5 == 0:
                action = np.round(action)  # ties
            action = action.astype([np.float32, np.float64, np.int64][t % 3])
        a, b = fast.step(action), reference.step(action)
        assert a[0].dtype == b[0].dtype == np.float32
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        assert a[4].keys() == b[4].keys()
        for key, value in a[4].items():
            np.testing.assert_equal(value, b[4][key], err_msg=key)
        np.testing.assert_array_equal(fast.simulator.slot_stats[kernel.Y], reference.simulator.slot_stats[kernel.Y])
        if a[2] or a[3]:
            np.testing.assert_array_equal(fast.reset()[0], reference.reset()[0])


def test_compiled_softmax_refuses_non_finite_logits_and_leaves_the_env_unchanged():
    env = gym.make(ENV_ID, action_mode="simplex_logits", observation_mode="full", horizon=20).unwrapped
    obs, _ = env.reset(seed=0)
    for bad in (np.nan, np.inf, -np.inf):
        action = np.zeros(env.action_space.shape)
        action[3] = bad
        with pytest.raises(ValueError, match="finite"):
            env.step(action)
        assert env.simulator.t == 0
        np.testing.assert_array_equal(env._observe(), obs)
