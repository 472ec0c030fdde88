"""Misuse of the episode life cycle, for every id: stepping before reset or after the episode end, and reset
options that are unknown or not a dict, all get an error that says what to do (never an AttributeError or a
silently ignored option)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

from .robust_common import IDS, assert_same_steps, config_fields, flatten, run_actions, sample_action


@pytest.mark.parametrize("env_id", IDS)
def test_step_before_reset_says_to_reset(env_id):
    env = gym.make(env_id).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step(sample_action(env.action_space, np.random.default_rng(0)))


@pytest.mark.parametrize("env_id", IDS)
def test_step_after_the_episode_end_says_to_reset(env_id):
    if not any(f.name == "horizon" for f in config_fields(gym.make(env_id))):
        pytest.skip("no horizon kwarg to make the episode short")
    env = gym.make(env_id, horizon=60).unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(100 * 60):
        if any(env.step(sample_action(env.action_space, rng))[2:4]):
            break
    else:
        pytest.fail(f"{env_id}: no episode end within 6000 steps at horizon=60")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(sample_action(env.action_space, rng))


@pytest.mark.parametrize("env_id", IDS)
def test_unknown_reset_option_is_named(env_id):
    with pytest.raises(ValueError, match="no_such_option"):
        gym.make(env_id).reset(seed=0, options={"no_such_option": 1})


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("options", [5, ["loads"], "loads"], ids=["int", "list", "str"])
def test_reset_options_that_are_not_a_dict_are_a_clear_error(env_id, options):
    with pytest.raises(ValueError, match="options"):
        gym.make(env_id).reset(seed=0, options=options)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("options", [{"no_such_option": 1}, "loads"], ids=["unknown", "not_a_dict"])
def test_a_rejected_reset_leaves_the_episode_and_the_seed_stream_alone(env_id, options):
    """A reset that raises must not have re-seeded the env: the episode, and the next unseeded reset, go on
    as in an untouched copy."""
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    run_actions(env, [sample_action(env.action_space, rng) for _ in range(3)])
    twin = copy.deepcopy(env)
    with pytest.raises(ValueError):
        env.reset(seed=123, options=options)
    probe = [sample_action(env.action_space, rng) for _ in range(3)]
    assert_same_steps(run_actions(env, probe), run_actions(twin, probe), f"{env_id}: after a rejected reset")
    np.testing.assert_array_equal(flatten(env.reset()[0]), flatten(twin.reset()[0]))
