"""Multi-server jobs under service locality with fluctuating speeds (paper 001).

The model (spec §2): ports (job types) ``L`` and servers ``R`` joined by edges ``E ⊆ L×R`` (channels, in
lexicographic order, which is also the action index). In each slot every port independently yields a job
with probability ``ρ_l``; the scheduler picks ``x ∈ {0,1}^{|E|}`` with ``Ax ≤ c`` (cluster-wide capacity per
device type, (2)) and no edge of an idle port (4); each used edge pays the normalised utility ``Z̃_e(t)``
and only those are observed (semi-bandit feedback). The oracle knows the means ``ṽ`` and solves the
per-slot knapsack exactly (spec §2.7).

This module holds the model without the step (no gymnasium): the generator parameters, the instance and its
generation, the public problem (:class:`MultiServerProblem`), the constraint check and the offline optimum
(:class:`KnapsackOracle`). The compiled slot is in kernel.py, the episode's streams in simulator.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr

from cluster_envs.multiserver import knapsack


@dataclass(frozen=True)
class GeneratorParams:
    """The instance-generator parameters of spec §3.2 (validated by the env config)."""

    n_ports: int = 8
    n_servers: int = 40
    n_device_types: int = 3
    edge_prob: float = 0.1
    arrival_prob: float | tuple[float, ...] = 0.9
    req_low: int = 1
    req_high: int = 2
    capacity_mode: str = "alpha_sum"
    capacity_beta: float = 0.5
    c_low: int = 1
    c_high: int = 2
    capacity: tuple[int, ...] | None = None
    mu_low: float = 0.1
    mu_high: float = 1.0
    sigma_ratio: float = 0.5
    cost_mean: float = 0.5
    cost_std: float = 0.1
    normalization: str = "affine_clip"


@dataclass(frozen=True, eq=False)
class UtilityModel:
    """Per-arm utilities ``Z ~ N(μ, σ²)``, known costs ``C`` and the normalisation to ``Z̃`` (§3.3 step 8)."""

    mu: np.ndarray
    sigma: np.ndarray
    cost: np.ndarray
    normalization: str
    lo: float
    width: float
    v_tilde: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "v_tilde", self._exact_means())

    @classmethod
    def build(cls, mu: np.ndarray, sigma: np.ndarray, cost: np.ndarray, normalization: str) -> UtilityModel:
        lo, width = 0.0, 1.0
        if normalization == "affine_clip":
            lo = float(np.min(mu - 2 * sigma - cost))
            width = float(np.max(mu + 2 * sigma - cost)) - lo
            width = width if width > 0 else 1.0
        return cls(np.asarray(mu, float), np.asarray(sigma, float), np.asarray(cost, float), normalization, lo, width)

    def normalize(self, z: np.ndarray) -> np.ndarray:
        """``Z̃`` from raw draws ``Z`` (same shape as the arms)."""
        y = z - self.cost
        if self.normalization == "none":
            return y
        return np.clip((y - self.lo) / self.width, 0.0, 1.0)

    @property
    def clips(self) -> bool:
        return self.normalization != "none"

    def _exact_means(self) -> np.ndarray:
        """``ṽ = E[Z̃]``; for the clipped forms the clipped-normal mean of spec §3.3."""
        m = (self.mu - self.cost - self.lo) / self.width
        if self.normalization == "none":
            return m
        s = self.sigma / self.width
        alpha, beta = -m / s, (1.0 - m) / s
        pdf = lambda u: np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)  # noqa: E731
        return m * (ndtr(beta) - ndtr(alpha)) + s * (pdf(alpha) - pdf(beta)) + (1.0 - ndtr(beta))


@dataclass(frozen=True, eq=False)
class MultiServerInstance:
    """One instance: graph, requests ``A``, capacities ``c``, utility model, arrival probabilities ``ρ``.

    Build it with :func:`generate_instance`, or directly (tests pin instances this way) with
    :meth:`from_arrays`.
    """

    n_ports: int
    n_servers: int
    edges: np.ndarray  # (|E|, 2) int64 rows (l, r), lexicographic
    A: np.ndarray  # (K, |E|) int64, all ≥ 1
    c: np.ndarray  # (K,) int64
    utility: UtilityModel
    rho: np.ndarray  # (|L|,)
    schedule: np.ndarray | None = None  # (T, |L|) int8 arrivals replayed from a trace instead of Bernoulli(ρ) draws

    @classmethod
    def from_arrays(cls, n_ports, n_servers, edges, A, c, mu, sigma, cost, rho, normalization="affine_clip"):
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        order = np.lexsort((edges[:, 1], edges[:, 0]))
        if (order != np.arange(len(edges))).any():
            raise ValueError("edges must be in lexicographic (port, server) order")
        A = np.atleast_2d(np.asarray(A, dtype=np.int64))
        rho = np.broadcast_to(np.asarray(rho, dtype=float), (n_ports,)).copy()
        utility = UtilityModel.build(
            np.asarray(mu, float), np.asarray(sigma, float), np.asarray(cost, float), normalization
        )
        return cls(int(n_ports), int(n_servers), edges, A, np.asarray(c, dtype=np.int64), utility, rho)

    @property
    def n_edges(self) -> int:
        return self.edges.shape[0]

    @property
    def n_device_types(self) -> int:
        return self.A.shape[0]

    @property
    def port_of_edge(self) -> np.ndarray:
        return self.edges[:, 0]

    @property
    def v_tilde(self) -> np.ndarray:
        return self.utility.v_tilde

    def edge_mask(self, arrivals: np.ndarray) -> np.ndarray:
        """``𝟙_{l(e)}(t)`` per edge."""
        return np.asarray(arrivals, dtype=bool)[self.port_of_edge]


def generate_instance(params: GeneratorParams, rng: np.random.Generator) -> MultiServerInstance:
    """Draw an instance in the normative order of spec §3.3 (steps 1–7, then the normalisation)."""
    n_l, n_r, k = params.n_ports, params.n_servers, params.n_device_types
    adj = rng.random((n_l, n_r)) < params.edge_prob  # 1
    for port in range(n_l):
        if not adj[port].any():  # every port gets at least one server
            adj[port, rng.integers(n_r)] = True
    edges = np.argwhere(adj).astype(np.int64)
    A = rng.integers(params.req_low, params.req_high + 1, size=(k, len(edges)))  # 2
    c = capacity_vector(params, A, rng)  # 3
    utility = draw_utility(params, k, len(edges), rng)  # 4, 5 and 8
    rho = np.broadcast_to(np.asarray(params.arrival_prob, dtype=float), (n_l,)).copy()  # 6
    return MultiServerInstance(n_l, n_r, edges, A.astype(np.int64), c, utility, rho)


def draw_utility(params, n_types: int, n_arms: int, rng: np.random.Generator) -> UtilityModel:
    """Steps 4, 5 and 8 of spec §3.3: ``μ ~ U(mu_low, mu_high)`` and ``σ = sigma_ratio · μ`` per arm, costs
    ``F ~ N(cost_mean, cost_std)`` per (device type, arm) summed to ``C``, then the normalisation (``params``:
    any generator parameters with these fields)."""
    mu = rng.uniform(params.mu_low, params.mu_high, n_arms)
    F = rng.normal(params.cost_mean, params.cost_std, size=(n_types, n_arms))
    return UtilityModel.build(mu, params.sigma_ratio * mu, F.sum(axis=0), params.normalization)


def capacity_vector(params: GeneratorParams, A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Step 3: the explicit ``capacity``, else ``alpha_sum`` (ours, default) or literal ``per_server_sum``."""
    if params.capacity is not None:
        return np.asarray(params.capacity, dtype=np.int64)
    if params.capacity_mode == "per_server_sum":
        return rng.integers(params.c_low, params.c_high + 1, size=(A.shape[0], params.n_servers)).sum(axis=1)
    return np.maximum(A.max(axis=1), np.floor(params.capacity_beta * A.sum(axis=1))).astype(np.int64)


