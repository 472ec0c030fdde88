"""The bilinear queueing model (paper 004) without the step: the public problem (:class:`BilinearProblem`),
instance generation (features, the parameter θ, arrivals) and the offline optimum (the oracle LP of eq. 1).

Sec. V of the paper draws every feature entry and every entry of θ from U[0, 1] and normalises each
vector to unit L2 norm. θ = vec(Θ) stacks the ROWS of Θ, so z_ij = vec(u_i v_jᵀ) = ``np.outer(u_i,
v_j).ravel()`` and r_ij = z_ijᵀθ = u_iᵀΘv_j (spec §2.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

from cluster_envs.common.numba_cache import cached_njit


def unit_rows(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """``rows`` vectors of U[0, 1] entries, each normalised to unit L2 norm."""
    return normalised(rng.uniform(0.0, 1.0, size=(rows, cols)))


def normalised(x: np.ndarray) -> np.ndarray:
    """x with each vector along the last axis divided by its L2 norm (a stack of instances at once)."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def sample_instance(rng: np.random.Generator, n_job: int, n_server: int, dim: int) -> tuple[np.ndarray, ...]:
    """(u, v, θ) in the order u, then v, then θ (spec §3.2)."""
    u = unit_rows(rng, n_job, dim)
    v = unit_rows(rng, n_server, dim)
    theta = unit_rows(rng, 1, dim * dim)[0]
    return u, v, theta


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """z of shape (I, J, d²) with z[i, j] = vec(u_i v_jᵀ), row-major."""
    return np.einsum("ia,jb->ijab", u, v).reshape(u.shape[0], v.shape[0], -1)


def mean_rewards(u: np.ndarray, v: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """r_ij = u_iᵀ Θ v_j with Θ = θ reshaped row-major to (d, d)."""
    d = u.shape[1]
    return u @ theta.reshape(d, d) @ v.T


ASSIGNMENT_MARGIN = 1e-6  # the closed form only this far from a tie or a binding capacity (HiGHS's tolerances: 1e-7)


def oracle_lp(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray]:
    """The fluid oracle of eq. (1): max Σ r_ij ρ_i p_ij s.t. Σ_i ρ_i p_ij ≤ n_j, Σ_j p_ij = 1, p ≥ 0.

    Returns (r*, ρ_i p*_ij), exactly as ``scipy.optimize.linprog(method="highs")`` returns them (the former
    implementation; tests compare them bit for bit). When every class has a clear best server class and the
    classes fit their best server classes, the optimum is that assignment and :func:`_assignment_optimum` computes
    it as HiGHS does; otherwise HiGHS solves the LP. Infeasible only when ρ > Σ n_j.
    """
    fast = _assignment_optimum(r, rho, caps)
    return fast if fast is not None else _highs_optimum(r, rho, caps)


def _assignment_optimum(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray] | None:
    """:func:`assignment_optima` of one instance: (r*, ρ_i p*_ij), or None where HiGHS must solve it."""
    r_star, alloc, found = np.zeros(1), np.zeros((1, *r.shape)), np.zeros(1, dtype=np.bool_)
    assignment_optima(np.ascontiguousarray(r, dtype=np.float64)[None], rho, caps, r_star, alloc, found)
    return (float(r_star[0]), alloc[0]) if found[0] else None


@cached_njit
def assignment_optima(r, rho, caps, r_star, alloc, found):
    """The LP optimum of each instance k (``r[k]``: I × J) where p_ij = 1 for j = argmax_j r_ij is feasible with
    slack and optimal by a margin: r* into ``r_star[k]``, ρ_i p*_ij into ``alloc[k]``, and ``found[k]``; elsewhere
    ``found[k]`` is False. HiGHS returns that vertex with x ∈ {0, 1} and its objective Σ_k c_k x_k summed in
    column order (c = -(r ρ), row-major), and so does this. Only for J = 2: with more server classes HiGHS's
    vertex is not always exactly 0/1 (tested)."""
    n_job, n_server = r.shape[1], r.shape[2]
    for k in range(r.shape[0]):
        found[k] = False
        if n_server != 2:
            continue
        ok, load_0, load_1 = True, 0.0, 0.0
        for i in range(n_job):
            best = 0 if r[k, i, 0] >= r[k, i, 1] else 1  # np.argmax: the first maximum
            gap = r[k, i, best] - r[k, i, 1 - best]
            ok = ok and rho[i] > 0 and not gap * rho[i] < ASSIGNMENT_MARGIN
            if best == 0:  # the load of each server class, summed in class order (np.bincount)
                load_0 += rho[i]
            else:
                load_1 += rho[i]
            for j in range(n_server):
                alloc[k, i, j] = rho[i] * (1.0 if j == best else 0.0)
        if not ok or load_0 > caps[0] - ASSIGNMENT_MARGIN or load_1 > caps[1] - ASSIGNMENT_MARGIN:
            continue
        objective = 0.0
        for i in range(n_job):
            for j in range(n_server):
                objective += -(r[k, i, j] * rho[i]) * (1.0 if alloc[k, i, j] != 0.0 else 0.0)
        r_star[k], found[k] = -objective, True


def _highs_optimum(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray]:
    n_job, n_server = r.shape
    cost = -(r * rho[:, None]).ravel()
    a_ub = np.zeros((n_server, n_job * n_server))
    a_eq = np.zeros((n_job, n_job * n_server))
    for j in range(n_server):
        a_ub[j, j::n_server] = rho
    for i in range(n_job):
        a_eq[i, i * n_server : (i + 1) * n_server] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=caps, A_eq=a_eq, b_eq=np.ones(n_job), bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"the oracle LP is infeasible for capacities {caps.tolist()}: {res.message}")
    p = res.x.reshape(n_job, n_server)
    return float(-res.fun), rho[:, None] * p


