"""A work-conserving fluid server: how much work it has done after each step, for every prefix at once (the
offline optimum of paper 003, Proposition 2; the binding shares of the real-trace presets)."""

from __future__ import annotations

import numpy as np


def capped_cumulative_work(loads: np.ndarray, capacity: float | np.ndarray) -> np.ndarray:
    """Cumulative work of a work-conserving server of rate ``capacity`` fed by ``loads``, for every prefix.

    ``loads`` has time on its last axis; ``capacity`` broadcasts against the leading axes. This is
    Proposition 2 of paper 003, OPT_c(t) = min_{0≤s≤t} [Σ_{r≤s} ℓ_r + c (t - s)], evaluated for all t at
    once as c·t + cummin_s (S_s - c·s). In ClusterSLA-v1, applied to the aggregate load it gives the
    offline optimum OPT_c(t); applied per user with c = s_i it gives the static SLA reference W'_t(i).
    """
    loads = np.asarray(loads, dtype=np.float64)
    horizon = loads.shape[-1]
    capacity = np.asarray(capacity, dtype=np.float64)
    steps = np.arange(horizon + 1, dtype=np.float64)
    cum = np.concatenate([np.zeros(loads.shape[:-1] + (1,)), np.cumsum(loads, axis=-1)], axis=-1)
    scaled_steps = capacity[..., None] * steps
    best = np.minimum.accumulate(cum - scaled_steps, axis=-1)
    return (scaled_steps + best)[..., 1:]
