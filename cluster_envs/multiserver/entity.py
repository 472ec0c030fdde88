"""``observation_mode="entity"``: one feature row per edge (arm), padded to a fixed maximum, so that the spaces of
``ClusterMultiServer-v0`` and ``ClusterGang-v0`` are the same for every instance of the family.

The observation is a float32 ``Box`` of shape ``(max_edges · N_FEATURES,)``: row ``e`` (read it with
``obs.reshape(max_edges, N_FEATURES)``) describes edge ``e`` of the instance for ``e < |E|`` and is zero padding
after. The columns (``FEATURES``) hold only what the paper's decision maker knows (docs/specs/design.md,
information rule): the graph, the requests and capacities, the known costs, this slot's arrivals, and the
semi-bandit feedback of past slots as sufficient statistics (per-edge counts and mean observed utility, the last
executed action). The hidden means are never read.

Stable-baselines3 needs a fixed-shape ``Box``, so the graph is padded with a validity column rather than declared
as ``gymnasium.spaces.Graph`` (whose samples have a variable number of nodes and edges, which SB3's rollout
buffers cannot store); the port and server columns carry the graph, so a policy rebuilds the port–server
incidence from the rows (``baselines.rl.edge_policy``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from cluster_envs.common.numba_cache import cached_njit

ENTITY = "entity"
#: The columns of one edge row, in order.
FEATURES = (
    "valid",  # 1 for a row of the instance, 0 for padding
    "port",  # the edge's port index l (an integer, 0 on padding)
    "server",  # the edge's server index r (an integer, 0 on padding)
    "arrived",  # the port has a job in the slot about to be decided
    # the edge's request of device type k over the capacity it draws on, clipped to MAX_REQUEST (> 1: never fits)
    "request_0", "request_1", "request_2",
    "capacity_0", "capacity_1", "capacity_2",  # that capacity over the total request of the edges that share it
    "cost",  # the known provisioning cost C_e over the instance's largest
    "task_share",  # 1/|Q_l|: the share of its job's tasks this arm places (1 in ClusterMultiServer-v0)
    "min_share",  # m_l/|Q_l|: the share of tasks the job needs to run (0 in ClusterMultiServer-v0)
    "count",  # the slots the edge was used in so far this episode, over the horizon
    "mean_utility",  # the mean of its observed utilities Z̃ (0 before its first use)
    "last_action",  # the executed action of the previous slot (0 after reset)
    "time",  # (t − 1)/T
)  # fmt: skip
N_FEATURES = len(FEATURES)
COLUMN = {name: i for i, name in enumerate(FEATURES)}
DYNAMIC_COLUMNS = tuple(COLUMN[name] for name in ("arrived", "count", "mean_utility", "last_action", "time"))
MAX_DEVICE_TYPES = 3  # the request and capacity columns
MAX_REQUEST = 2.0
#: The family's maxima per env: the paper's sizes fit with margin (ClusterMultiServer-v0 at 8 × 40 with
#: edge_prob 0.1 has 19–49 edges over instance seeds 0–299 and 1000–1299; ClusterGang-v0's paper preset 48–141 arms).
MAX_SIZES = {
    "ClusterMultiServer-v0": {"max_edges": 96, "max_ports": 8, "max_servers": 40},
    "ClusterGang-v0": {"max_edges": 256, "max_ports": 8, "max_servers": 40},
}


@dataclass(frozen=True)
class EdgeStatics:
    """An instance's public per-edge data, as the entity rows need it (built by each env's ``_edge_statics``)."""

    port: np.ndarray  # (|E|,)
    server: np.ndarray  # (|E|,)
    request: np.ndarray  # (K, |E|) request / the capacity it draws on
    capacity: np.ndarray  # (K, |E|) that capacity / the total request on it, clipped to [0, 1]
    cost: np.ndarray  # (|E|,)
    task_share: np.ndarray  # (|E|,)
    min_share: np.ndarray  # (|E|,)


class EntityRows:
    """Builds the padded rows of one instance, for one env or a batch of copies."""

    def __init__(self, statics: EdgeStatics, n_ports: int, n_servers: int, horizon: int, config, unbounded: bool):
        n_e, k = statics.port.size, statics.request.shape[0]
        for name, size, what in (("max_edges", n_e, "edges (arms)"), ("max_ports", n_ports, "ports"),
                                 ("max_servers", n_servers, "servers"),
                                 ("max_device_types", k, "device types")):  # fmt: skip
            limit = getattr(config, name)
            if size > limit:
                raise ValueError(f"observation_mode='entity' pads to {name}={limit} but the instance has {size} "
                                 f"{what}; raise {name}")  # fmt: skip
        self.n_edges, self.horizon, self.max_edges = n_e, horizon, config.max_edges
        self.space = entity_space(config, unbounded)
        static = np.zeros((self.max_edges, N_FEATURES), np.float32)
        static[:n_e, COLUMN["valid"]] = 1.0
        static[:n_e, COLUMN["port"]] = statics.port
        static[:n_e, COLUMN["server"]] = statics.server
        static[:n_e, COLUMN["request_0"] : COLUMN["request_0"] + k] = np.minimum(statics.request.T, MAX_REQUEST)
        static[:n_e, COLUMN["capacity_0"] : COLUMN["capacity_0"] + k] = statics.capacity.T
        top = statics.cost.max() if n_e else 0.0
        static[:n_e, COLUMN["cost"]] = np.clip(statics.cost / top, 0.0, 1.0) if top > 0 else 0.0
        static[:n_e, COLUMN["task_share"]] = statics.task_share
        static[:n_e, COLUMN["min_share"]] = statics.min_share
        self.static = static

    def rows(self, edge_mask, last_action, counts, utility_sums, time) -> np.ndarray:
        """The flat observations of B copies, (B, max_edges · N_FEATURES), from their (B, |E|) Dict parts and
        statistics and their (B, 1) ``time``."""
        out = np.empty((edge_mask.shape[0], *self.static.shape), np.float32)
        out[:] = self.static
        _dynamic_columns(out, edge_mask, last_action, counts, utility_sums, time, self.horizon)
        return out.reshape(edge_mask.shape[0], -1)

    def padded_action(self, action: np.ndarray) -> np.ndarray:
        """The instance's part of a padded action (its first |E| entries; padding is ignored)."""
        return action[..., : self.n_edges]


