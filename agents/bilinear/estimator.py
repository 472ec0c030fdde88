"""Ridge least squares over θ = vec(Θ) ∈ R^{d²} with the UCB indices of Alg. 1 [L127–150, L208–210].

The per-slot feedback of the env is, per (class i, server class j), the number of selections N_ij and
the sum of their rewards; since every selection of (i, j) has the same feature z_ij, adding
N_ij z_ij z_ijᵀ to Λ and z_ij Σξ to b is exactly the sequence of Sherman–Morrison updates of the paper.
Λ is kept and inverted each slot (d² × d², tiny), which avoids the numerical drift of rank-one updates.
"""

from __future__ import annotations

import numpy as np


class RidgeUCB:
    """Λ = n I + Σ z zᵀ, b = Σ z ξ; r̃_ij = Π_[-1,1](z_ijᵀθ̂ + β_t ‖z_ij‖_{Λ⁻¹}).

    β_t = beta_scale · (σ √(d² ln(tT)) + √n), with σ the rewards' noise scale (``noise_std``). The paper prints
    β(t) = √(d² ln(tT)) + √n for 1-sub-Gaussian noise (L120, L208); for σ-sub-Gaussian noise the self-normalized
    bound behind it scales the first term by σ, which is what ``noise_std`` does (1: as printed).
    """

    def __init__(self, pair_features: np.ndarray, n_servers: int, horizon: int, beta_scale: float = 1.0,
                 noise_std: float = 1.0):  # fmt: skip
        self.shape = pair_features.shape[:2]
        self.z = pair_features.reshape(-1, pair_features.shape[-1])
        self.dim = self.z.shape[1]
        self.n, self.horizon, self.beta_scale, self.noise_std = n_servers, horizon, beta_scale, noise_std
        self.gram = n_servers * np.eye(self.dim)
        self.b = np.zeros(self.dim)

    def update(self, counts: np.ndarray, reward_sums: np.ndarray) -> None:
        c = counts.ravel()
        if c.any():
            self.gram += (self.z * c[:, None]).T @ self.z
            self.b += self.z.T @ reward_sums.ravel()

    def logdet(self) -> float:
        return float(np.linalg.slogdet(self.gram)[1])

    def beta(self, t: int) -> float:
        return self.beta_scale * (self.noise_std * np.sqrt(self.dim * np.log(t * self.horizon)) + np.sqrt(self.n))

    def theta_hat(self) -> np.ndarray:
        return np.linalg.solve(self.gram, self.b)

    def indices(self, t: int) -> np.ndarray:
        """r̃ (I, J) at slot t (t ≥ 1)."""
        inv = np.linalg.inv(self.gram)
        width = np.sqrt(np.einsum("pa,ab,pb->p", self.z, inv, self.z))
        return np.clip(self.z @ (inv @ self.b) + self.beta(t) * width, -1.0, 1.0).reshape(self.shape)
