"""A permutation-equivariant stable-baselines3 policy over the padded edge rows of ``observation_mode="entity"``
(``ClusterMultiServerEntityRL-v0``, ``ClusterGangEntityRL-v0``; :mod:`cluster_envs.multiserver.entity`).

Every edge row goes through one shared encoder; rounds of message passing then add to each edge the masked means
of the edges that share its port, its server, and of all edges (linear in the number of edges: scatter-adds, no
|E|² attention); a per-edge head gives the edge's action mean, and a masked mean over the valid edges feeds the
value head. Padding rows (``valid`` = 0) enter no mean and get a constant action mean, so the outputs on the valid
rows do not depend on how much padding there is, and permuting the rows permutes the outputs with them. The
Gaussian's log standard deviation is one shared scalar (SB3's default is one per action entry, which would tie
a parameter to an edge's position).

Use: ``PPO(EdgePolicy, gym.make("ClusterMultiServerEntityRL-v0"))``.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from cluster_envs.multiserver.entity import COLUMN, N_FEATURES


def masked_group_mean(h: torch.Tensor, group: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Per row, the mean of ``h`` over the valid rows of its batch element with the same ``group`` id.

    ``h``: (B, E, H); ``group``: (B, E) integer ids; ``valid``: (B, E) 0/1. Invalid rows get the mean of their
    group's valid rows too (they are masked downstream)."""
    n_b, n_e, width = h.shape
    n_groups = int(group.max().item()) + 1 if group.numel() else 1
    key = (torch.arange(n_b, device=h.device)[:, None] * n_groups + group).reshape(-1)
    weight = valid.reshape(-1, 1)
    sums = h.new_zeros(n_b * n_groups, width).index_add_(0, key, h.reshape(-1, width) * weight)
    counts = h.new_zeros(n_b * n_groups, 1).index_add_(0, key, weight)
    return (sums / counts.clamp(min=1.0))[key].reshape(n_b, n_e, width)


class EdgeMessagePassing(nn.Module):
    """The shared trunk: (B, E·F) padded rows → per-edge embeddings (B, E, H) and the validity mask (B, E)."""

    def __init__(self, hidden: int = 64, rounds: int = 2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(N_FEATURES - 3, hidden), nn.Tanh(), nn.Linear(hidden, hidden))
        self.rounds = nn.ModuleList(
            nn.Sequential(nn.Linear(4 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, hidden)) for _ in range(rounds)
        )
        self.hidden = hidden

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = obs.reshape(obs.shape[0], -1, N_FEATURES)
        valid = rows[..., COLUMN["valid"]]
        port = rows[..., COLUMN["port"]].round().long()
        server = rows[..., COLUMN["server"]].round().long()
        # the identity columns (valid, port, server) group the edges; they are no features of an edge
        features = rows[..., COLUMN["port"] + 2 :]
        h = torch.tanh(self.encoder(features))
        everyone = torch.zeros_like(port)
        for layer in self.rounds:
            messages = [masked_group_mean(h, key, valid) for key in (port, server, everyone)]
            h = torch.tanh(h + layer(torch.cat([h, *messages], dim=-1)))
        return h, valid


class EdgeActorCritic(nn.Module):
    """SB3's ``mlp_extractor`` contract: ``latent_pi`` is the per-edge action mean (B, E), ``latent_vf`` the
    masked mean embedding (B, H). Actor and critic have their own trunks (SB3's default: no shared layers)."""

    def __init__(self, hidden: int, rounds: int):
        super().__init__()
        self.actor, self.critic = EdgeMessagePassing(hidden, rounds), EdgeMessagePassing(hidden, rounds)
        self.action_head = nn.Linear(hidden, 1)
        self.latent_dim_vf = hidden
        self.latent_dim_pi = 0  # set by EdgePolicy: the number of padded edges

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        h, valid = self.actor(features)
        return self.action_head(h).squeeze(-1) * valid  # padding: mean 0 whatever its rows hold

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        h, valid = self.critic(features)
        return (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True).clamp(min=1.0)


class EdgePolicy(ActorCriticPolicy):
    """PPO/A2C policy for the entity ids: message passing over the edges, a per-edge Gaussian action mean with
    one shared log std, a value from the masked mean embedding. ``policy_kwargs``: ``hidden`` (64), ``rounds``
    (2), and SB3's own (``log_std_init``, ``optimizer_kwargs``, ...)."""

    def __init__(self, observation_space, action_space, lr_schedule, hidden: int = 64, rounds: int = 2, **kwargs: Any):
        if observation_space.shape[0] % N_FEATURES or observation_space.shape[0] // N_FEATURES != action_space.shape[0]:
            raise ValueError(f"EdgePolicy needs observation_mode='entity' rows ({N_FEATURES} per padded edge) and one "
                             f"action per padded edge; got observation {observation_space.shape}, action "
                             f"{action_space.shape}")  # fmt: skip
        self.hidden, self.rounds = hidden, rounds
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = EdgeActorCritic(self.hidden, self.rounds)
        self.mlp_extractor.latent_dim_pi = self.action_space.shape[0]

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # latent_pi is already the per-edge mean
        self.log_std = nn.Parameter(torch.full((1,), float(self.log_std_init)))  # one, shared by every edge
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
