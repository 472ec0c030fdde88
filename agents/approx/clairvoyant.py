"""Clairvoyant anchors of paper 000's envs: the paper's primal-dual schedulers told the true mean rates.

Not in the paper. Privileged (they read ``env._instance.means``, the hidden mean rate of every machine),
so they never learn the rates: OPM/OPS's updates run with θ̂ = θ from the first slot, the UCB estimation
error (the learning part of Theorem 2's regret) removed. The benchmark's 1-anchor of ``ClusterApprox-v1``,
whose exact offline optimum (the convex program P1 over the whole horizon) costs minutes per episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.approx.primal_dual import OPM, OPS, PrimalDualAgent


class _KnownRates(PrimalDualAgent):
    privileged = True

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env.problem, seed)
        self.means = np.asarray(env._instance.means, dtype=np.float64).copy()
        self.theta_prev = self.means

    def estimate(self, observation: dict[str, Any]) -> np.ndarray:
        return self.means


class KnownRatesOPM(_KnownRates, OPM):
    """Privileged: OPM (Sec. V, the experiments' hyperparameters) with θ̂ = the true mean rates."""

    name = "known_rates"


class KnownRatesOPS(_KnownRates, OPS):
    """Privileged: OPS (Alg. 1, Theorem 2's hyperparameters) with θ̂ = the true mean rates."""

    name = "known_rates"
