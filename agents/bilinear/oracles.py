"""The privileged agents of ClusterBilinear-v0: SABR's allocation rule with the true mean rewards (an offline
reference, not an online algorithm)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agents.bilinear.sabr import SABR


class OracleSABR(SABR):
    """Privileged: Algorithm 1 with the true mean rewards r in place of r̃ (the y*(t) of Lemma A.3)."""

    name: ClassVar[str] = "oracle_sabr"
    privileged: ClassVar[bool] = True

    def reset(self, env: Any, seed: int | None = None) -> None:
        super().reset(env.problem, seed)
        self.r = np.asarray(env.true_mean_rewards, dtype=np.float64)

    def _indices(self) -> np.ndarray:
        return self.r
