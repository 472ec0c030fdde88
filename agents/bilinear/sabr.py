"""SABR / W-SABR (Alg. 1) and the rarely-switching OFUL variant (Alg. 2) of paper 004 (Oracle-SABR: oracles.py).

Each slot: update the ridge estimator with the previous slot's feedback (in the observation), form the
UCB indices r̃, solve problem (3) with a_i = w_i Q_i/V, and submit y as fractions y_ij/n_j
(``action_mode="allocation"``); the env realises the randomised server selection.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agents.base import BaseAgent
from agents.bilinear.distributed import NODES, solve_distributed
from agents.bilinear.estimator import RidgeUCB
from agents.bilinear.solver import solve_allocation
from cluster_envs.bilinear.model import BilinearProblem
from cluster_envs.common.config import check_choice, check_number

SOLVERS = ("centralized", "distributed_job", "distributed_server")


def check_action_mode(problem: BilinearProblem, mode: str, agent: str) -> None:
    if problem.action_mode != mode:
        raise ValueError(f"{agent} needs action_mode={mode!r}, the env has action_mode={problem.action_mode!r}")


class SABR(BaseAgent):
    """Algorithm 1 [L124–212]: weighted proportional fair allocation with marginal cost γ and bilinear UCBs.

    With the env's ``include_server_counts`` the observation carries n_j(t) and the allocation is App. D.2's (46),
    over the server classes present in the slot; the estimator keeps ζ = n, the nominal count (Thm A.18 takes
    ζ = n_max = max_t n(t), which equals n when every server is present in some slot).

    Hyperparameters (paper defaults): ``gamma_cost`` γ = 1.2 (> 1), ``V`` = √(I T) when None, ``weights`` w
    (ones; W-SABR uses w = c), ``beta_scale`` multiplying β_t = σ √(d² ln(tT)) + √n, ``noise_std`` σ (None: the
    env's, ``problem.noise_std``: the width the paper's formula gives for σ-sub-Gaussian noise, since it prints
    β_t for 1-sub-Gaussian noise; ``noise_std=1`` is β_t as printed, the agent ``sabr_printed``),
    ``solver``: ``"centralized"`` (exact fast path when no capacity binds, SLSQP otherwise; default),
    ``"distributed_job"`` / ``"distributed_server"`` (the Sec. IV iterations, options in ``solver_kwargs``:
    beta, alpha, delays, iterations, update).
    """

    problem_type = BilinearProblem
    name: ClassVar[str] = "sabr"
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "allocation"}

    def __init__(
        self,
        gamma_cost: float = 1.2,
        V: float | None = None,
        beta_scale: float = 1.0,
        weights: Any = None,
        solver: str = "centralized",
        solver_kwargs: dict[str, Any] | None = None,
        noise_std: float | None = None,
    ):
        check_number("gamma_cost", gamma_cost, low=1.0, low_open=True)
        if V is not None:
            check_number("V", V, low=0.0, low_open=True)
        check_number("beta_scale", beta_scale, low=0.0)
        if noise_std is not None:
            check_number("noise_std", noise_std, low=0.0)
        self.noise_std = noise_std
        check_choice("solver", solver, SOLVERS)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if not np.isfinite(weights).all() or (weights <= 0).any():
                raise ValueError("weights must be finite and positive")
        self.gamma_cost, self.V, self.beta_scale, self.weights = (
            float(gamma_cost),
            V,
            float(beta_scale),
            weights,
        )
        self.solver, self.solver_kwargs = solver, dict(solver_kwargs or {})

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        check_action_mode(problem, "allocation", self.name)
        self.problem = problem
        n_i = problem.n_job_classes
        self.w = self._weights(problem)
        if self.w.shape != (n_i,):
            raise ValueError(f"weights must have {n_i} entries (one per job class), got {self.w.shape}")
        self.v_param = float(np.sqrt(n_i * problem.horizon)) if self.V is None else float(self.V)
        self.estimator = RidgeUCB(problem.pair_features, problem.n_servers, problem.horizon, self.beta_scale,
                                  problem.noise_std if self.noise_std is None else self.noise_std)  # fmt: skip
        self.t = 0

    def _weights(self, problem: BilinearProblem) -> np.ndarray:
        return np.ones(problem.n_job_classes) if self.weights is None else self.weights

    def _indices(self) -> np.ndarray:
        return self.estimator.indices(self.t)

    def act(self, observation: np.ndarray) -> np.ndarray:
        parts = self.problem.split(observation)
        self.estimator.update(parts["counts"], parts["reward_sums"])
        self.t += 1
        y = self.allocate(self._indices(), parts["queues"], parts.get("server_counts"))
        return (y / self.problem.caps).ravel()

    def allocate(self, rt: np.ndarray, queues: np.ndarray, caps: np.ndarray | None = None) -> np.ndarray:
        """Solve (3) for the given indices and queues with the configured solver; with the slot's server counts
        ``caps`` = n_j(t) (None: the fixed n_j), solve (46) of App. D.2 over J(t) = {j : n_j(t) > 0} (the other
        columns 0)."""
        a = self.w * queues / self.v_param
        caps = self.problem.caps if caps is None else np.asarray(caps, dtype=np.float64)
        present = caps > 0
        y = np.zeros(rt.shape)
        if self.solver == "centralized":
            y[:, present] = solve_allocation(rt[:, present], a, caps[present], self.gamma_cost)
        else:
            node = NODES[SOLVERS.index(self.solver) - 1]
            y[:, present] = solve_distributed(
                rt[:, present], a, caps[present], self.gamma_cost, node=node, **self.solver_kwargs
            )
        return y


class SABRPrinted(SABR):
    """Ablation: SABR with β_t as printed, √(d² ln(tT)) + √n (the noise taken 1-sub-Gaussian, L120)."""

    name: ClassVar[str] = "sabr_printed"

    def __init__(self, noise_std: float | None = 1.0, **kwargs: Any):
        super().__init__(noise_std=noise_std, **kwargs)


class WSABR(SABR):
    """W-SABR: Algorithm 1 with weights w = c, the env's public holding costs [L406]."""

    name: ClassVar[str] = "w_sabr"

    def _weights(self, problem: BilinearProblem) -> np.ndarray:
        return problem.holding_cost_array if self.weights is None else self.weights


class OFULRS(SABR):
    """Algorithm 2 (rarely-switching OFUL) [L930–983]: recompute r̃ only when log det Λ grew by ln(1 + C).

    Includes the reference reset logdet* ← logdet after a recomputation, missing in the printed
    algorithm (spec §7-J); without it the indices are recomputed every slot once the threshold is passed.
    ``recomputations`` counts the index computations of the episode.
    """

    name: ClassVar[str] = "oful_rs"

    def __init__(self, C: float = 1.0, **kwargs: Any):
        check_number("C", C, low=0.0, low_open=True)
        super().__init__(**kwargs)
        self.C = float(C)

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        super().reset(problem, seed)
        self.reference_logdet = self.estimator.logdet()
        self.cached = np.zeros((problem.n_job_classes, problem.n_server_classes))
        self.recomputations = 0

    def _indices(self) -> np.ndarray:
        logdet = self.estimator.logdet()
        if self.t == 1 or logdet > np.log1p(self.C) + self.reference_logdet:
            self.cached = self.estimator.indices(self.t)
            self.reference_logdet = logdet
            self.recomputations += 1
        return self.cached
