"""The batched ClusterSLA-v1 equals B single envs (SyncVectorEnv, copy i seeded s + i), step for step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.sla.config import REWARD_MODES

B = 5
KWARGS = {"horizon": 48}
STEPS = 2 * 48 + 7  # through two autoresets


def _pair(**kwargs):
    make = lambda mode: gym.make_vec("ClusterSLA-v1", num_envs=B, vectorization_mode=mode, **KWARGS, **kwargs)  # noqa: E731
    return make("vector_entry_point"), make("sync")


def _assert_same_step(native, sync):
    for a, b in zip(native[:4], sync[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    info, expected = native[4], sync[4]
    for key in ("work", "active", "queue", "sla_deficit"):
        mask = expected.get(f"_{key}", np.zeros(B, dtype=bool))  # Sync has no key on a step where all copies reset
        assert (f"_{key}" in info) == (f"_{key}" in expected), key  # as Sync: no key where no copy steps
        np.testing.assert_array_equal(info.get(f"_{key}", mask), mask)
        if mask.any():
            np.testing.assert_array_equal(info[key][mask], expected[key][mask])
    assert ("episode_summary" in info) == ("episode_summary" in expected)
    if "episode_summary" in expected:
        for key, value in expected["episode_summary"].items():
            np.testing.assert_array_equal(info["episode_summary"][key], value)


@pytest.mark.parametrize(("action_mode", "reward_mode"), [
    ("normalize", "work_sla"), ("sub_simplex", "neg_regret_sla"), ("softmax", "work_sla_level"),
    ("normalize", "neg_regret"), ("sub_simplex", "work"),
])  # fmt: skip
def test_batched_env_equals_single_envs_step_for_step(action_mode, reward_mode):
    native, sync = _pair(action_mode=action_mode, reward_mode=reward_mode)
    assert native.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    obs_native, _ = native.reset(seed=11)
    obs_sync, _ = sync.reset(seed=11)
    np.testing.assert_array_equal(obs_native, obs_sync)
    rng = np.random.default_rng(0)
    low, high = native.single_action_space.low, native.single_action_space.high
    for _ in range(STEPS):
        actions = rng.uniform(low, high, size=(B, low.size)).astype(np.float32)
        _assert_same_step(native.step(actions), sync.step(actions))


def test_every_builtin_reward_mode_is_covered():
    covered = {"work_sla", "neg_regret_sla", "work_sla_level", "neg_regret", "work"}
    assert covered == set(REWARD_MODES)


def test_seed_list_and_unseeded_reset():
    native, sync = _pair()
    seeds = [4, 9, 0, 2, 7]
    np.testing.assert_array_equal(native.reset(seed=seeds)[0], sync.reset(seed=seeds)[0])
    actions = np.full((B, 3), 0.5, dtype=np.float32)
    _assert_same_step(native.step(actions), sync.step(actions))


@pytest.mark.parametrize("kwargs", [
    {"observation_mode": "full"}, {"observation_mode": "binary+sla", "include_time": True},
    {"observation_format": "dict"},
    {"observation_mode": "full", "observation_format": "dict", "include_time": True},
])  # fmt: skip
def test_every_observation_equals_the_single_envs(kwargs):
    native, sync = _pair(action_mode="softmax", **kwargs)
    assert native.single_observation_space == sync.single_observation_space
    _assert_same_observation(native.reset(seed=3)[0], sync.reset(seed=3)[0])
    rng = np.random.default_rng(1)
    for _ in range(STEPS):  # through two autoresets
        actions = rng.uniform(-1, 1, size=(B, 3)).astype(np.float32)
        _assert_same_observation(native.step(actions)[0], sync.step(actions)[0])


def _assert_same_observation(obs, expected):
    assert isinstance(obs, dict) == isinstance(expected, dict)
    pairs = [(k, obs[k], expected[k]) for k in expected] if isinstance(expected, dict) else [(None, obs, expected)]
    assert not isinstance(obs, dict) or list(obs) == list(expected)
    for key, got, want in pairs:
        assert got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want, err_msg=str(key))


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"reward_mode": lambda info: 0.0}, "reward_mode"), ({"num_envs": 0}, "num_envs"),
])  # fmt: skip
def test_unsupported_settings_name_the_argument(kwargs, name):
    from cluster_envs.sla.vector_env import ClusterSLAVectorEnv

    kwargs = {"num_envs": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        ClusterSLAVectorEnv(**kwargs)


def test_bad_actions_are_rejected_and_leave_the_batch_unchanged():
    native, _ = _pair()
    native.reset(seed=0)
    native.step(np.ones((B, 3)))
    counts = native.unwrapped.step_counts
    before = [sim.state.copy() for sim in native.unwrapped.simulators]
    with pytest.raises(ValueError, match="actions"):
        native.step(np.ones((B, 4)))
    bad = np.ones((B, 3))
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        native.step(bad)
    np.testing.assert_array_equal(native.unwrapped.step_counts, counts)
    for state, sim in zip(before, native.unwrapped.simulators, strict=True):
        np.testing.assert_array_equal(sim.state, state)
