"""Every native batched env (``VECTOR_ENTRY_POINTS``) under a careless caller: the done flags it returns are the
caller's (writing into them changes nothing inside), and malformed actions or reset options, or an info level the
batch cannot return, get a ``ValueError`` naming them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.registration import VECTOR_ENTRY_POINTS

HORIZON = 6  # ClusterSLA's synthetic scenario needs whole periods (six)


def _short_batch(env_id: str) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", horizon=HORIZON)


def _actions(env: gym.vector.VectorEnv) -> np.ndarray:
    return np.zeros(env.action_space.shape, dtype=env.action_space.dtype)


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
def test_writing_into_returned_arrays_does_not_change_the_batch(env_id):
    touched, untouched = _short_batch(env_id), _short_batch(env_id)
    touched.reset(seed=0), untouched.reset(seed=0)
    for _ in range(2 * HORIZON + 2):  # across an episode end and the autoreset after it
        a, b = touched.step(_actions(touched)), untouched.step(_actions(untouched))
        for flags in a[2:4]:
            flags[:] = ~flags  # a caller that clears (or sets) its done flags in place
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(~a[2], b[2])
        np.testing.assert_array_equal(~a[3], b[3])


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
@pytest.mark.parametrize("bad", [1j, "1"], ids=["complex", "string"])
def test_non_real_actions_raise_a_value_error_naming_them(env_id, bad):
    env = _short_batch(env_id)
    env.reset(seed=0)
    actions = _actions(env).astype(type(bad) if isinstance(bad, str) else complex)
    actions[...] = bad
    with pytest.raises(ValueError, match="action"):
        env.step(actions)


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
@pytest.mark.parametrize("options", [5, "ab", ["loads"]], ids=["int", "str", "list"])
def test_non_dict_reset_options_raise_a_value_error_naming_them(env_id, options):
    with pytest.raises(ValueError, match="option"):
        _short_batch(env_id).reset(seed=0, options=options)


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
def test_reset_info_is_sync_vector_envs(env_id):
    """The copies' reset infos, batched as SyncVectorEnv batches them (same keys, same values)."""
    native, sync = _short_batch(env_id), gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", horizon=HORIZON)
    info, expected = native.reset(seed=3)[1], sync.reset(seed=3)[1]
    assert info.keys() == expected.keys()
    for key, value in expected.items():
        np.testing.assert_array_equal(info[key], value, err_msg=key)


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
def test_info_masks_are_separate_arrays(env_id):
    """``_key`` masks share no memory: one mask written (by ``_add_info`` on an autoreset step, or by the caller)
    must not flip the others (a shared mask once marked every batched MultiServer key valid on reset steps)."""
    env = _short_batch(env_id)
    env.reset(seed=0)
    for _ in range(HORIZON + 2):
        info = env.step(_actions(env))[4]
        masks = [value for key, value in info.items() if key.startswith("_") and isinstance(value, np.ndarray)]
        for i, first in enumerate(masks):
            assert not any(np.shares_memory(first, other) for other in masks[i + 1 :])


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
def test_full_info_level_is_refused_not_silently_reduced(env_id):
    """The batch returns the minimal info keys only: asked for ``"full"`` it says so instead of returning less."""
    with pytest.raises(ValueError, match="info_level='full'"):
        gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", info_level="full")
    minimal = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", info_level="minimal")
    assert all(copy.unwrapped.config.info_level == "minimal" for copy in minimal.unwrapped.envs)


@pytest.mark.parametrize("env_id", sorted(VECTOR_ENTRY_POINTS))
def test_a_step_where_every_copy_autoresets_carries_only_the_reset_info(env_id):
    """As ``SyncVectorEnv``: no step keys (with all-False masks) on a step where no copy steps."""
    kwargs = {"num_envs": 2, "horizon": HORIZON, "info_level": "minimal"}
    native = gym.make_vec(env_id, vectorization_mode="vector_entry_point", **kwargs)
    sync = gym.make_vec(env_id, vectorization_mode="sync", **kwargs)
    native.reset(seed=0), sync.reset(seed=0)
    for _ in range(HORIZON + 1):  # the last step autoresets both copies
        info, expected = native.step(_actions(native))[4], sync.step(_actions(sync))[4]
    assert info.keys() == expected.keys()
    for key, value in expected.items():
        np.testing.assert_array_equal(info[key], value, err_msg=key)
