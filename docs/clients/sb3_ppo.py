"""stable-baselines3: PPO on an RL-ready id, its copies in subprocesses (which import nothing of ours)."""

import sys

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

if __name__ == "__main__":
    env_id, steps = sys.argv[1], int(sys.argv[2])  # e.g. cluster_envs:ClusterSLARL-v1 200000
    env = make_vec_env(env_id, n_envs=2, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "spawn"})
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=128, device="cpu")
    model.learn(total_timesteps=steps)
