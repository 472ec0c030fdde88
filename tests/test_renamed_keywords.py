"""Every renamed keyword (a config class's ``RENAMED``, old -> new) still works for one minor version: the old
name sets the new field with a ``DeprecationWarning`` that names both, and giving both names is a ValueError.
Likewise every renamed preset (``RENAMED_PRESETS``); every setting's default preset is named ``default``."""

from __future__ import annotations

import dataclasses
import inspect

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator

from cluster_envs import env_ids


def _renames(table: str) -> list[tuple[str, str, str]]:
    """(env id, old, new) of every entry of the config classes' ``table`` (``RENAMED`` or ``RENAMED_PRESETS``)."""
    out = []
    for env_id in env_ids():
        config_class = load_env_creator(gym.spec(env_id).entry_point).config_class
        out += [(env_id, old, new) for old, new in getattr(config_class, table, {}).items()]
    return out


RENAMES = _renames("RENAMED")


def test_the_renames_cover_the_deprecated_keywords():
    names = {(old, new) for _, old, new in RENAMES}
    assert {("obs_mode", "observation_mode"), ("compute_benchmark", "compute_regret"),
            ("benchmark_kind", "oracle_kind"), ("max_jobs", "max_visible_jobs")} <= names  # fmt: skip


@pytest.mark.parametrize(("env_id", "old", "new"), RENAMES)
def test_an_old_keyword_sets_the_new_field_with_a_deprecation_warning(env_id, old, new):
    default = gym.make(env_id).unwrapped.config
    value = getattr(default, new)
    field_names = {f.name for f in dataclasses.fields(default)}
    assert new in field_names and old not in field_names
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use {new}"):
        env = gym.make(env_id, **{old: value}).unwrapped
    assert getattr(env.config, new) == value
    with pytest.raises(ValueError, match=f"give {new} only"):
        gym.make(env_id, **{old: value, new: value})


def test_the_bilinear_problem_keeps_max_jobs_as_a_deprecated_alias():
    env = gym.make("ClusterBilinear-v0", max_visible_jobs=5).unwrapped
    env.reset(seed=0)
    problem = env.problem
    with pytest.warns(DeprecationWarning, match="max_jobs is deprecated: use max_visible_jobs"):
        assert problem.max_jobs == problem.max_visible_jobs == 5


PRESET_RENAMES = _renames("RENAMED_PRESETS")


def test_every_settings_default_preset_is_named_default():
    for env_id in env_ids():
        env_class = load_env_creator(gym.spec(env_id).entry_point)
        assert inspect.signature(env_class.__init__).parameters["preset"].default == "default", env_id
        assert "default" in env_class.presets, env_id
    assert {(env_id, old) for env_id, old, _ in PRESET_RENAMES} == {
        ("ClusterSLA-v0", "paper_synthetic_small"), ("ClusterBilinear-v0", "paper"),
        ("ClusterMultiServer-v0", "paper"), ("ClusterGang-v0", "small")}  # fmt: skip


@pytest.mark.parametrize(("env_id", "old", "new"), PRESET_RENAMES)
def test_an_old_preset_name_builds_the_new_preset_with_a_deprecation_warning(env_id, old, new):
    with pytest.warns(DeprecationWarning, match=f"preset='{old}' is deprecated: use preset='{new}'"):
        env = gym.make(env_id, preset=old).unwrapped
    assert env.config == gym.make(env_id, preset=new).unwrapped.config and env.preset == new
    assert old not in env.presets  # listed once, under its new name
