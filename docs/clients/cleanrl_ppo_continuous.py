"""A CleanRL-style single file: ppo_continuous_action.py's env setup (its gymnasium 1.x form) and PPO update."""

import sys

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions.normal import Normal


def make_env(env_id, gamma):
    def thunk():
        env = gym.make(env_id)
        env = gym.wrappers.FlattenObservation(env)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = gym.wrappers.ClipAction(env)
        env = gym.wrappers.NormalizeObservation(env)
        env = gym.wrappers.TransformObservation(env, lambda obs: np.clip(obs, -10, 10), env.observation_space)
        env = gym.wrappers.NormalizeReward(env, gamma=gamma)
        env = gym.wrappers.TransformReward(env, lambda reward: np.clip(reward, -10, 10))
        return env

    return thunk


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        n_obs, n_act = np.prod(envs.single_observation_space.shape), np.prod(envs.single_action_space.shape)
        self.critic = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor_mean = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                                        nn.Linear(64, n_act))  # fmt: skip
        self.actor_logstd = nn.Parameter(torch.zeros(1, n_act))

    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        probs = Normal(mean, self.actor_logstd.expand_as(mean).exp())
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


if __name__ == "__main__":
    env_id, total_timesteps = sys.argv[1], int(sys.argv[2])  # e.g. cluster_envs:ClusterSLARL-v1 1000000
    num_envs, num_steps, gamma, gae_lambda, clip_coef, lr = 2, 256, 0.99, 0.95, 0.2, 3e-4
    torch.set_num_threads(1)
    envs = gym.vector.SyncVectorEnv([make_env(env_id, gamma) for _ in range(num_envs)])
    agent = Agent(envs)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    obs_buf = torch.zeros((num_steps, num_envs, *envs.single_observation_space.shape))
    act_buf = torch.zeros((num_steps, num_envs, *envs.single_action_space.shape))
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    next_obs, _ = envs.reset(seed=1)
    next_obs, next_done = torch.Tensor(next_obs), torch.zeros(num_envs)
    for _ in range(total_timesteps // (num_steps * num_envs)):
        for step in range(num_steps):
            obs_buf[step], done_buf[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            val_buf[step], act_buf[step], logp_buf[step] = value.flatten(), action, logprob
            next_obs, reward, terminations, truncations, _ = envs.step(action.numpy())
            rew_buf[step] = torch.tensor(reward, dtype=torch.float32)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(np.logical_or(terminations, truncations))
        with torch.no_grad():
            advantages, lastgaelam = torch.zeros_like(rew_buf), 0
            next_value = agent.critic(next_obs).reshape(1, -1)
            for t in reversed(range(num_steps)):
                nonterminal = 1.0 - (next_done if t == num_steps - 1 else done_buf[t + 1])
                nextvalues = next_value if t == num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + gamma * nextvalues * nonterminal - val_buf[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nonterminal * lastgaelam
            returns = advantages + val_buf
        b_obs, b_act = obs_buf.reshape(-1, *obs_buf.shape[2:]), act_buf.reshape(-1, *act_buf.shape[2:])
        b_logp, b_adv, b_ret = logp_buf.reshape(-1), advantages.reshape(-1), returns.reshape(-1)
        _, newlogp, entropy, newvalue = agent.get_action_and_value(b_obs, b_act)
        ratio = (newlogp - b_logp).exp()
        b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
        pg_loss = torch.max(-b_adv * ratio, -b_adv * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)).mean()
        loss = pg_loss - 0.0 * entropy.mean() + 0.5 * ((newvalue.view(-1) - b_ret) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
        optimizer.step()
    envs.close()