class PatternCache:
    """An oracle solved once per arrival pattern; ``lookup`` returns the cached ``(x, value)`` (do not
    modify ``x``), calling the oracle returns a copy of ``x``."""

    def __init__(self):
        self._cache: dict[bytes, tuple[np.ndarray, float]] = {}

    def _solve(self, arrivals: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def lookup(self, arrivals: np.ndarray) -> tuple[np.ndarray, float]:
        arrivals = np.asarray(arrivals, dtype=bool)
        key = arrivals.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            x = self._solve(arrivals)
            hit = self._cache[key] = (x, float(self.values @ x))
        return hit

    def __call__(self, arrivals: np.ndarray) -> tuple[np.ndarray, float]:
        x, value = self.lookup(arrivals)
        return x.copy(), value


class KnapsackOracle(PatternCache):
    """``x*(t) = argmax_{x ∈ Ω(t)} ṽᵀx`` by the exact DP, cached per arrival pattern (spec §4.6)."""

    def __init__(self, values: np.ndarray, A: np.ndarray, c: np.ndarray, port_of_edge: np.ndarray):
        super().__init__()
        self.values, self.A, self.c, self.port_of_edge = values, A, c, port_of_edge

    def _solve(self, arrivals: np.ndarray) -> np.ndarray:
        return knapsack.solve(self.values, self.A, self.c, usable=arrivals[self.port_of_edge]).backtrack(0)


def violations(x: np.ndarray, instance: MultiServerInstance, arrivals: np.ndarray) -> str | None:
    """The first violated constraint of ``Ω(t)`` as a sentence, or None if ``x ∈ Ω(t)``."""
    idle = np.flatnonzero(x.astype(bool) & ~instance.edge_mask(arrivals))
    if idle.size:
        ports = sorted({int(instance.port_of_edge[e]) for e in idle})
        return f"arrival gating (4): edges {idle.tolist()} belong to ports {ports} that have no job this slot"
    used = instance.A @ x.astype(np.int64)
    over = np.flatnonzero(used > instance.c)
    if over.size:
        k = int(over[0])
        return f"capacity (2) of device type k={k}: the action uses {int(used[k])} > c_{k}={int(instance.c[k])}"
    return None


@dataclass(frozen=True, eq=False)
class MultiServerProblem:
    """The static public data a scheduler is given (inputs of Algorithm 1): graph, ``A``, ``c``, costs."""

    n_ports: int
    n_servers: int
    n_device_types: int
    edges: np.ndarray  # (|E|, 2) rows (l, r); the row index is the action index
    A: np.ndarray  # (K, |E|)
    c: np.ndarray  # (K,)
    cost: np.ndarray  # (|E|,) C_e = Σ_k f_k(a_k^e)
    horizon: int
    normalization: str

    @property
    def n_edges(self) -> int:
        return self.edges.shape[0]

    @property
    def port_of_edge(self) -> np.ndarray:
        return self.edges[:, 0]
