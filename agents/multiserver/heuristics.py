"""The baselines of paper 001's Section 4 (HAUF/HSWF, LCF, LWTF) and a random floor (spec §4.6).

All of them estimate ``v̂`` from the feedback, rank only what can be served now, fill greedily and never
explore. Ties go to the lower port, then the lower edge index; inside a port, channels are taken by ``v̂``
descending (ours, §7 A21).
"""

from __future__ import annotations

import numpy as np

from agents.multiserver.common import SemiBanditAgent, check_stop_rule, greedy_fill
from cluster_envs.common.config import check_choice


def _edges_by_value(edges: np.ndarray, v_hat: np.ndarray) -> np.ndarray:
    return edges[np.lexsort((edges, -v_hat[edges]))]


class _PortGreedy(SemiBanditAgent):
    """Rank the non-empty ports by ``_port_priority`` (descending), then fill their channels by ``v̂``."""

    def __init__(self, stop_rule: str = "first_fail"):
        check_stop_rule(stop_rule)
        self.stop_rule = stop_rule

    def _port_priority(self, ports: np.ndarray, v_hat: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def act(self, observation: dict) -> np.ndarray:
        self.observe(observation)
        v_hat = self.v_hat
        ports = np.flatnonzero(np.asarray(observation["arrivals"], dtype=bool))
        ports = ports[np.lexsort((ports, -self._port_priority(ports, v_hat)))]
        order = [_edges_by_value(np.flatnonzero(self.port_of_edge == p), v_hat) for p in ports]
        order = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
        return greedy_fill(order, self.A, self.c, self.stop_rule)


class HAUF(_PortGreedy):
    """Accumulative Utility First (alias HSWF, §7 A1): ports by ``Σ_r v̂_(l,r)`` (``v̂`` includes the cost)."""

    name = "hauf"

    def _port_priority(self, ports: np.ndarray, v_hat: np.ndarray) -> np.ndarray:
        totals = np.bincount(self.port_of_edge, weights=v_hat, minlength=self.problem.n_ports)
        return totals[ports]


class HSWF(HAUF):
    name = "hswf"


class LWTF(_PortGreedy):
    """Longest Waiting Time First: ports by ``t − last slot the port got a channel`` (ours, §7 A22)."""

    name = "lwtf"

    def reset(self, problem, seed: int | None = None) -> None:
        super().reset(problem, seed)
        self.last_served = np.zeros(problem.n_ports, dtype=np.int64)

    def observe(self, observation: dict) -> np.ndarray:
        mask = super().observe(observation)
        served = np.unique(self.port_of_edge[np.asarray(observation["last_action"], dtype=bool)])
        self.last_served[served] = self.t - 1
        return mask

    def _port_priority(self, ports: np.ndarray, v_hat: np.ndarray) -> np.ndarray:
        return (self.t - self.last_served[ports]).astype(float)


class LCF(SemiBanditAgent):
    """Lowest Cost First: usable channels by ``C_e`` ascending (ties ``v̂`` descending, then index).

    ``rank="edge"`` (default) ranks channels, since the cost depends on the server; ``"port"`` ranks ports
    by ``Σ_r C_(l,r)`` and fills each port's channels by ``v̂``.
    """

    name = "lcf"

    def __init__(self, stop_rule: str = "first_fail", rank: str = "edge"):
        check_stop_rule(stop_rule)
        check_choice("rank", rank, ("edge", "port"))
        self.stop_rule, self.rank = stop_rule, rank

    def act(self, observation: dict) -> np.ndarray:
        mask = self.observe(observation)
        v_hat, cost = self.v_hat, np.asarray(self.problem.cost)
        edges = np.flatnonzero(mask)
        if self.rank == "edge":
            order = edges[np.lexsort((edges, -v_hat[edges], cost[edges]))]
        else:
            port_cost = np.bincount(self.port_of_edge, weights=cost, minlength=self.problem.n_ports)
            ports = np.unique(self.port_of_edge[edges])
            ports = ports[np.lexsort((ports, port_cost[ports]))]
            parts = [_edges_by_value(np.flatnonzero(self.port_of_edge == p), v_hat) for p in ports]
            order = np.concatenate(parts) if parts else edges
        return greedy_fill(order, self.A, self.c, self.stop_rule)


class RandomFit(SemiBanditAgent):
    """Sanity floor: a uniformly random order of the usable channels, first-fit (skip rule)."""

    name = "random"

    def reset(self, problem, seed: int | None = None) -> None:
        super().reset(problem, seed)
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict) -> np.ndarray:
        edges = np.flatnonzero(self.observe(observation))
        return greedy_fill(self.rng.permutation(edges), self.A, self.c, "skip")
