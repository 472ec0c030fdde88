"""One episode of the multi-server model (paper 001) as :class:`MultiServerSimulator`, without gymnasium: its
exogenous streams and slot clock, stepped through the compiled repair and utility kernels of
:mod:`~cluster_envs.multiserver.kernel`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_envs.multiserver.kernel import first_fit_into, is_feasible, realize_into


@dataclass
class SlotResult:
    """What one executed slot produced (the env maps it to reward, observation and info)."""

    x: np.ndarray
    arrivals: np.ndarray
    z_tilde: np.ndarray  # Z̃(t) of every edge (only used ones are observable)
    raw: np.ndarray  # Z(t) − C
    feedback: np.ndarray  # float32 x·Z̃: the observed utilities
    utility: float
    raw_utility: float
    expected: float  # ṽᵀx
    n_dropped_arrival: int
    n_dropped_capacity: int


class MultiServerSimulator:
    """One episode: its exogenous streams (arrivals, utilities, repair permutations) and the slot clock.

    Every slot draws all ``|L|`` arrival uniforms (none when the instance replays a trace's ``schedule``) and all
    ``|E|`` normals whatever the action, so two policies run with the same seed see the same arrivals and the same
    ``Z(t)`` (common random numbers).
    ``edge_mask`` is ``𝟙_{l(e)}(t)`` of the current slot (int8).
    """

    def __init__(self, instance, streams: dict[str, np.random.Generator], horizon: int):
        self.instance = instance
        self.horizon = horizon
        self.rng_arrivals = streams["arrivals"]
        self.rng_utility = streams["utility"]
        self.rng_repair = streams["repair"]
        self.port_of_edge = np.ascontiguousarray(instance.port_of_edge)
        self._scratch: tuple[np.ndarray, ...] | None = None  # the repair's, made on first use
        self.t = 1
        self._draw_arrivals()

    def _draw_arrivals(self) -> None:
        schedule = self.instance.schedule
        if schedule is None:
            self.arrivals = (self.rng_arrivals.random(self.instance.n_ports) < self.instance.rho).astype(np.int8)
        else:  # a trace's arrivals; after the last slot (no decision follows) wrap around
            self.arrivals = schedule[(self.t - 1) % len(schedule)].copy()
        self.edge_mask = self.arrivals[self.port_of_edge]

    def repair(self, requested: np.ndarray, priority: np.ndarray) -> tuple[np.ndarray, int, int]:
        """Spec §3.6: gate by arrivals, then first-fit along ``priority`` (a permutation of the edges)."""
        inst = self.instance
        if self._scratch is None:
            self._scratch = (np.empty(inst.A.shape[0], np.int64), np.empty(priority.size, np.int64))
        x = np.empty(priority.size, dtype=np.int8)
        n_arrival, n_capacity = first_fit_into(requested, self.edge_mask, priority, inst.A, inst.c, x, *self._scratch)
        return x, n_arrival, n_capacity

    def is_feasible(self, x: np.ndarray) -> bool:
        return is_feasible(x, self.edge_mask, self.instance.A, self.instance.c)

    def random_priority(self) -> np.ndarray:
        return self.rng_repair.permutation(self.instance.n_edges)

    def execute(self, x: np.ndarray, n_dropped_arrival: int = 0, n_dropped_capacity: int = 0) -> SlotResult:
        """Play a feasible ``x`` in the current slot, then advance the clock and draw the next arrivals."""
        u = self.instance.utility
        n_e = x.size
        z_tilde, raw, feedback = np.empty(n_e), np.empty(n_e), np.empty(n_e, np.float32)
        sums = realize_into(x, self.rng_utility.standard_normal(n_e), u.mu, u.sigma, u.cost, u.clips, u.lo, u.width,
                            u.v_tilde, z_tilde, raw, feedback)  # fmt: skip
        result = SlotResult(x, self.arrivals, z_tilde, raw, feedback, *sums, n_dropped_arrival, n_dropped_capacity)
        self.t += 1
        self._draw_arrivals()
        return result
