"""What the SLA agents read from an observation: which users are active (their queue is non-empty)."""

from __future__ import annotations

from typing import Any

import numpy as np


def active_users(observation: Any, n_users: int) -> np.ndarray:
    """1.0 for the users with a non-empty queue, else 0.0 (float64[n_users]), from either observation format:
    the Box's first ``n_users`` entries or the Dict's ``"active"`` (``observation_format="dict"``)."""
    flags = observation["active"] if isinstance(observation, dict) else np.asarray(observation)[:n_users]
    return (np.asarray(flags) > 0.5).astype(np.float64)
