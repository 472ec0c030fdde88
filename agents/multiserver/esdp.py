"""ESDP (Algorithms 1–2 of paper 001, spec §4.1–4.4) and its variants ESDP-AA and ESDP-exact-index.

Per slot: ``v̂`` and ``σ̂² = g(t)/(2n)`` from the feedback, scaled by ``ξ = ⌈m/δ(t)⌉`` and rounded up to
integers ``Υ̂ = ⌈ξ v̂⌉`` (16), ``Σ̂² = ⌈ξ² σ̂²⌉`` (17); an unplayed edge gets the big-M ``M_t`` (the
lexicographic reading of ``σ̂² = +∞``, §7 A9). The DP of Algorithm 2 (cluster_envs.multiserver.knapsack)
solves P4(s) = ``max Σ̂²ᵀx s.t. Ax ≤ c, Υ̂ᵀx ≥ s`` for every ``s ≤ ξm`` in one pass, (21) picks
``s* = argmax s + √V0[s]`` (largest on ties), and the literal algorithm then zeroes the edges of idle
ports. ESDP-AA solves over the arrived ports' edges only.
"""

from __future__ import annotations

import math

import numpy as np

from agents.multiserver.common import SemiBanditAgent
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.multiserver import knapsack


def _lnln(t: int) -> float:
    return math.log(math.log(t + 1) + 1)


DELTAS = {
    "default": lambda t, n_edges, m: 1.0 / (_lnln(t) + 1.0),  # δ_0 [001:L451]
    "A": lambda t, n_edges, m: 1.0 / (math.log(t + 1) + 1.0),  # Fig. 7 variants (§5.4)
    "B": lambda t, n_edges, m: 1.0 / _lnln(t),
    "C": lambda t, n_edges, m: 1.0 / (math.log(_lnln(t) + 1.0) + 1.0),
    "aescb": lambda t, n_edges, m: n_edges * max(1.0, math.log(m)) ** 2 / t,  # AESCB reference (§6)
}
GS = {
    "g1": lambda t, m: math.log(t + 1) + 4.0 * _lnln(t) * m,  # default [001:L451]
    "g2": lambda t, m: 4.0 * _lnln(t) * m,
    "g3": lambda t, m: math.log(t + 1),
}


def scale_up(values: np.ndarray) -> np.ndarray:
    """``⌈·⌉`` after rounding to 9 decimals, so that float noise cannot flip an integer (§7 A20)."""
    return np.ceil(np.round(values, 9)).astype(np.int64)


