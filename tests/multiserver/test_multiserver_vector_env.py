"""The batched ClusterMultiServer-v0 and ClusterGang-v0 equal B single envs (SyncVectorEnv, copy i seeded s + i),
step for step, through autoresets."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.multiserver.vector_env import COUNT_KEYS, INFO_KEYS, REGRET_KEYS

B = 4
HORIZON = 60
STEPS = 2 * HORIZON + 5  # two autoresets


def _pair(env_id, **kwargs):
    kwargs = {"horizon": HORIZON, "info_level": "minimal", **kwargs}
    make = lambda mode: gym.make_vec(env_id, num_envs=B, vectorization_mode=mode, **kwargs)  # noqa: E731
    return make("vector_entry_point"), make("sync")


def _assert_same_step(native, sync, keys):
    for key in native[0]:
        np.testing.assert_array_equal(native[0][key], sync[0][key], err_msg=key)
    for a, b in zip(native[1:4], sync[1:4], strict=True):
        np.testing.assert_array_equal(a, b)
    info, expected = native[4], sync[4]
    for key in keys:
        mask = expected.get(f"_{key}", np.zeros(B, dtype=bool))  # Sync has no key on a step where all copies reset
        assert (f"_{key}" in info) == (f"_{key}" in expected), key  # as Sync: no key where no copy steps
        np.testing.assert_array_equal(info.get(f"_{key}", mask), mask)
        if mask.any():
            np.testing.assert_array_equal(info[key][mask], expected[key][mask], err_msg=key)
    assert ("episode_summary" in info) == ("episode_summary" in expected)
    if "episode_summary" in expected:
        assert set(info["episode_summary"]) == set(expected["episode_summary"])
        for key, value in expected["episode_summary"].items():
            np.testing.assert_array_equal(info["episode_summary"][key], value, err_msg=key)


def _actions(space, rng, binary):
    if binary:
        return rng.integers(0, 2, size=space.shape).astype(np.int8)
    return rng.random(space.shape).astype(np.float32)


CASES = [
    ("ClusterMultiServer-v0", {}),
    ("ClusterMultiServer-v0", {"preset": "small", "action_mode": "scores", "infeasible_penalty": 0.1}),
    ("ClusterMultiServer-v0", {"preset": "small", "compute_regret": False, "normalization": "none"}),
    ("ClusterGang-v0", {}),
    ("ClusterGang-v0", {"action_mode": "scores", "min_tasks": "half"}),
]


@pytest.mark.parametrize(("env_id", "kwargs"), CASES)
def test_batched_env_equals_single_envs_step_for_step(env_id, kwargs):
    native, sync = _pair(env_id, **kwargs)
    assert native.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    keys = ["t", *INFO_KEYS, *COUNT_KEYS, *(REGRET_KEYS if kwargs.get("compute_regret", True) else ())]
    obs_native, _ = native.reset(seed=11)
    obs_sync, _ = sync.reset(seed=11)
    for key in obs_sync:
        np.testing.assert_array_equal(obs_native[key], obs_sync[key])
    rng = np.random.default_rng(0)
    binary = kwargs.get("action_mode", "binary") == "binary"
    ended = 0
    for _ in range(STEPS):
        actions = _actions(native.action_space, rng, binary)
        native_step, sync_step = native.step(actions), sync.step(actions)
        _assert_same_step(native_step, sync_step, keys)
        ended += int(native_step[3].sum())
    assert ended == 2 * B


def test_raise_mode_matches_and_rejects_like_the_single_env():
    native, sync = _pair("ClusterMultiServer-v0", preset="small", invalid_action="raise")
    native.reset(seed=3)
    obs, _ = sync.reset(seed=3)
    for _ in range(20):  # feasible actions: each copy's first arrived edge
        actions = np.zeros(native.action_space.shape, np.int8)
        for b in range(B):
            usable = np.flatnonzero(obs["edge_mask"][b])
            if usable.size:
                actions[b, usable[0]] = 1
        step = native.step(actions)
        expected = sync.step(actions)
        _assert_same_step(step, expected, ["t", *INFO_KEYS, *COUNT_KEYS])
        obs = expected[0]
    counts = native.unwrapped.step_counts
    ones = np.ones(native.action_space.shape, np.int8)
    with pytest.raises(ValueError, match="violates") as single:  # copy 0 alone names the violated constraint
        sync.envs[0].step(ones[0])
    reason = str(single.value).split("violates ", 1)[1]
    with pytest.raises(ValueError, match=r"actions\[0\] is infeasible .* violates " + re.escape(reason)):
        native.step(ones)
    np.testing.assert_array_equal(native.unwrapped.step_counts, counts)


def test_seed_list_and_bad_actions_leave_the_batch_unchanged():
    native, sync = _pair("ClusterGang-v0")
    seeds = [4, 9, 0, 2]
    obs_native, obs_sync = native.reset(seed=seeds)[0], sync.reset(seed=seeds)[0]
    for key in obs_sync:
        np.testing.assert_array_equal(obs_native[key], obs_sync[key])
    shape = native.action_space.shape
    counts = native.unwrapped.step_counts
    with pytest.raises(ValueError, match="actions"):
        native.step(np.ones((B, shape[1] + 1)))
    with pytest.raises(ValueError, match="real numbers"):
        native.step(np.ones(shape, complex))
    bad = np.ones(shape)
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        native.step(bad)
    bad[1, 0] = 0.5
    with pytest.raises(ValueError, match="binary"):
        native.step(bad)
    np.testing.assert_array_equal(native.unwrapped.step_counts, counts)
    actions = np.ones(shape, np.int8)
    _assert_same_step(native.step(actions), sync.step(actions), ["t", *INFO_KEYS, *COUNT_KEYS, *REGRET_KEYS])


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"obs_static": True}, "obs_static"), ({"binary_repair_order": "random"}, "binary_repair_order"),
    ({"num_envs": 0}, "num_envs"), ({"n_ports": 21, "n_servers": 3}, "n_ports"),
    ({"render_mode": "ansi"}, "render_mode"),
])  # fmt: skip
def test_unsupported_settings_name_the_argument(kwargs, name):
    from cluster_envs.multiserver.vector_env import ClusterMultiServerVectorEnv

    kwargs = {"num_envs": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        ClusterMultiServerVectorEnv(**kwargs)
