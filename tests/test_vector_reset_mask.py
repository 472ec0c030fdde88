"""Every native batched env resets only the copies ``options["reset_mask"]`` selects, as Gymnasium's
``SyncVectorEnv`` does (the SB3 adapter, cluster_envs/sb3.py, resets the copies that ended this way)."""

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs import env_ids

BATCHED = [i for i in env_ids() if gym.spec(i).vector_entry_point is not None]
SHORT = {"ClusterSLA-v1": {"horizon": 12}}


def _flat(obs):
    """A batch's observation as one (B, n) float array (a dict's parts in key order)."""
    if not isinstance(obs, dict):
        return np.asarray(obs, dtype=np.float64)
    return np.concatenate([np.asarray(obs[k], dtype=np.float64).reshape(len(obs[k]), -1) for k in sorted(obs)], axis=1)


@pytest.mark.parametrize("env_id", BATCHED)
def test_a_masked_reset_resets_only_those_copies_as_sync_vector_env_does(env_id):
    kwargs = {**SHORT.get(env_id, {}), "info_level": "minimal"}
    native = gym.make_vec(env_id, 3, vectorization_mode="vector_entry_point", **SHORT.get(env_id, {}))
    sync = gym.make_vec(env_id, 3, vectorization_mode="sync", **kwargs)
    mask = np.array([False, True, False])
    native.reset(seed=7)
    sync.reset(seed=7)
    native.action_space.seed(0)
    for step in range(4):
        actions = native.action_space.sample()
        if step == 2:
            obs, info = native.reset(options={"reset_mask": mask.copy()})
            expected, expected_info = sync.reset(options={"reset_mask": mask.copy()})
            assert set(info) == set(expected_info)
        else:
            obs, *_ = native.step(actions)
            expected, *_ = sync.step(actions)
        np.testing.assert_array_equal(_flat(obs), _flat(expected), err_msg=f"step {step}")


def test_a_bad_reset_mask_is_a_value_error():
    env = gym.make_vec("ClusterSLA-v1", 2, vectorization_mode="vector_entry_point")
    for bad in ([True, False], np.array([1, 0]), np.array([True]), np.array([False, False])):
        with pytest.raises(ValueError, match="reset_mask"):
            env.reset(options={"reset_mask": bad})
