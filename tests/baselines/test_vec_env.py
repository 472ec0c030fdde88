"""The SB3 adapter over the native batched envs (cluster_envs/sb3.py) equals the DummyVecEnv path step for step."""

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from baselines.eval.protocol import SETTINGS  # noqa: E402
from baselines.rl.config import RunConfig  # noqa: E402
from baselines.rl.train import make_vec_env, new_model  # noqa: E402
from cluster_envs.common.flat import flatten_batch  # noqa: E402
from cluster_envs.sb3 import NativeVecEnv  # noqa: E402

# Short episodes, so that every copy ends (and is reset) within the test's steps.
SHORT = {
    "ClusterSLA-v1": {"horizon": 12},
    "ClusterBilinear-v0": {"horizon": 7},
    "ClusterApprox-v1": {"horizon": 7},
    "ClusterApproxSingleJob-v0": {"horizon": 7},
    "ClusterMultiServer-v0": {"horizon": 7},
    "ClusterGang-v0": {"horizon": 7},
}
COPIES, STEPS = 3, 20


def _config(env_id: str) -> RunConfig:
    config = RunConfig.resolve("ppo", env_id, SHORT.get(env_id, {}))
    config.n_envs = COPIES
    return config


@pytest.mark.parametrize("env_id", list(SETTINGS))
def test_native_path_equals_dummy_vec_env(env_id):
    config = _config(env_id)
    native, used = make_vec_env(config, 123)
    dummy, _ = make_vec_env(config, 123, "dummy")
    assert used == "native", f"{env_id}'s batched env refuses the RL config {config.env_kwargs}"
    assert native.observation_space == dummy.observation_space
    first = native.reset()
    np.testing.assert_array_equal(first, dummy.reset())
    space = dummy.action_space
    space.seed(0)
    ends = 0
    for step in range(STEPS):
        actions = np.stack([space.sample() for _ in range(COPIES)])
        obs, rewards, dones, infos = native.step(actions)
        obs_d, rewards_d, dones_d, infos_d = dummy.step(actions)
        assert obs.dtype == obs_d.dtype and rewards.dtype == rewards_d.dtype
        np.testing.assert_array_equal(obs, obs_d, err_msg=f"step {step}")
        np.testing.assert_array_equal(rewards, rewards_d, err_msg=f"step {step}")
        np.testing.assert_array_equal(dones, dones_d, err_msg=f"step {step}")
        for i in np.flatnonzero(dones):
            ends += 1
            mine, theirs = infos[i], infos_d[i]
            np.testing.assert_array_equal(mine["terminal_observation"], theirs["terminal_observation"])
            assert mine["TimeLimit.truncated"] == theirs["TimeLimit.truncated"]
            assert mine["episode"]["l"] == theirs["episode"]["l"]
            # VecMonitor sums the float32 rewards in float32, Monitor the env's floats in float64
            assert mine["episode"]["r"] == pytest.approx(theirs["episode"]["r"], rel=1e-5, abs=1e-5)
            assert set(mine["episode_summary"]) == set(theirs["episode_summary"])
    assert ends >= COPIES, f"no episode of {env_id} ended within {STEPS} steps: shorten it in SHORT"
    native.close()
    dummy.close()


def test_ppo_learns_through_vecnormalize_and_logs_episodes():
    """PPO with VecNormalize on the native path: episodes reach SB3's info buffer (what `ep_rew_mean` logs)."""
    config = _config("ClusterMultiServer-v0")
    config.model_kwargs.update(n_steps=8, batch_size=12)
    vec_env, used = make_vec_env(config, 5)
    model = new_model(config, vec_env, 0)
    model.learn(total_timesteps=2 * 8 * COPIES)
    assert used == "native" and model.get_vec_normalize_env() is not None
    lengths = [info["l"] for info in model.ep_info_buffer]
    assert len(lengths) >= COPIES and set(lengths) == {7}


def test_flatten_batch_equals_flatten_per_copy():
    space = gym.spaces.Dict(
        {
            "a": gym.spaces.Box(0, 1, (2, 3), dtype=np.float32),
            "b": gym.spaces.MultiBinary(4),
            "c": gym.spaces.Discrete(3),
        }
    )
    space.seed(1)
    rows = [space.sample() for _ in range(5)]
    batch = gym.vector.utils.concatenate(space, rows, gym.vector.utils.create_empty_array(space, 5))
    expected = np.stack([gym.spaces.flatten(space, row) for row in rows])
    got = flatten_batch(space, batch)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_refuses_what_it_cannot_convert():
    same_step = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": "SameStep"})
    with pytest.raises(ValueError, match="NEXT_STEP"):
        NativeVecEnv(same_step)
    with pytest.raises(ValueError, match="wrapper"):
        NativeVecEnv(gym.make_vec("CartPole-v1", 2, vectorization_mode="sync"), "gymnasium.wrappers.ClipReward")
    with pytest.raises(ValueError, match="vectorization"):
        make_vec_env(_config("ClusterSLA-v1"), 0, "subproc")


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_native_action_masks_equal_the_single_envs(env_id):
    """MaskablePPO on the native path: the batched env's masks are each copy's single-env ``action_masks()``,
    step for step, through the VecNormalize MaskablePPO trains in, and across autoresets."""
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    config = RunConfig.resolve("ppo_mask", env_id, SHORT[env_id])
    config.n_envs = COPIES
    native, used = make_vec_env(config, 123)
    dummy, _ = make_vec_env(config, 123, "dummy")
    assert used == "native"
    native, dummy = (new_model(config, env, 0).get_env() for env in (native, dummy))
    assert is_masking_supported(native)
    native.reset()
    dummy.reset()
    rng = np.random.default_rng(0)
    for step in range(STEPS):
        masks = get_action_masks(native)
        np.testing.assert_array_equal(masks, get_action_masks(dummy), err_msg=f"step {step}")
        allowed = masks.reshape(COPIES, -1, 2)[..., 1]
        actions = (allowed & (rng.random(allowed.shape) < 0.5)).astype(np.int64)
        obs, rewards, _, _ = native.step(actions)
        obs_d, rewards_d, _, _ = dummy.step(actions)
        np.testing.assert_array_equal(obs, obs_d, err_msg=f"step {step}")
        np.testing.assert_array_equal(rewards, rewards_d, err_msg=f"step {step}")
    assert native.env_method("action_masks", indices=[1])[0].shape == masks[1].shape
    native.close()
    dummy.close()


def test_falls_back_to_dummy_where_the_batched_env_cannot_run_the_config():
    """An observation wrapper the native adapter does not apply itself: the single envs in a DummyVecEnv."""
    config = RunConfig.resolve("ppo", "ClusterApproxSingleJob-v0")
    config.wrapper = "baselines.rl.wrappers.BanditStatsObservation"
    config.env_kwargs = {**config.env_kwargs, "observation_format": "dict"}
    vec_env, used = make_vec_env(config, 0)
    assert used == "dummy"
    vec_env.close()
