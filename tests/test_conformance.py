"""Registry-wide conformance: every id this package registers goes through the same checks."""

from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cluster_envs import env_ids, rl_ids

IDS = env_ids() + rl_ids()  # the RL-ready ids too
RANDOM_STEPS = 2000


def _sample_actions(env: gym.Env, seed: int, count: int) -> list:
    env.action_space.seed(seed)
    return [env.action_space.sample() for _ in range(count)]


def _flatten(obs) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for _, v in sorted(obs.items())])
    return np.asarray(obs, dtype=np.float64).ravel()


def _scalars(info: dict) -> list[float]:
    """The numeric info values (scalars and arrays, raveled): with the minimal info, arrays may be all there is."""
    values = [np.ravel(v) for _, v in sorted(info.items()) if isinstance(v, (int, float, np.number, np.ndarray))]
    return [float(x) for v in values if v.dtype.kind in "biuf" for x in v]


def _rollout(env: gym.Env, actions: list, seed: int) -> list[np.ndarray]:
    """Observations, rewards and the scalar info values (where the hidden exogenous sequence shows)."""
    obs, _ = env.reset(seed=seed)
    out = [_flatten(obs)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append(np.concatenate([_flatten(obs), [reward], _scalars(info)]))
        if terminated or truncated:
            obs, _ = env.reset()
            out.append(_flatten(obs))
    return out


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_env_checker(env_id):
    env = gym.make(env_id).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=False)


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_env_checker(env_id):
    sb3_env_util = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_env_util.check_env(gym.make(env_id).unwrapped, warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_same_seed_same_trajectory(env_id):
    env = gym.make(env_id)
    actions = _sample_actions(env, 0, 200)
    first = _rollout(env, actions, seed=123)
    np.random.seed(999)  # noqa: NPY002  (disturb the global RNG between the two runs)
    np.random.rand(17)  # noqa: NPY002
    second = _rollout(gym.make(env_id), actions, seed=123)
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("env_id", IDS)
def test_different_seeds_differ_and_reset_seed_leaves_no_state(env_id):
    env = gym.make(env_id)
    # 300 steps: ClusterApprox-v1's default instances show no job for about the first 100 slots, and its prices,
    # public since v1, no longer differ by seed
    actions = _sample_actions(env, 0, 300)
    first = _rollout(env, actions, seed=1)
    other = _rollout(env, actions, seed=2)
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(first, other, strict=False))
    again = _rollout(env, actions, seed=1)  # same instance, after another episode
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("clone", [pickle.loads, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_clone_mid_episode_continues_identically(env_id, clone):
    env = gym.make(env_id).unwrapped
    actions = _sample_actions(env, 1, 60)
    env.reset(seed=5)
    for action in actions[:30]:
        env.step(action)
    twin = clone(pickle.dumps(env)) if clone is pickle.loads else clone(env)
    for action in actions[30:]:
        a = env.step(action)
        b = twin.step(action)
        np.testing.assert_array_equal(_flatten(a[0]), _flatten(b[0]))
        assert a[1:4] == b[1:4]


@pytest.mark.parametrize("env_id", IDS)
def test_sync_vector_env_steps(env_id):
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(3)])
    envs.reset(seed=[0, 1, 2])
    envs.action_space.seed(0)
    for _ in range(20):
        _, rewards, _, _, _ = envs.step(envs.action_space.sample())
        assert np.isfinite(rewards).all()
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
def test_observations_stay_in_space_under_random_actions(env_id):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=7)
    assert env.observation_space.contains(obs)
    for step, action in enumerate(_sample_actions(env, 7, RANDOM_STEPS)):
        previous, previous_copy = obs, copy.deepcopy(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs), f"{env_id}: observation left its space at step {step}"
        assert type(reward) is float and np.isfinite(reward), f"{env_id}: reward {reward!r} at step {step}"
        assert type(terminated) is bool and type(truncated) is bool
        assert isinstance(info, dict)
        np.testing.assert_array_equal(_flatten(previous), _flatten(previous_copy), err_msg="observation buffer reused")
        if terminated or truncated:
            obs, _ = env.reset()
            assert env.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", IDS)
def test_unknown_kwarg_is_a_clear_error(env_id):
    with pytest.raises(ValueError, match="no_such_option"):
        gym.make(env_id, no_such_option=1)


@pytest.mark.parametrize("env_id", IDS)
def test_unknown_preset_is_a_clear_error(env_id):
    with pytest.raises(ValueError, match="preset"):
        gym.make(env_id, preset="no_such_preset")


@pytest.mark.parametrize("env_id", IDS)
def test_non_finite_action_is_rejected_and_leaves_env_unchanged(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=3)
    actions = _sample_actions(env, 3, 10)
    for action in actions[:5]:
        env.step(action)
    twin = copy.deepcopy(env)
    bad = np.asarray(actions[5], dtype=np.float64).copy()
    if bad.dtype.kind == "f" and bad.size:
        bad.flat[0] = np.nan
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(np.asarray(actions[5]).size + 1))
    for action in actions[5:]:
        a, b = env.step(action), twin.step(action)
        np.testing.assert_array_equal(_flatten(a[0]), _flatten(b[0]))
        assert a[1] == b[1]


def test_import_registers_idempotently_and_module_prefix_works():
    import importlib

    import cluster_envs

    importlib.reload(cluster_envs)
    cluster_envs.register_envs()
    env = gym.make(f"cluster_envs:{IDS[0]}")
    env.reset(seed=0)


def _shape(value) -> tuple:
    if isinstance(value, dict):
        return tuple(sorted((key, _shape(v)) for key, v in value.items()))
    array = np.asarray(value)
    return array.shape, array.dtype.kind


@pytest.mark.parametrize("env_id", IDS)
def test_minimal_info_keys_keep_their_shapes_and_rl_ids_default_to_it(env_id):
    """What replay buffers (Tianshou's, TorchRL's) store: with ``info_level="minimal"`` every step's info has the
    same keys, each of one shape and dtype kind, over episodes and resets (``episode_summary`` only at the end)."""
    env = gym.make(env_id) if env_id in rl_ids() else gym.make(env_id, info_level="minimal")
    assert env.unwrapped.config.info_level == "minimal"
    env.reset(seed=0)
    seen = None
    for action in _sample_actions(env, 0, 600):
        _, _, terminated, truncated, info = env.step(action)
        info.pop("episode_summary", None)
        shapes = {key: _shape(value) for key, value in info.items()}
        assert seen is None or shapes == seen, f"{env_id}: info changed from {seen} to {shapes}"
        seen = shapes
        if terminated or truncated:
            env.reset()
