"""The RL-ready ids (``cluster_envs.registration.RL_IDS``): one Box observation and a Box, Discrete or
MultiDiscrete action, the benchmark row's training kwargs on the base id, and an id-only client trains on them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs import rl_ids
from cluster_envs.registration import ENTITY_RL_IDS, ENV_ENTRY_POINTS, RL_IDS, VECTOR_ENTRY_POINTS

BENCHMARKED = [i for i in rl_ids() if i not in ENTITY_RL_IDS]  # the PPO interfaces
ACTION_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete)


def test_every_rl_id_is_named_after_its_base_id_and_registered_with_its_entry_points():
    for env_id, (base, kwargs) in RL_IDS.items():
        # its own version; "Entity": the instance-independent interface (observation_mode="entity")
        infix = "Entity" if kwargs.get("observation_mode") == "entity" else ""
        assert env_id.rpartition("-v")[0] == base.rpartition("-v")[0] + infix + "RL"
        spec = gym.spec(env_id)
        assert spec.entry_point == ENV_ENTRY_POINTS[base]
        assert spec.vector_entry_point == VECTOR_ENTRY_POINTS.get(base)
        assert spec.kwargs == kwargs


@pytest.mark.parametrize("env_id", rl_ids())
def test_spaces_are_one_box_and_a_flat_action(env_id):
    env = gym.make(env_id)
    assert isinstance(env.observation_space, gym.spaces.Box) and len(env.observation_space.shape) == 1
    assert isinstance(env.action_space, ACTION_SPACES)
    if isinstance(env.action_space, gym.spaces.Box):
        assert env.action_space.dtype == np.float32 and len(env.action_space.shape) == 1
    env.close()


@pytest.mark.parametrize("env_id", rl_ids())
def test_an_rl_id_is_its_base_id_with_its_kwargs(env_id):
    """With its kwargs the base id plays the same episode: same observations, rewards and episode summary."""
    base, kwargs = RL_IDS[env_id]
    overrides = {"horizon": 60}  # any other kwarg passes through as to the base id
    envs = [gym.make(env_id, **overrides), gym.make(base, **{**kwargs, **overrides})]
    envs[0].action_space.seed(3)
    actions = [envs[0].action_space.sample() for _ in range(60)]
    runs = []
    for env in envs:
        obs, _ = env.reset(seed=5)
        run = [obs]
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            run += [obs, reward]
        assert truncated or terminated
        runs.append((run, info["episode_summary"]))
        env.close()
    (a, summary_a), (b, summary_b) = runs
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert summary_a == summary_b


@pytest.mark.parametrize("env_id", rl_ids())
def test_the_native_batched_env_has_the_same_spaces(env_id):
    env, vec = gym.make(env_id), gym.make_vec(env_id, 2, vectorization_mode="vector_entry_point")
    assert vec.single_observation_space == env.observation_space
    assert vec.single_action_space == env.action_space
    env.close()
    vec.close()


@pytest.mark.parametrize("env_id", rl_ids())
def test_an_id_only_client_trains_sb3_ppo(env_id):
    """What a user types, and nothing else: the id, SB3's PPO with its MLP policy, a few hundred steps."""
    sb3 = pytest.importorskip("stable_baselines3")
    model = sb3.PPO("MlpPolicy", gym.make(env_id), n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps == 256
    obs, _ = model.get_env().envs[0].reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert model.get_env().envs[0].action_space.contains(action)


# the Dict contents in a one-Box form (the entity rows are one Box of their own)
FLATTENED_DICT_IDS = [
    i
    for i in rl_ids()
    if RL_IDS[i][1].get("observation_format") in ("flat", "scaled") and RL_IDS[i][1].get("observation_mode") != "entity"
]


@pytest.mark.parametrize("env_id", FLATTENED_DICT_IDS)
def test_the_flat_observation_is_the_base_ids_dict_flattened(env_id):
    """``observation_format="flat"`` is ``gymnasium.spaces.flatten`` of the Dict the base id shows with the same
    action reading, step for step (so a policy trained through ``FlattenObservation`` reads it unchanged);
    ``"scaled"`` (the ClusterApprox RL ids) is that array divided by the flat Box's public upper bounds, as float32,
    so every entry lies in [low/high, 1]."""
    base, kwargs = RL_IDS[env_id]
    mine = gym.make(env_id, horizon=40)
    theirs = gym.make(base, **{**kwargs, "observation_format": "dict", "horizon": 40})
    flat_space = gym.spaces.flatten_space(theirs.observation_space)
    scaled = kwargs["observation_format"] == "scaled"
    if scaled:
        assert mine.observation_space.dtype == np.float32 and mine.observation_space.high.max() == 1.0
    flat, _ = mine.reset(seed=4)
    obs, _ = theirs.reset(seed=4)
    mine.action_space.seed(4)
    for _ in range(40):
        assert mine.observation_space.contains(flat)
        expected = gym.spaces.flatten(theirs.observation_space, obs)
        if scaled:
            expected = (expected / np.where(flat_space.high > 0, flat_space.high, 1.0)).astype(np.float32)
        np.testing.assert_array_equal(flat, expected)
        action = mine.action_space.sample()
        flat, *_ = mine.step(action)
        obs, *_ = theirs.step(action)


@pytest.mark.parametrize("env_id", BENCHMARKED)
def test_an_rl_id_is_the_task_and_interface_the_benchmarks_ppo_trains_on(env_id):
    """The protocol entry's env kwargs (what the headline scores: reward, service model, horizon, preset) and PPO's
    kwargs (rl_needs, its FlattenObservation wrapper read as observation_format="flat"), with the minimal info. The
    ClusterApprox RL ids show the flat observation scaled (``"scaled"``, float32 of O(1)) where the benchmark's PPO
    trains on ``"flat"`` through VecNormalize (the shipped models): the one difference, in the observation's
    units only."""
    from baselines.eval.protocol import FLATTEN, require_setting

    base, kwargs = RL_IDS[env_id]
    setting = require_setting(base)
    trained = {**setting.env_kwargs, **setting.rl_needs("ppo")}
    if setting.rl_wrapper == FLATTEN:
        trained["observation_format"] = "flat"
    if kwargs.get("observation_format") == "scaled":
        assert trained["observation_format"] == "flat"
        trained["observation_format"] = "scaled"
    assert kwargs == {**trained, "info_level": "minimal"}


@pytest.mark.parametrize("env_id", BENCHMARKED)
def test_an_rl_id_trains_with_its_base_ids_hyperparameters_and_its_own_kwargs(env_id):
    pytest.importorskip("yaml")
    from baselines.eval.protocol import require_setting
    from baselines.rl.config import RunConfig

    base, fixed = RL_IDS[env_id]
    config = RunConfig.resolve("ppo", env_id)
    assert config.section == RunConfig.resolve("ppo", base).section
    assert config.env_kwargs == {**require_setting(base).env_kwargs, **config.section.get("env_kwargs", {}), **fixed}


def test_cluster_envs_train_takes_an_rl_id(tmp_path):
    """`cluster-envs train <RL id>` (an id-only client) trains, and the run loads as an agent that acts in the id."""
    pytest.importorskip("stable_baselines3")
    from baselines.cli import main
    from baselines.eval.harness import rollout
    from baselines.rl.agent import load_agent

    env_id = "ClusterSLARL-v1"  # the cheapest to step; the others differ only in their kwargs (test above)
    out = tmp_path / "run"
    assert main(["train", env_id, "--steps", "64", "--set", "horizon=30", "--out", str(out), "--quiet"]) == 0
    agent = load_agent(out)
    assert agent.trained_with.items() >= RL_IDS[env_id][1].items()
    assert np.isfinite(rollout(env_id, agent, seed=0, env_kwargs={"horizon": 30}).metrics["return"])


def test_an_rl_id_refuses_an_algorithm_whose_interface_it_does_not_fix():
    pytest.importorskip("yaml")
    from baselines.rl.config import RunConfig

    with pytest.raises(ValueError, match="ClusterGangRL-v1, which fixes it"):
        RunConfig.resolve("ppo_mask", "ClusterGangRL-v1")


@pytest.mark.parametrize("env_id", rl_ids())
def test_sb3_trains_on_the_native_batched_env_through_cluster_envs_adapter(env_id):
    """``gym.make_vec(id, vectorization_mode="vector_entry_point")`` as SB3 takes it, through ``cluster_envs.sb3``
    (Gymnasium's autoreset mode read from the env's metadata and attribute)."""
    sb3 = pytest.importorskip("stable_baselines3")
    from gymnasium.vector import AutoresetMode

    from cluster_envs.sb3 import NativeVecEnv

    vec = gym.make_vec(env_id, num_envs=4, vectorization_mode="vector_entry_point", horizon=48)
    assert vec.metadata["autoreset_mode"] == vec.unwrapped.autoreset_mode == AutoresetMode.NEXT_STEP
    model = sb3.PPO("MlpPolicy", NativeVecEnv(vec), n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps == 256
    model.get_env().close()


def test_the_core_package_imports_no_sb3():
    import subprocess
    import sys

    code = (
        "import sys, gymnasium; gymnasium.make('cluster_envs:ClusterSLARL-v1'); "
        "print('stable_baselines3' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
