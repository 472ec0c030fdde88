"""Tianshou: PPO through its high-level API on an RL-ready id, each copy made by gymnasium.make(id)."""

import sys

from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import ExperimentConfig, PPOExperimentBuilder

if __name__ == "__main__":
    env_id, steps = sys.argv[1], int(sys.argv[2])  # e.g. cluster_envs:ClusterSLARL-v1 200000
    experiment = PPOExperimentBuilder(
        EnvFactoryRegistered(task=env_id, venv_type=VectorEnvType.SUBPROC_SHARED_MEM_AUTO),
        ExperimentConfig(device="cpu", watch=False, persistence_enabled=False),
        OnPolicyTrainingConfig(
            max_epochs=1,
            epoch_num_steps=steps,
            num_training_envs=2,
            num_test_envs=1,
            test_step_num_episodes=1,
            collection_step_num_env_steps=512,
            batch_size=128,
        ),
    ).build()
    experiment.run()
