"""Keyword arguments and presets of ``ClusterBilinear-v0`` (spec ``docs/specs/bilinear_queues.md`` §3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from cluster_envs.bilinear.kernel import REWARD_MODES
from cluster_envs.bilinear.simulator import ACTION_MODES, OBSERVATION_MODES, SERVICE_MODELS
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.env import INFO_LEVELS


def _per_class(name: str, value: Any, size: int) -> tuple[float, ...]:
    """A scalar broadcast to ``size`` entries, or a sequence of exactly ``size`` finite numbers."""
    values = (value,) * size if np.isscalar(value) else tuple(value)
    if len(values) != size:
        raise ValueError(f"{name} must be a number or have {size} entries, got {len(values)}")
    for k, x in enumerate(values):
        check_number(f"{name}[{k}]", x)
    return tuple(float(x) for x in values)


def _unit_bounded(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """None, or a finite array of ``shape`` whose rows have L2 norm ≤ 1 (the paper's boundedness)."""
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    if (np.linalg.norm(arr.reshape(shape[0] if len(shape) > 1 else 1, -1), axis=1) > 1 + 1e-9).any():
        raise ValueError(f"{name}: every vector must have L2 norm ≤ 1 (the model assumes ‖u‖, ‖v‖, ‖θ‖ ≤ 1)")
    return arr


def check_capacity(name: str, rho: Any, mu: Any, n: float, allow_unstable: bool) -> None:
    """``ValueError`` naming ``name`` when n servers cannot carry the traffic: ρ > n leaves the oracle LP of eq. (1)
    without a feasible allocation (always refused); Assumption II.1's stability, ρ < n (2λ/μ_min − ρ < n for
    heterogeneous μ, App. D [L272]), is refused unless ``allow_unstable``."""
    rho, mu = [float(r) for r in np.ravel(rho)], [float(m) for m in np.ravel(mu)]
    load = sum(rho)
    if load > n + 1e-9:
        raise ValueError(f"{name}: the traffic ρ = {load:.4g} exceeds the n = {n:g} servers, so the oracle LP (eq. 1) "
                         "has no feasible allocation (even with allow_unstable=True)")  # fmt: skip
    lam = sum(r * m for r, m in zip(rho, mu, strict=True))
    stat = load if len(set(mu)) == 1 else 2 * lam / min(mu) - load
    if stat >= n - 1e-9 and not allow_unstable:
        raise ValueError(f"{name} gives an unstable system ({stat:.4g} ≥ n = {n:g}; Assumption II.1); lower the load "
                         "or pass allow_unstable=True")  # fmt: skip


@dataclass(frozen=True)
class BilinearConfig:
    """Keyword arguments of ``ClusterBilinear-v0`` (defaults: the ``paper`` preset, Sec. V)."""

    RENAMED: ClassVar[dict[str, str]] = {"max_jobs": "max_visible_jobs"}  # deprecated in 0.2 (CHANGELOG)

    num_job_classes: int = 10
    num_server_classes: int = 2
    servers_per_class: int | tuple[int, ...] = 2
    feature_dim: int = 2
    job_features: Any = None
    server_features: Any = None
    theta: Any = None
    instance_seed: int | None = None
    traffic_intensity: float | tuple[float, ...] = 1.0
    service_rate: float | tuple[float, ...] = 1.0
    noise_std: float = 0.1
    holding_costs: float | tuple[float, ...] = 1.0
    horizon: int = 500
    service_model: str = "paper"
    action_mode: str = "allocation"
    observation_mode: str = "queues"
    reward_mode: str = "noisy"
    holding_cost_weight: float = 0.0
    gamma_env: float = 1.2
    queue_cap: int | None = None
    server_schedule: Callable[[int], Any] | Any = None
    max_visible_jobs: int = 32
    allow_unstable: bool = False
    info_level: str = "full"

    def __post_init__(self) -> None:
        check_number("num_job_classes", self.num_job_classes, low=1, integer=True)
        check_number("num_server_classes", self.num_server_classes, low=1, integer=True)
        check_number("feature_dim", self.feature_dim, low=1, integer=True)
        n_i, n_j, d = self.num_job_classes, self.num_server_classes, self.feature_dim
        servers = (
            (self.servers_per_class,) * n_j if np.isscalar(self.servers_per_class) else tuple(self.servers_per_class)
        )
        if len(servers) != n_j:
            raise ValueError(f"servers_per_class must be an integer or have {n_j} entries, got {len(servers)}")
        for j, c in enumerate(servers):
            check_number(f"servers_per_class[{j}]", c, low=1, integer=True)
        object.__setattr__(self, "servers_per_class", tuple(int(c) for c in servers))
        for name, shape in (("job_features", (n_i, d)), ("server_features", (n_j, d)), ("theta", (d * d,))):
            _unit_bounded(name, getattr(self, name), shape)
        if self.instance_seed is not None:
            check_number("instance_seed", self.instance_seed, low=0, integer=True)
        rho = _per_class("traffic_intensity", self.traffic_intensity, 1 if np.isscalar(self.traffic_intensity) else n_i)
        rho = (rho[0] / n_i,) * n_i if len(rho) == 1 else rho  # a scalar is the total ρ, split evenly
        mu = _per_class("service_rate", self.service_rate, n_i)
        if any(r <= 0 for r in rho):
            raise ValueError("traffic_intensity must be positive for every class")
        if any(not 0 < m <= 1 for m in mu):
            raise ValueError("service_rate must lie in (0, 1] for every class (geometric service per slot)")
        object.__setattr__(self, "traffic_intensity", rho)
        object.__setattr__(self, "service_rate", mu)
        lam = sum(r * m for r, m in zip(rho, mu, strict=True))
        if lam > 1 + 1e-12:
            raise ValueError(
                f"traffic_intensity × service_rate gives λ = {lam:.4g} > 1: at most one job arrives per slot"
            )
        check_choice("allow_unstable", self.allow_unstable, (False, True))
        check_choice("info_level", self.info_level, INFO_LEVELS)
        check_capacity("traffic_intensity", rho, mu, sum(servers), self.allow_unstable)
        check_number("noise_std", self.noise_std, low=0.0)
        object.__setattr__(self, "holding_costs", _per_class("holding_costs", self.holding_costs, n_i))
        if any(c < 0 for c in self.holding_costs):
            raise ValueError("holding_costs must be non-negative")
        check_number("horizon", self.horizon, low=1, integer=True)
        check_choice("service_model", self.service_model, SERVICE_MODELS)
        check_choice("action_mode", self.action_mode, ACTION_MODES)
        check_choice("observation_mode", self.observation_mode, OBSERVATION_MODES)
        check_choice("reward_mode", self.reward_mode, REWARD_MODES)
        check_number("holding_cost_weight", self.holding_cost_weight, low=0.0)
        check_number("gamma_env", self.gamma_env)
        if self.queue_cap is not None:
            check_number("queue_cap", self.queue_cap, low=1, integer=True)
        check_number("max_visible_jobs", self.max_visible_jobs, low=1, integer=True)
        if self.server_schedule is not None and not callable(self.server_schedule):
            sched = np.asarray(self.server_schedule)
            if sched.shape != (self.horizon, n_j):
                raise ValueError(
                    f"server_schedule must be callable t -> n(t) or of shape (horizon, J), got {sched.shape}"
                )


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "paper_holding": {"holding_costs": (1.75,) * 5 + (0.25,) * 5},
    "rl": {
        "service_model": "exclusive",
        "action_mode": "simplex_logits",
        "observation_mode": "full",
        "holding_cost_weight": 0.01,
    },
}