class ESDP(SemiBanditAgent):
    """ESDP; hyperparameters as in spec §4.1 (defaults are the paper's).

    ``alpha``: ``m = max(1, ⌈α|E|⌉)`` (``m_mode="alpha"``) or the exact max feasible cardinality
    (``"exact"``). ``delta``: ``default`` (δ_0), ``A``, ``B``, ``C`` (Fig. 7) or ``aescb``. ``g``: ``g1``
    (default), ``g2``, ``g3`` (Fig. 8). ``selection``: ``budget`` (literal (21)) or ``exact_index``
    (the best undiscretised index among the P4 solutions). ``arrival_aware``: solve over ``Ω(t)``.
    After each ``act``, ``last_cells`` is the DP's nominal size of spec §4.3 (processed edges × (ξm + 1) ×
    Π(c_k + 1); the compiled DP updates only the reachable part of it) and ``last_s_max`` is ``ξm``.
    """

    name = "esdp"

    def __init__(
        self,
        alpha: float = 0.5,
        m_mode: str = "alpha",
        delta: str = "default",
        g: str = "g1",
        selection: str = "budget",
        arrival_aware: bool = False,
    ):
        check_number("alpha", alpha, low=0.0, high=1.0, low_open=True)
        check_choice("m_mode", m_mode, ("alpha", "exact"))
        check_choice("delta", delta, tuple(DELTAS))
        check_choice("g", g, tuple(GS))
        check_choice("selection", selection, ("budget", "exact_index"))
        check_choice("arrival_aware", arrival_aware, (False, True))
        self.alpha, self.m_mode, self.delta, self.g = alpha, m_mode, delta, g
        self.selection, self.arrival_aware = selection, arrival_aware

    def reset(self, problem, seed: int | None = None) -> None:
        super().reset(problem, seed)
        n_edges = problem.n_edges
        if self.m_mode == "exact":
            self.m = max(1, self._max_cardinality())
        else:
            self.m = max(1, math.ceil(self.alpha * n_edges))
        self.last_cells = 0
        self.last_s_max = 0

    def _max_cardinality(self) -> int:
        return knapsack.max_cardinality(self.A, self.c)

    def schedule(self, t: int) -> tuple[int, float]:
        """``(ξ(t), g(t))``."""
        delta = DELTAS[self.delta](t, self.problem.n_edges, self.m)
        return math.ceil(self.m / delta), GS[self.g](t, self.m)

    def integer_weights(self, xi: int, g: float) -> tuple[np.ndarray, np.ndarray, int]:
        """``(Υ̂, Σ̂², M_t)`` of (16)–(17) with the big-M for unplayed edges."""
        big_m = self.problem.n_edges * math.ceil(xi * xi * g / 2.0) + 1
        played = self.n > 0
        upsilon = scale_up(xi * self.v_hat)
        var = np.divide(xi * xi * g, 2.0 * self.n, out=np.zeros(self.n.size), where=played)
        sigma2 = np.where(played, scale_up(var), big_m)
        return upsilon, sigma2, big_m

    def act(self, observation: dict) -> np.ndarray:
        mask = self.observe(observation)
        xi, g = self.schedule(self.t)
        s_max = xi * self.m
        upsilon, sigma2, big_m = self.integer_weights(xi, g)
        usable = mask if self.arrival_aware else None
        table = knapsack.solve(sigma2, self.A, self.c, budget_weights=upsilon, s_max=s_max, usable=usable)
        self.last_cells, self.last_s_max = table.cells, s_max
        if self.selection == "budget":
            x = table.backtrack(select_budget(table))
        else:
            x = self._best_index(table, xi, g, big_m)
        return (x * mask).astype(np.int8)  # Alg. 1 steps 9–16: idle ports get nothing

    def _best_index(self, table: knapsack.KnapsackTable, xi: int, g: float, big_m: int) -> np.ndarray:
        """Among the distinct ``x_P4(s)``, the maximiser of ``v̂ᵀx + √(σ̂²ᵀx)`` (unplayed: ``M_t/ξ²``)."""
        budgets = np.flatnonzero(table.feasible)[::-1]  # largest s first: ties keep the largest budget
        candidates = table.backtrack(budgets)
        var = np.where(self.n > 0, g / (2.0 * np.maximum(self.n, 1)), big_m / (xi * xi))
        index = candidates @ self.v_hat + np.sqrt(candidates @ var)
        return candidates[int(np.argmax(index))]


def select_budget(table: knapsack.KnapsackTable) -> int:
    """(21): ``s* = argmax_{s feasible} s + √V0[s]``, the largest ``s`` on ties."""
    s = np.flatnonzero(table.feasible)
    score = s + np.sqrt(table.values[s].astype(np.float64))
    return int(s[np.flatnonzero(score == score.max())[-1]])


class ESDPArrivalAware(ESDP):
    """ESDP-AA (ours, §4.4): the DP only considers edges of ports that have a job, i.e. P3 over ``Ω(t)``."""

    name = "esdp_aa"

    def __init__(self, **kwargs):
        kwargs.setdefault("arrival_aware", True)
        super().__init__(**kwargs)


class ESDPExactIndex(ESDP):
    """ESDP with ``selection="exact_index"`` (as the AESCB reference implementation selects)."""

    name = "esdp_exact_index"

    def __init__(self, **kwargs):
        kwargs.setdefault("selection", "exact_index")
        super().__init__(**kwargs)
