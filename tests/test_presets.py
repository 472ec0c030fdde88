"""One preset vocabulary: every setting's default preset is named ``default``, and no keyword or preset has an old
name (nothing was released): an old name is an unknown one, refused with the allowed names."""

from __future__ import annotations

import inspect

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator

from cluster_envs import env_ids


def test_every_settings_default_preset_is_named_default():
    for env_id in env_ids():
        env_class = load_env_creator(gym.spec(env_id).entry_point)
        assert inspect.signature(env_class.__init__).parameters["preset"].default == "default", env_id
        assert "default" in env_class.presets, env_id


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("ClusterSLA-v1", {"preset": "paper_synthetic_small"}, "is not a known preset"),
        ("ClusterMultiServer-v0", {"preset": "paper"}, "is not a known preset"),
        ("ClusterBilinear-v0", {"preset": "paper"}, "is not a known preset"),
        ("ClusterSLA-v1", {"obs_mode": "full"}, "unexpected keyword argument"),
        ("ClusterApprox-v1", {"compute_benchmark": True}, "unexpected keyword argument"),
        ("ClusterBilinear-v0", {"max_jobs": 4}, "unexpected keyword argument"),
    ],
)
def test_an_unreleased_old_name_is_refused_with_the_allowed_ones(env_id, kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make(env_id, **kwargs)
