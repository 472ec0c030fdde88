"""Multi-server jobs under service locality with fluctuating speeds (paper 001).

The model (spec §2): ports (job types) ``L`` and servers ``R`` joined by edges ``E ⊆ L×R`` (channels, in
lexicographic order, which is also the action index). In each slot every port independently yields a job
with probability ``ρ_l``; the scheduler picks ``x ∈ {0,1}^{|E|}`` with ``Ax ≤ c`` (cluster-wide capacity per
device type, (2)) and no edge of an idle port (4); each used edge pays the normalised utility ``Z̃_e(t)``
and only those are observed (semi-bandit feedback). The oracle knows the means ``ṽ`` and solves the
per-slot knapsack exactly (spec §2.7).

No gymnasium here: the env (env.py), the gang env and the batched env (vector_env.py) step this code; the
per-slot work (action check, repair, utilities, feedback) is compiled, so that one slot costs a few calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.special import ndtr

from cluster_envs.multiserver import knapsack

NORMALIZATIONS = ("affine_clip", "clip", "none")
CAPACITY_MODES = ("alpha_sum", "per_server_sum")


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
    mu = rng.uniform(params.mu_low, params.mu_high, len(edges))  # 4
    sigma = params.sigma_ratio * mu
    F = rng.normal(params.cost_mean, params.cost_std, size=(k, len(edges)))  # 5
    rho = np.broadcast_to(np.asarray(params.arrival_prob, dtype=float), (n_l,)).copy()  # 6
    utility = UtilityModel.build(mu, sigma, F.sum(axis=0), params.normalization)  # 8
    return MultiServerInstance(n_l, n_r, edges, A.astype(np.int64), c, utility, rho)


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


@njit(cache=True)
def action_problem(action: np.ndarray, binary: bool) -> int:
    """0 if the float64 action is well-formed, 1 if it has NaN or inf, 2 if ``binary`` and not all 0/1."""
    for a in action:
        if not math.isfinite(a):
            return 1
        if binary and a != 0.0 and a != 1.0:
            return 2
    return 0


@njit(cache=True)
def first_fit_into(requested, usable, order, A, c, x, used, wanted) -> tuple[int, int]:
    """Spec §3.6 into ``x`` (``used``: int64[K], ``wanted``: int64[|E|] scratch): drop requested bits outside
    ``usable`` (idle ports), then keep the rest along ``order`` (a permutation of the edges) while ``Ax ≤ c``
    holds. Returns (dropped for arrivals, for capacity). Without branches on the bits (they are random: a
    branch would mispredict): the wanted edges are listed first, then each is kept iff no type's slack
    ``c − used − A[:, e]`` is negative. Two kernels by the number of types (the batched step calls the one it
    needs: one kernel for both would not be inlined there, and the call costs tens of ns per copy)."""
    if A.shape[0] <= 4:
        return first_fit_few_types(requested, usable, order, A, c, x, wanted)
    return first_fit_many_types(requested, usable, order, A, c, x, used, wanted)


@njit(cache=True)
def _wanted_edges(requested, usable, order, x, wanted) -> tuple[int, int]:
    """Zero ``x`` and list the requested usable edges in ``order`` into ``wanted``: (how many, dropped for
    arrivals)."""
    n_wanted = n_arrival = 0
    for i in range(order.size):  # ``order`` is a permutation: every x[e] is written
        e = np.uint64(order[i])  # unsigned: no negative-index wraparound
        x[e] = 0
        r = np.int64(requested[e])
        w = r & np.int64(usable[e] != 0)
        n_arrival += r - w
        wanted[n_wanted] = e
        n_wanted += w
    return n_wanted, n_arrival


@njit(cache=True)
def first_fit_few_types(requested, usable, order, A, c, x, wanted) -> tuple[int, int]:
    """:func:`first_fit_into` for up to four device types (the presets have 1 or 3): the running use in
    registers (types beyond K repeat the last)."""
    n_types = A.shape[0]
    n_wanted, n_arrival = _wanted_edges(requested, usable, order, x, wanted)
    k1, k2, k3 = min(1, n_types - 1), min(2, n_types - 1), min(3, n_types - 1)
    c0, c1, c2, c3 = c[0], c[k1], c[k2], c[k3]
    u0 = u1 = u2 = u3 = n_taken = 0
    for i in range(n_wanted):
        e = np.uint64(wanted[i])
        a0, a1, a2, a3 = A[0, e], A[k1, e], A[k2, e], A[k3, e]
        take = ~(((c0 - u0 - a0) | (c1 - u1 - a1) | (c2 - u2 - a2) | (c3 - u3 - a3)) >> 63)  # −1 if it fits, else 0
        x[e] = take & 1
        n_taken -= take
        u0 += a0 & take
        u1 += a1 & take
        u2 += a2 & take
        u3 += a3 & take
    return n_arrival, n_wanted - n_taken


@njit(cache=True)
def first_fit_many_types(requested, usable, order, A, c, x, used, wanted) -> tuple[int, int]:
    """:func:`first_fit_into` for any number of device types (the running use in ``used``)."""
    n_types = A.shape[0]
    n_wanted, n_arrival = _wanted_edges(requested, usable, order, x, wanted)
    for k in range(n_types):
        used[k] = 0
    n_taken = 0
    for i in range(n_wanted):
        e = np.uint64(wanted[i])
        short = 0
        for k in range(n_types):
            short |= c[k] - used[k] - A[k, e]
        take = ~(short >> 63)
        x[e] = take & 1
        n_taken -= take
        for k in range(n_types):
            used[k] += A[k, e] & take
    return n_arrival, n_wanted - n_taken


@njit(cache=True)
def is_feasible(x, usable, A, c) -> bool:
    """``x ∈ Ω(t)``: no edge of an idle port and ``Ax ≤ c``."""
    for k in range(A.shape[0]):
        total = 0
        for e in range(x.size):
            if x[e]:
                if not usable[e]:
                    return False
                total += A[k, e]
        if total > c[k]:
            return False
    return True


@njit(cache=True)
def realize_into(x, normals, mu, sigma, cost, clips, lo, width, v_tilde, z_tilde, raw, feedback):
    """One slot's utilities from standard normals: ``Z = μ + σ·N``, ``Z − C`` into ``raw``, ``Z̃`` into
    ``z_tilde`` and the observed ``x·Z̃`` (float32) into ``feedback``. Returns ``(Σ x Z̃, Σ x (Z − C), ṽᵀx)``
    (branch-free: an unused edge adds ±0.0, which leaves a sum that starts at +0.0 unchanged bit for bit; the
    values are finite)."""
    utility = raw_utility = expected = 0.0
    for e in range(x.size):
        r = (mu[e] + sigma[e] * normals[e]) - cost[e]
        y = min(max((r - lo) / width, 0.0), 1.0) if clips else r
        raw[e] = r
        z_tilde[e] = y
        feedback[e] = np.float32(x[e] * y)
        utility += x[e] * y
        raw_utility += x[e] * r
        expected += x[e] * v_tilde[e]
    return utility, raw_utility, expected


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

    Every slot draws all ``|L|`` arrival uniforms and all ``|E|`` normals whatever the action, so two
    policies run with the same seed see the same arrivals and the same ``Z(t)`` (common random numbers).
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
        self.arrivals = (self.rng_arrivals.random(self.instance.n_ports) < self.instance.rho).astype(np.int8)
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