@dataclass(frozen=True, eq=False)
class BilinearProblem:
    """Static public data: classes, server counts, features, horizon, holding costs and the env's modes.

    Never θ, r, arrival or service rates. ``split(observation)`` names the observation's parts.
    ``include_server_counts``: the observation ends with ``"server_counts"``, n_j(t) of the slot about to be
    decided (App. D.2's J(t); the env's ``server_schedule``, else the fixed n_j). ``noise_std``: the standard
    deviation σ of the rewards' Gaussian noise, the sub-Gaussian scale a UCB's confidence width is built from (a
    constant of the model the paper's scheduler is designed with, L114-L120; not a drawn quantity).
    """

    servers_per_class: tuple[int, ...]
    job_features: np.ndarray
    server_features: np.ndarray
    horizon: int
    holding_costs: tuple[float, ...]
    service_model: str
    action_mode: str
    observation_mode: str
    max_visible_jobs: int
    include_server_counts: bool = False
    noise_std: float = 1.0
    pair_features: np.ndarray = field(init=False, repr=False)
    part_slices: tuple[tuple[str, slice, tuple[int, ...]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pair_features", pair_features(self.job_features, self.server_features))
        slices, start = [], 0
        for name, shape in self.observation_parts().items():  # agents split every observation: compute once
            size = int(np.prod(shape))
            slices.append((name, slice(start, start + size), shape))
            start += size
        object.__setattr__(self, "part_slices", tuple(slices))

    @property
    def n_job_classes(self) -> int:
        return self.job_features.shape[0]

    @property
    def n_server_classes(self) -> int:
        return self.server_features.shape[0]

    @property
    def feature_dim(self) -> int:
        return self.job_features.shape[1]

    @property
    def n_servers(self) -> int:
        return int(sum(self.servers_per_class))

    @property
    def caps(self) -> np.ndarray:
        return np.asarray(self.servers_per_class, dtype=np.float64)

    @property
    def holding_cost_array(self) -> np.ndarray:
        return np.asarray(self.holding_costs, dtype=np.float64)

    def observation_parts(self) -> dict[str, tuple[int, ...]]:
        """Name -> shape of each part of the flat observation, in order."""
        n_i, n_j, d, k = self.n_job_classes, self.n_server_classes, self.feature_dim, self.max_visible_jobs
        parts: dict[str, tuple[int, ...]] = {
            "queues": (n_i,),
            "counts": (n_i, n_j),
            "reward_sums": (n_i, n_j),
        }
        if self.observation_mode in ("queues_stats", "full"):
            parts.update(time=(1,), log_total_counts=(n_i, n_j), mean_rewards=(n_i, n_j))
        if self.observation_mode == "full":
            parts.update(job_features=(n_i, d), server_features=(n_j, d))
        if self.action_mode == "job_allocation":
            parts.update(job_class=(k,), job_counts=(k, n_j), job_reward_sums=(k, n_j))
        if self.include_server_counts:  # last, so the other parts keep their offsets
            parts.update(server_counts=(n_j,))
        return parts

    def split(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """The named parts of a flat observation as float64 arrays of their shapes."""
        obs = np.asarray(observation, dtype=np.float64)
        return {name: obs[part].reshape(shape) for name, part, shape in self.part_slices}


def sample_arrivals(rng: np.random.Generator, lam: np.ndarray, slots: int) -> np.ndarray:
    """Classes of the arrivals of ``slots`` slots: one job w.p. λ = Σλ_i, class i w.p. λ_i/λ; -1: none."""
    total = float(lam.sum())
    coin = rng.random(slots)
    cls = rng.choice(lam.size, size=slots, p=lam / total)
    return np.where(coin < total, cls, -1)
