"""RLlib: PPO with 2 env runners (Ray workers, which import nothing of ours) on an RL-ready id."""

import sys

from ray.rllib.algorithms.ppo import PPOConfig

if __name__ == "__main__":
    env_id, steps = sys.argv[1], int(sys.argv[2])  # e.g. cluster_envs:ClusterSLARL-v1 200000
    config = (
        PPOConfig()
        .environment(env_id)
        .env_runners(num_env_runners=2)
        .training(train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=2)
    )
    algo = config.build_algo()
    while True:
        result = algo.train()
        if result["num_env_steps_sampled_lifetime"] >= steps:
            break
    algo.stop()
