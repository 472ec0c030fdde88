"""The hyperparameter files are rl-zoo3's format: the real rl_zoo3 client trains from them on every id with
a settings entry, and their env kwargs agree with the settings table."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import pytest

from baselines.eval.protocol import SETTINGS
from baselines.rl.config import ALGOS, HYPERPARAMS_DIR, MASKED
from cluster_envs import env_ids
from cluster_envs.registration import ENTITY_RL_IDS
from cluster_envs.registration import RL_IDS as RL_READY_IDS

yaml = pytest.importorskip("yaml")

RL_IDS = [env_id for env_id in env_ids() if env_id in SETTINGS]


BOX_ONLY = {"sac", "td3"}  # the others (but MaskablePPO) take Box, MultiBinary and MultiDiscrete actions


pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker


def _usable(algo: str, env: gym.Env) -> bool:
    if algo == "ppo_lstm" and isinstance(env.action_space, gym.spaces.MultiBinary):
        return False  # sb3-contrib 2.9.2's RecurrentPPO fails on int8 (MultiBinary) actions
    if algo in MASKED:
        return hasattr(env.unwrapped, "action_masks") and not isinstance(env.action_space, gym.spaces.Box)
    return algo not in BOX_ONLY or isinstance(env.action_space, gym.spaces.Box)


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_every_settings_entry_has_hyperparameters_that_agree(algo):
    """A section wherever the algorithm can act in the env as RL sees it, with the settings' kwargs and wrapper."""
    sections = yaml.safe_load((HYPERPARAMS_DIR / f"{algo}.yml").read_text())
    assert set(sections) <= set(SETTINGS) | (set(PPO_RL_IDS) if algo == "ppo" else set())
    for env_id, setting in SETTINGS.items():
        env = gym.make(env_id, **setting.training_kwargs(algo))
        usable = _usable(algo, env)
        env.close()
        assert (env_id in sections) == usable, f"{algo}.yml: section for {env_id} should exist: {usable}"
        if usable:
            assert sections[env_id]["env_kwargs"] == setting.training_kwargs(algo)
            assert sections[env_id].get("env_wrapper") == setting.rl_wrapper


PPO_RL_IDS = [i for i in RL_READY_IDS if i not in ENTITY_RL_IDS]  # the benchmark's PPO interfaces


@pytest.mark.parametrize("env_id", PPO_RL_IDS)
def test_rl_zoo3_finds_the_hyperparameters_of_an_rl_id(env_id, tmp_path):
    """rl-zoo3 looks a section up by the id it is given: an RL-ready id's is its base id's, with no env kwargs
    (the id fixes them) and no wrapper (its observation is one Box)."""
    import argparse

    exp_manager = pytest.importorskip("rl_zoo3.exp_manager")
    manager = exp_manager.ExperimentManager(argparse.Namespace(), "ppo", env_id, str(tmp_path),
                                            config=str(HYPERPARAMS_DIR / "ppo.yml"))  # fmt: skip
    found, _ = manager.read_hyperparameters()
    base = dict(yaml.safe_load((HYPERPARAMS_DIR / "ppo.yml").read_text())[RL_READY_IDS[env_id][0]])
    base.pop("env_wrapper", None)
    assert {k: v for k, v in found.items() if k != "env_wrapper"} == {**base, "env_kwargs": {}}
    assert found.get("env_wrapper") is None


# One process trains every id in turn through rl-zoo3's own command-line entry point (its argument parsing,
# YAML reading, env and wrapper construction), so torch and rl-zoo3 are imported once rather than per id.
ZOO_DRIVER = """
import sys
from rl_zoo3.train import train

conf, logs, *env_ids = sys.argv[1:]
for env_id in env_ids:
    sys.argv = ["rl_zoo3.train", "--algo", "ppo", "--env", env_id, "--gym-packages", "cluster_envs", "-n", "2000",
                "-conf", conf, "-f", logs, "--seed", "0", "--eval-freq", "-1", "--no-optim-plots"]
    train()
"""


@pytest.fixture(scope="module")
def zoo_logs(tmp_path_factory):
    pytest.importorskip("rl_zoo3")
    folder = tmp_path_factory.mktemp("zoo")
    command = [sys.executable, "-c", ZOO_DRIVER, str(HYPERPARAMS_DIR / "ppo.yml"), str(folder / "logs"), *RL_IDS]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "logs"


@pytest.mark.parametrize("env_id", RL_IDS)
def test_rl_zoo3_trains_from_our_yaml(env_id, zoo_logs):
    run = zoo_logs / "ppo" / f"{env_id}_1"
    assert (run / f"{env_id}.zip").is_file()
    assert (run / env_id / "vecnormalize.pkl").is_file()
    saved = yaml.load((run / env_id / "config.yml").read_text(), Loader=yaml.UnsafeLoader)  # rl-zoo3's OrderedDict
    setting = SETTINGS[env_id]
    assert saved["env_kwargs"] == setting.rl_training_kwargs
    assert saved.get("env_wrapper") == setting.rl_wrapper
    from baselines.eval.harness import rollout
    from baselines.rl.agent import load_agent

    agent = load_agent(run)  # the adapter reads rl-zoo3's run folder too, and applies its env_wrapper
    assert agent.env_kwargs == dict(setting.rl_env_kwargs)
    assert rollout(env_id, agent, seed=0, env_kwargs=setting.env_kwargs, record=()).metrics["steps"] > 0
