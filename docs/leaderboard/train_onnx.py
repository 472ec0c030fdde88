"""Train a tiny policy on every RL-ready id with plain PyTorch and export each to ONNX, as a user outside the package.

Nothing here imports the benchmark (``baselines``): gymnasium makes the envs by their ``cluster_envs:`` ids and the
policy is a small PyTorch network, fitted by reward-weighted regression to random actions (the actions of the steps
with the higher rewards get the larger weights). It is a minimal stand-in for your own training loop. Each model
takes the flat observation and outputs the action inside the action space's bounds, with the observation
normalization inside the exported graph, and is written to ``OUT/<RL-ready id>.onnx``; then

    cluster-envs evaluate --all-envs --policy 'OUT/{env}.onnx' --declaration declaration.yml

scores every env (``{env}`` is each env id, or the RL-ready id where only that file exists). Training uses only
seeds from 10**6 on, never the evaluation seeds 0-9 or the validation seeds 100-104.

    python docs/leaderboard/train_onnx.py --out my_policies                      # every RL-ready id
    python docs/leaderboard/train_onnx.py --out my_policies --ids ClusterSLARL-v1 --steps 500
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

# The RL-ready ids with one flat Box observation (docs/envs: the RL-ready ids; the entity ids take a set of jobs).
RL_READY = (
    "ClusterSLARL-v1",
    "ClusterApproxRL-v2",
    "ClusterApproxSingleJobRL-v1",
    "ClusterBilinearRL-v1",
    "ClusterMultiServerRL-v1",
    "ClusterGangRL-v1",
)
TRAINING_SEED = 10**6


class Policy(torch.nn.Module):
    """Normalized observation -> MLP -> an action in [low, high] (a sigmoid scaled to the Box)."""

    def __init__(self, mean: np.ndarray, std: np.ndarray, low: np.ndarray, high: np.ndarray, hidden: int = 32):
        super().__init__()
        as_tensor = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
        self.register_buffer("mean", as_tensor(mean))
        self.register_buffer("std", as_tensor(std))
        self.register_buffer("low", as_tensor(low))
        self.register_buffer("span", as_tensor(high - low))
        self.net = torch.nn.Sequential(
            torch.nn.Linear(mean.size, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, low.size)
        )

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.low + self.span * torch.sigmoid(self.net((observation - self.mean) / self.std))


def collect(env: gym.Env, steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``steps`` transitions of uniformly random actions (new episodes on training seeds from ``TRAINING_SEED``)."""
    space = env.action_space
    observations, actions, rewards = [], [], []
    episode = 0
    observation, _ = env.reset(seed=TRAINING_SEED)
    for _ in range(steps):
        action = rng.uniform(space.low, space.high).astype(space.dtype)
        next_observation, reward, terminated, truncated, _ = env.step(action)
        observations.append(observation), actions.append(action), rewards.append(reward)
        observation = next_observation
        if terminated or truncated:
            episode += 1
            observation, _ = env.reset(seed=TRAINING_SEED + episode)
    return np.array(observations, dtype=np.float32), np.array(actions, dtype=np.float32), np.array(rewards)


def train(env_id: str, steps: int, epochs: int, seed: int) -> tuple[Policy, dict]:
    begin = time.process_time()
    torch.manual_seed(seed)
    env = gym.make(f"cluster_envs:{env_id}")
    if not isinstance(env.action_space, gym.spaces.Box) or len(env.observation_space.shape) != 1:
        raise ValueError(f"{env_id}: this script trains a flat Box observation -> Box action policy")
    x, y, r = collect(env, steps, np.random.default_rng(seed))
    env.close()
    weights = np.exp((r - r.max()) / (r.std() + 1e-8))  # reward-weighted regression, temperature one std
    weights = torch.tensor(weights / weights.mean(), dtype=torch.float32)
    space = env.action_space
    policy = Policy(x.mean(0), x.std(0) + 1e-6, space.low.astype(np.float32), space.high.astype(np.float32))
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    inputs, targets = torch.tensor(x), torch.tensor(y)
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = (weights[:, None] * (policy(inputs) - targets) ** 2).mean()
        loss.backward()
        optimizer.step()
    return policy.eval(), {"env_steps": steps, "cpu_seconds": time.process_time() - begin}


def export(policy: Policy, size: int, path: Path) -> None:
    """One ONNX file (no external data file): input ``obs`` [1, size], output ``action``."""
    example = (torch.zeros(1, size),)
    torch.onnx.export(policy, example, str(path), input_names=["obs"], output_names=["action"], external_data=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the folder for <RL-ready id>.onnx")
    parser.add_argument("--ids", nargs="+", default=list(RL_READY), choices=RL_READY, metavar="ID")
    parser.add_argument("--steps", type=int, default=3000, help="random env steps per id (default 3000)")
    parser.add_argument("--epochs", type=int, default=300, help="full-batch Adam steps per id (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    facts_file = out / "training.json"  # per id: its env steps and CPU seconds (kept for ids not trained now)
    budget = json.loads(facts_file.read_text()) if facts_file.is_file() else {}
    for env_id in args.ids:
        policy, facts = train(env_id, args.steps, args.epochs, args.seed)
        export(policy, policy.mean.numel(), out / f"{env_id}.onnx")
        budget[env_id] = facts
        print(f"{env_id}: {facts['env_steps']} env steps, {facts['cpu_seconds']:.1f} CPU s -> {env_id}.onnx")
    facts_file.write_text(json.dumps(budget, indent=1) + "\n")


if __name__ == "__main__":
    main()