@cached_njit
def _dynamic_columns(out, edge_mask, last_action, counts, utility_sums, time, horizon):  # pragma: no cover (compiled)
    """The columns that change per slot, of the instance's edges of each copy b (its first |E| rows): arrived, the
    count over the horizon, the mean observed utility (0 before a first use), the last action and the time."""
    arrived, count, mean, last, now = DYNAMIC_COLUMNS
    for b in range(edge_mask.shape[0]):
        for e in range(edge_mask.shape[1]):
            out[b, e, arrived] = edge_mask[b, e]
            out[b, e, count] = counts[b, e] / horizon
            out[b, e, mean] = utility_sums[b, e] / counts[b, e] if counts[b, e] > 0 else 0.0
            out[b, e, last] = last_action[b, e]
            out[b, e, now] = time[b, 0]


@cached_njit
def advance_rows(rows, counts, utility_sums, x, feedback, edge_mask, t, horizon):  # pragma: no cover (compiled)
    """One env's rows (``max_edges``, ``N_FEATURES``) after a slot, in place: the executed ``x`` and its observed
    utilities ``feedback`` join the statistics ``counts`` and ``utility_sums`` (in place), then
    :func:`_dynamic_columns` rewrites the instance's edges' columns for the slot ``t`` about to be decided
    (``edge_mask``: its arrivals per edge; time (t − 1)/T, at most 1), as a batch of one."""
    n = counts.size
    for e in range(n):
        counts[e] += x[e]
        utility_sums[e] += feedback[e]
    time = np.full((1, 1), min(1.0, (t - 1) / horizon), dtype=np.float32)
    _dynamic_columns(rows.reshape(1, rows.shape[0], rows.shape[1]), edge_mask.reshape(1, n), x.reshape(1, n),
                     counts.reshape(1, n), utility_sums.reshape(1, n), time, horizon)  # fmt: skip


def entity_space(config, unbounded: bool) -> spaces.Box:
    """The family's observation space: fixed by the ``max_*`` keywords alone (not by the instance)."""
    low = np.zeros((config.max_edges, N_FEATURES), np.float32)
    high = np.ones((config.max_edges, N_FEATURES), np.float32)
    high[:, COLUMN["port"]] = config.max_ports - 1
    high[:, COLUMN["server"]] = config.max_servers - 1
    high[:, COLUMN["request_0"] : COLUMN["request_0"] + MAX_DEVICE_TYPES] = MAX_REQUEST
    if unbounded:  # normalization="none": observed utilities are not in [0, 1]
        low[:, COLUMN["mean_utility"]], high[:, COLUMN["mean_utility"]] = -np.inf, np.inf
    return spaces.Box(low.ravel(), high.ravel(), dtype=np.float32)


def capacity_share(capacity: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """A capacity over the total request on it, clipped to [0, 1] (1: everything that shares it fits at once)."""
    return np.clip(np.divide(capacity, demand, out=np.ones(demand.shape), where=demand > 0), 0.0, 1.0)


def padded_mask(mask: np.ndarray, max_edges: int) -> np.ndarray:
    """A (…, |E|, 2) MaskablePPO mask padded to ``max_edges`` (padding: only value 0), flattened to (…, 2·max)."""
    pad = np.zeros((*mask.shape[:-2], max_edges - mask.shape[-2], 2), bool)
    pad[..., 0] = True
    return np.concatenate([mask, pad], axis=-2).reshape(*mask.shape[:-2], -1)
