"""The batched ClusterApprox-v1 / ClusterApproxSingleJob-v0 equal B single envs (SyncVectorEnv, copy i seeded s + i),
step for step, through autoresets."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

B = 4
HORIZON = 40
STEPS = 2 * HORIZON + 9  # through two autoresets
MINIMAL_KEYS = ("t", "utility_true", "utility_approx", "regret")


def _pair(env_id, **kwargs):
    kwargs = {"horizon": HORIZON, "info_level": "minimal", **kwargs}
    make = lambda mode: gym.make_vec(env_id, num_envs=B, vectorization_mode=mode, **kwargs)  # noqa: E731
    return make("vector_entry_point"), make("sync")


def _assert_same(native, sync):
    for a, b in zip(native[1:4], sync[1:4], strict=True):
        np.testing.assert_array_equal(a, b)
    for key, value in sync[0].items():
        np.testing.assert_array_equal(native[0][key], value, err_msg=key)
        assert native[0][key].dtype == value.dtype, key
    info, expected = native[4], sync[4]
    for key in MINIMAL_KEYS:
        mask = expected.get(f"_{key}", np.zeros(B, dtype=bool))  # Sync has no key on a step where all copies reset
        assert (f"_{key}" in info) == (f"_{key}" in expected), key  # as Sync: no key where no copy steps
        np.testing.assert_array_equal(info.get(f"_{key}", mask), mask)
        if mask.any():
            np.testing.assert_array_equal(info[key][mask], expected[key][mask])
    assert ("episode_summary" in info) == ("episode_summary" in expected)
    if "episode_summary" in expected:
        for key, value in expected["episode_summary"].items():
            np.testing.assert_array_equal(info["episode_summary"][key], value, err_msg=key)


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("ClusterApprox-v1", {}),
    ("ClusterApprox-v1", {"budget_mode": "soft", "reward_mode": "approx", "utility": "log", "q_range": (2.0, 6.0)}),
    ("ClusterApprox-v1", {"preset": "common_deadline", "reward_mode": "sparse", "compute_regret": False}),
    ("ClusterApprox-v1", {"action_mode": "work_conserving"}),
    ("ClusterApprox-v1", {"action_mode": "paced_priority"}),
    ("ClusterApproxSingleJob-v0", {}),
    ("ClusterApproxSingleJob-v0", {"preset": "soft", "utility": "power", "beta": 0.3}),
    ("ClusterApproxSingleJob-v0", {"action_mode": "paced_priority"}),
])  # fmt: skip
def test_batched_env_equals_single_envs_step_for_step(env_id, kwargs):
    native, sync = _pair(env_id, **kwargs)
    assert native.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    obs_native, info_native = native.reset(seed=5)
    obs_sync, info_sync = sync.reset(seed=5)
    for key, value in obs_sync.items():
        np.testing.assert_array_equal(obs_native[key], value)
    assert info_native.keys() == info_sync.keys()
    for key, value in info_sync.items():
        np.testing.assert_array_equal(info_native[key], value, err_msg=key)
    native.action_space.seed(0)
    for _ in range(STEPS):
        actions = native.action_space.sample()
        _assert_same(native.step(actions), sync.step(actions))


def test_wider_instances_after_reset_keep_the_batch_equal():
    """A copy whose new instance has more jobs than any before widens the padded job axis of every copy."""
    # speeds spread the public prices, hence the job counts (v1's prices follow the speeds, not the seed's draws)
    native, sync = _pair("ClusterApprox-v1", horizon=200, speed_heterogeneity=0.5)
    native.reset(seed=[0, 1, 2, 3])
    sync.reset(seed=[0, 1, 2, 3])
    width = native.unwrapped._width
    native.action_space.seed(1)
    for _ in range(10 * 200):
        actions = native.action_space.sample()
        _assert_same(native.step(actions), sync.step(actions))
    assert native.unwrapped._width > width  # the widening happened mid-run, with live copies re-pointed


def test_bad_actions_are_rejected_and_leave_the_batch_unchanged():
    native, sync = _pair("ClusterApprox-v1")
    native.reset(seed=2)
    sync.reset(seed=2)
    good = np.zeros((B, native.single_action_space.shape[0]), dtype=np.int64)
    for bad, name in ((good[:1], "shape"), (np.where(good == 0, 99, 0), "lie in"), (good + 0.5, "finite integer")):
        with pytest.raises(ValueError, match=name):
            native.step(bad)
    native.action_space.seed(3)
    for _ in range(5):
        actions = native.action_space.sample()
        _assert_same(native.step(actions), sync.step(actions))


def test_unsupported_settings_name_the_argument():
    from cluster_envs.approx.vector_env import ClusterApproxVectorEnv

    for kwargs, name in (({"capacity": 2}, "capacity"), ({"num_envs": 0}, "num_envs")):
        with pytest.raises(ValueError, match=name):
            ClusterApproxVectorEnv(**{"num_envs": 2, **kwargs})


@pytest.mark.parametrize(("env_id", "mode"), [("ClusterApprox-v1", "paced_priority"),
                                              ("ClusterApprox-v1", "work_conserving"),
                                              ("ClusterApproxSingleJob-v0", "paced_priority")])  # fmt: skip
def test_read_actions_are_the_paper_actions_the_step_runs(env_id, mode):
    """``read_actions`` gives the paper's actions of the mode's reading: played as given (the paper's mode), they
    make the same episode."""
    paper = "occupant" if env_id == "ClusterApprox-v1" else "binary"
    mine, theirs = (gym.make_vec(env_id, num_envs=B, vectorization_mode="vector_entry_point", horizon=HORIZON,
                                 info_level="minimal", action_mode=m) for m in (mode, paper))  # fmt: skip
    mine.reset(seed=3)
    theirs.reset(seed=3)
    mine.action_space.seed(3)
    for _ in range(HORIZON):
        actions = mine.action_space.sample()
        read = mine.unwrapped.read_actions(actions)
        assert theirs.action_space.contains(read.astype(theirs.action_space.dtype).reshape(theirs.action_space.shape))
        _assert_same(mine.step(actions), theirs.step(read))
