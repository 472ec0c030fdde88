"""Keyword arguments and presets of ``ClusterBilinear-v0`` (spec ``docs/specs/bilinear_queues.md`` §3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from cluster_envs.bilinear.azure import NAME as AZURE
from cluster_envs.bilinear.azure import SLOT_SECONDS, trace_arrivals
from cluster_envs.common.azure_llm import HOW_TO_PASS
from cluster_envs.common.domains import (
    FLAG,
    AnyOf,
    Choice,
    Domain,
    Given,
    Number,
    Sequence,
    check_domains,
    check_memory,
)
from cluster_envs.common.env import INFO_LEVELS

# The vocabularies of the modes (the one source; ``BilinearConfig.DOMAINS`` validates them). The kernel reads the
# reward mode by its index here.
SERVICE_MODELS = ("paper", "exclusive")
ACTION_MODES = ("allocation", "simplex_logits", "server_choice", "job_allocation")
OBSERVATION_MODES = ("queues", "queues_stats", "full")
ARRIVALS = ("bernoulli", AZURE)  # Sec. II's Bernoulli(λ) draws, or a real trace's (cluster_envs.bilinear.azure)
REWARD_MODES = ("noisy", "mean", "expected", "cost_adjusted")


def _per_class(value: Any, size: int) -> tuple[float, ...]:
    """A scalar (checked by its domain) broadcast to ``size`` entries, or the checked sequence as floats."""
    return tuple(float(x) for x in ((value,) * size if np.isscalar(value) else value))


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


MAX_MAGNITUDE = 1e6  # noise, costs and weights: rewards summed over the horizon stay far from float64 overflow
MAX_STATE = 10_000_000  # entries of the largest per-step arrays (job × server classes, feature products, job lists)
# ρ and μ at least 10⁻⁶ (a mean service of 10⁶ slots): below, λ_i = ρ_i μ_i can underflow to 0 and the class
# probabilities λ_i/λ become NaN (found by the configuration fuzz at traffic_intensity=5e-324)
MIN_RATE = 1e-6
_CLASS_RATE = Number(low=MIN_RATE, high=1.0)
_TRAFFIC = Number(low=MIN_RATE)
_COST = Number(low=0.0, high=MAX_MAGNITUDE)
MAX_SERVERS = 1_000_000  # n = Σ servers_per_class: the server_choice action and per-server arrays have n entries
_SERVERS = Number(low=1, high=MAX_SERVERS, integer=True, size=True)


@dataclass(frozen=True)
class BilinearConfig:
    """Keyword arguments of ``ClusterBilinear-v0`` (defaults: the ``paper`` preset, Sec. V).

    Domains: ``DOMAINS`` (one per keyword); joint constraints: ``JOINT``.
    """

    JOINT: ClassVar[str] = (
        "per-class sequences have `num_job_classes` entries (`servers_per_class`: `num_server_classes`); explicit "
        "features have shapes (I, d), (J, d), (d²,) and rows of L2 norm ≤ 1; λ = Σ ρ_i μ_i ≤ 1 (one arrival per "
        "slot); ρ ≤ n servers, and ρ < n unless `allow_unstable` (Assumption II.1); a `server_schedule` array has "
        f"shape (horizon, J); max(I·J, d², `max_visible_jobs`·J) ≤ {MAX_STATE:.0e}; n = Σ `servers_per_class` ≤ "
        f'{MAX_SERVERS:.0e}; `arrivals="{AZURE}"` needs `trace_dir`, an even `num_job_classes` and no '
        "`traffic_intensity` (the trace's rates give ρ), and `trace_dir` is read by no other `arrivals`"
    )

    DOMAINS: ClassVar[dict[str, Domain]] = {
        "num_job_classes": Number(low=1, integer=True, size=True),
        "num_server_classes": Number(low=1, integer=True, size=True),
        "servers_per_class": AnyOf((_SERVERS, Sequence(_SERVERS, length="num_server_classes"))),
        "feature_dim": Number(low=1, integer=True, size=True),
        "job_features": Given("None, or a (num_job_classes, feature_dim) array of rows with L2 norm ≤ 1"),
        "server_features": Given("None, or a (num_server_classes, feature_dim) array of rows with L2 norm ≤ 1"),
        "theta": Given("None, or a (feature_dim²,) array with L2 norm ≤ 1"),
        "instance_seed": Number(low=0, integer=True, none=True),
        "traffic_intensity": AnyOf((Number(low=MIN_RATE, none=True), Sequence(_TRAFFIC, length="num_job_classes"))),
        "arrivals": Choice(ARRIVALS),
        "trace_dir": Given(f"None, or with arrivals={AZURE!r} the folder of the Azure LLM inference 2023 trace's CSVs"),
        "service_rate": AnyOf((_CLASS_RATE, Sequence(_CLASS_RATE, length="num_job_classes"))),
        "noise_std": Number(low=0.0, high=MAX_MAGNITUDE),
        "holding_costs": AnyOf((_COST, Sequence(_COST, length="num_job_classes"))),
        "horizon": Number(low=1, integer=True, size=True),
        "service_model": Choice(SERVICE_MODELS),
        "action_mode": Choice(ACTION_MODES),
        "observation_mode": Choice(OBSERVATION_MODES),
        "reward_mode": Choice(REWARD_MODES),
        "holding_cost_weight": _COST,
        "gamma_env": Number(low=-MAX_MAGNITUDE, high=MAX_MAGNITUDE),
        "queue_cap": Number(low=1, integer=True, none=True),
        "server_schedule": Given("None, a callable t -> n(t) (J servers per class), or a (horizon, J) array"),
        "include_server_counts": FLAG,
        "max_visible_jobs": Number(low=1, integer=True, size=True),
        "allow_unstable": FLAG,
        "info_level": Choice(INFO_LEVELS),
    }

    num_job_classes: int = 10
    num_server_classes: int = 2
    servers_per_class: int | tuple[int, ...] = 2
    feature_dim: int = 2
    job_features: Any = None
    server_features: Any = None
    theta: Any = None
    instance_seed: int | None = None
    traffic_intensity: float | tuple[float, ...] | None = None  # None: 1.0 (Bernoulli), the trace's rates (a trace)
    arrivals: str = "bernoulli"
    trace_dir: Any = None  # the folder of the trace CSVs (arrivals="azure_llm_2023")
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
    include_server_counts: bool = False  # App. D.2: observe n_j(t) of the slot about to be decided
    max_visible_jobs: int = 32
    allow_unstable: bool = False
    info_level: str = "full"

    def __post_init__(self) -> None:
        check_domains(self, self.DOMAINS)
        n_i, n_j, d = self.num_job_classes, self.num_server_classes, self.feature_dim
        state = max(n_i * n_j, d * d, self.max_visible_jobs * n_j)
        if state > MAX_STATE:  # before any per-class list is built (num_server_classes=10**9 exhausted memory)
            raise ValueError(
                f"num_job_classes={n_i}, num_server_classes={n_j}, feature_dim={d}, "
                f"max_visible_jobs={self.max_visible_jobs} give per-step arrays of {state} entries > {MAX_STATE:.0e}; "
                "lower them"
            )
        # an episode draws its arrivals up front: a class, a coin and the result per slot (8 bytes each)
        check_memory("per-episode arrival arrays", 3 * 8 * (self.horizon + 1), {"horizon": self.horizon})
        servers = _per_class(self.servers_per_class, n_j)
        if sum(servers) > MAX_SERVERS:  # 268 435 424 servers took 9 GB (found by the configuration fuzz)
            raise ValueError(f"servers_per_class={self.servers_per_class!r} gives {sum(servers):.0f} servers > "
                             f"{MAX_SERVERS:.0e}; lower it")  # fmt: skip
        servers = tuple(int(c) for c in servers)
        object.__setattr__(self, "servers_per_class", servers)
        for name, shape in (("job_features", (n_i, d)), ("server_features", (n_j, d)), ("theta", (d * d,))):
            _unit_bounded(name, getattr(self, name), shape)
        mu = _per_class(self.service_rate, n_i)
        rho = self._trace_traffic(mu) if self.arrivals == AZURE else self._given_traffic()
        object.__setattr__(self, "traffic_intensity", rho)
        object.__setattr__(self, "service_rate", mu)
        lam = sum(r * m for r, m in zip(rho, mu, strict=True))
        if lam > 1 + 1e-12:
            raise ValueError(
                f"traffic_intensity × service_rate gives λ = {lam:.4g} > 1: at most one job arrives per slot"
            )
        check_capacity("traffic_intensity", rho, mu, sum(servers), self.allow_unstable)
        object.__setattr__(self, "holding_costs", _per_class(self.holding_costs, n_i))
        if self.server_schedule is not None and not callable(self.server_schedule):
            sched = np.asarray(self.server_schedule)
            if sched.shape != (self.horizon, n_j):
                raise ValueError(
                    f"server_schedule must be callable t -> n(t) or of shape (horizon, J), got {sched.shape}"
                )

    def _given_traffic(self) -> tuple[float, ...]:
        if self.trace_dir is not None:
            raise ValueError(f"trace_dir is only read by arrivals={AZURE!r}, not by arrivals={self.arrivals!r}")
        given = 1.0 if self.traffic_intensity is None else self.traffic_intensity
        rho = _per_class(given, 1 if np.isscalar(given) else self.num_job_classes)
        return (rho[0] / self.num_job_classes,) * self.num_job_classes if len(rho) == 1 else rho  # a scalar: the total

    def _trace_traffic(self, mu: tuple[float, ...]) -> tuple[float, ...]:
        """ρ_i = λ_i / μ_i from the trace's admitted arrivals (``cluster_envs.bilinear.azure``)."""
        if self.traffic_intensity is not None:
            raise ValueError(f"traffic_intensity={self.traffic_intensity!r} with arrivals={AZURE!r}: the trace's "
                             "arrival rates give ρ; leave traffic_intensity unset (None)")  # fmt: skip
        if self.trace_dir is None:
            raise ValueError(f"arrivals={AZURE!r} (the {AZURE} preset) needs its data: {HOW_TO_PASS}")
        trace = trace_arrivals(self.trace_dir, self.num_job_classes)
        if self.horizon >= trace.classes.size:
            raise ValueError(f"horizon={self.horizon}: the Azure LLM inference 2023 trace has {trace.classes.size} "
                             f"slots of {SLOT_SECONDS} s; allowed: horizon ≤ {trace.classes.size - 1}")  # fmt: skip
        rates = trace.rates
        return tuple(float(lam / m) for lam, m in zip(rates, mu, strict=True))


PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "paper_holding": {"holding_costs": (1.75,) * 5 + (0.25,) * 5},
    # production scale: 40 job classes on 8 server classes (16 servers), the default's load per server
    "production": {"num_job_classes": 40, "num_server_classes": 8},
    # the trace's requests as the jobs: 2 services × 3 size classes, slots of 0.1 s, one job at a time per server
    AZURE: {
        "arrivals": AZURE,
        "num_job_classes": 6,
        "horizon": 2000,
        "service_rate": 0.22,
        "service_model": "exclusive",
    },  # fmt: skip
    "rl": {
        "service_model": "exclusive",
        "action_mode": "simplex_logits",
        "observation_mode": "full",
        "holding_cost_weight": 0.01,
    },
}

# presets an order of magnitude past the papers: timed by `cluster-envs bench --scaling-only` and built by
# tests/test_production_presets.py, not played by every agent in the tests
PRODUCTION_PRESETS = ("production",)
TRACE_PRESETS = (AZURE,)  # presets that read user data (trace_dir): not built without it
