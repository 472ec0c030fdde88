"""A refused ``reset`` changes nothing, seed streams included (issue 28), for every registered id: a copy taken
before the refused reset and the env itself play the same next episode."""

from __future__ import annotations

import ast
import copy

import gymnasium as gym
import numpy as np
import pytest

from .robust_common import REGISTERED, assert_same_steps, flatten, run_actions, sample_action

BAD_VALUES = [1j, "0.5", np.array([1j, 2j]), float("nan"), {"bogus": 1}, object()]


def reset_options(env: gym.Env) -> list[str]:
    """The reset options ``env`` allows, read from its refusal of an unknown one."""
    with pytest.raises(ValueError, match="allowed: ") as refused:
        env.reset(options={"not-an-option": 1})
    return ast.literal_eval(str(refused.value).rsplit("allowed: ", 1)[1])


@pytest.mark.parametrize("env_id", REGISTERED)
def test_a_refused_reset_leaves_the_next_episode_unchanged(env_id):
    env = gym.make(env_id)
    env.reset(seed=3)
    before = copy.deepcopy(env)
    refused = 0
    for options in ["not a dict", 7, {"not-an-option": 1}] + [
        {k: bad} for k in reset_options(env) for bad in BAD_VALUES
    ]:
        try:
            env.reset(seed=12345, options=options)
        except (ValueError, TypeError):
            refused += 1
        else:  # a value this option accepts: not a refusal; go on from the state before
            env = copy.deepcopy(before)
    assert refused >= 3
    label = f"{env_id} after {refused} refused resets"
    # the seed stream is where it was (an env whose episode does not draw from it would not show a change)
    assert env.unwrapped.np_random.bit_generator.state == before.unwrapped.np_random.bit_generator.state, label
    actions = [sample_action(env.action_space, np.random.default_rng(k)) for k in range(8)]
    assert_same_steps(run_actions(env, actions), run_actions(before, actions), label)
    # ... and the seed stream: the next unseeded reset draws the same episode too
    np.testing.assert_array_equal(flatten(env.reset()[0]), flatten(before.reset()[0]), err_msg=label)


@pytest.mark.parametrize("bad", [1 + 1j, "0.5", "1"])
def test_sla_loads_refuse_complex_values_and_numeric_strings(bad):
    env = gym.make("ClusterSLA-v1")
    shape = (env.unwrapped.config.n_users, env.unwrapped.config.horizon)
    for loads in (np.full(shape, bad), np.full(shape, bad).tolist()):
        with pytest.raises(ValueError, match=r"options\['loads'\] must hold real numbers"):
            env.reset(seed=0, options={"loads": loads})
