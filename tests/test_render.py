"""Every registered id renders ``"rgb_array"`` frames (the mode SB3's ``make_vec_env`` asks for) of the shape its sheet
states, and rendering never changes the trajectory."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs import env_ids
from cluster_envs.common.render import BLUE, MAX_WIDTH, RED, RULE, TRACK, WHITE, bar_chart

IDS = env_ids()
# The default preset's frame, as each docs/envs sheet states it.
FRAME_SHAPES = {
    "ClusterSLA-v1": (120, 104, 3),
    "ClusterApprox-v1": (242, 585, 3),
    "ClusterApproxSingleJob-v0": (242, 448, 3),
    "ClusterBilinear-v0": (120, 448, 3),
    "ClusterMultiServer-v0": (364, 598, 3),
    "ClusterGang-v0": (364, 635, 3),
}
STEPS = 30


def _actions(env: gym.Env) -> list:
    env.action_space.seed(0)
    return [env.action_space.sample() for _ in range(STEPS)]


def _records(env: gym.Env, actions: list, render: bool) -> tuple[list, list]:
    """(per step: observation, reward, flags and scalar info; the frames rendered after reset and every step)."""
    obs, _ = env.reset(seed=7)
    frames = [env.render()] if render else []
    records = [gym.spaces.flatten(env.observation_space, obs)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        scalars = [float(v) for _, v in sorted(info.items()) if isinstance(v, (int, float, np.number))]
        flat = gym.spaces.flatten(env.observation_space, obs)
        records.append(np.concatenate([flat, [reward, terminated, truncated], scalars]))
        if render:
            frames.append(env.render())
    return records, frames


def test_every_id_has_a_documented_frame_shape():
    assert sorted(FRAME_SHAPES) == sorted(IDS)


@pytest.mark.parametrize("env_id", IDS)
def test_rgb_array_frames_have_the_documented_shape(env_id):
    assert str(FRAME_SHAPES[env_id]) in gym.spec(env_id).make().unwrapped.__doc__  # its spec sheet
    env = gym.make(env_id, render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"]
    _, frames = _records(env, _actions(env), render=True)
    for frame in frames:
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        assert frame.shape == FRAME_SHAPES[env_id]


@pytest.mark.parametrize("env_id", IDS)
def test_rendering_leaves_the_trajectory_identical(env_id):
    plain = gym.make(env_id)
    actions = _actions(plain)
    expected, _ = _records(plain, actions, render=False)
    rendered, _ = _records(gym.make(env_id, render_mode="rgb_array"), actions, render=True)
    for a, b in zip(expected, rendered, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_make_vec_env_builds_and_steps(env_id):
    env_util = pytest.importorskip("stable_baselines3.common.env_util")
    vec = env_util.make_vec_env(env_id, n_envs=2)  # passes render_mode="rgb_array" to gym.make
    vec.seed(0)
    vec.reset()
    for _ in range(3):
        vec.step(np.stack([vec.action_space.sample() for _ in range(2)]))
    assert [image.shape for image in vec.get_images()] == [FRAME_SHAPES[env_id]] * 2
    vec.close()


def test_bar_chart_draws_clipped_levels_over_a_track_and_stacks_panels():
    image = bar_chart((np.array([[1.0, 0.0], [np.nan, 2.0]]), (BLUE, RED)))
    assert image.shape == (120, 8 + 2 * (2 * 12 + 8), 3)  # gap + groups × (bars × 12 px + gap)
    column = image[:, 8]  # group 0, bar 0 at level 1: every row but the top one
    assert (column[1:] == BLUE).all() and (column[0] == WHITE).all()
    assert (image[1:, 20] == TRACK).all()  # group 0, bar 1 at level 0: only the track
    assert (image[1:, 40] == TRACK).all()  # NaN draws nothing
    assert (image[1:, 52] == RED).all()  # 2 is clipped to 1
    wide = bar_chart((np.full((300, 3), 0.5), (BLUE, RED, BLUE)), (np.ones((1, 1)), (RED,)))
    assert wide.shape == (242, 300 * 3, 3)  # 1 px bars without gaps: wider than MAX_WIDTH only when it must be
    assert (wide[120:122] == RULE).all() and bar_chart((np.ones((40, 2)), (BLUE, RED))).shape[1] <= MAX_WIDTH


@pytest.mark.parametrize("env_id", IDS)
def test_the_constructor_refuses_other_modes_and_gym_make_wraps_them_as_gymnasium_specifies(env_id):
    """``metadata`` is a plain dict (gymnasium's contract): ``gym.make`` serves "human" with its HumanRendering
    and "rgb_array_list" with its RenderCollection over the "rgb_array" mode; the env itself accepts only its own."""
    env_class = gym.spec(env_id).entry_point
    env_class = getattr(__import__(env_class.split(":")[0], fromlist=["_"]), env_class.split(":")[1])
    assert isinstance(env_class.metadata, dict) and env_class.metadata["render_modes"] == ["ansi", "rgb_array"]
    with pytest.raises(ValueError, match=r"render_mode='human' is not supported; supported: None, 'ansi', 'rgb_array'"):
        env_class(render_mode="human")
    with pytest.raises(ValueError, match="render_mode='rgb_array_list'"):
        env_class(render_mode="rgb_array_list")
    with pytest.warns(UserWarning, match="HumanRendering wrapper is being applied"):
        human = gym.make(env_id, render_mode="human")
    assert isinstance(human, gym.wrappers.HumanRendering) and human.unwrapped.render_mode == "rgb_array"
    collected = gym.make(env_id, render_mode="rgb_array_list")
    collected.reset(seed=0)
    collected.step(collected.action_space.sample())
    frames = collected.render()
    assert len(frames) == 2 and frames[0].shape == FRAME_SHAPES[env_id]


@pytest.mark.parametrize("env_id", IDS)
def test_an_unknown_keyword_lists_the_constructors_own_keywords_too(env_id):
    """Python's form ("unexpected keyword argument 'x'"), both a TypeError (what TorchRL's GymEnv catches to drop
    an optional keyword) and a ValueError (every refused setting's class)."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour'; allowed: \[") as err:
        gym.make(env_id, colour=3)
    assert isinstance(err.value, ValueError)
    assert "'preset'" in str(err.value) and "'render_mode'" in str(err.value)
