"""Keyword arguments and presets of ``ClusterApprox-v0`` and ``ClusterApproxSingleJob-v0`` (spec §3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cluster_envs.approx.model import BENCHMARK_KINDS, RATE_PROCESSES, UTILITIES
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.common.flat import OBSERVATION_MODES

JOB_SOURCES = ("synthetic", "trace", "common", "single", "list")
PRICE_MODES = ("proportional", "uniform")
BUDGET_MODES = ("hard", "soft")
REWARD_MODES = ("true", "approx", "sparse")
# How an action is read (cluster_envs/approx/actions.py). Multi-job, base model: "occupant" (the paper's: a machine
# sent to an empty slot idles) or "work_conserving"; single job: "binary" (the paper's) or "paced_priority".
MULTI_ACTION_MODES = ("occupant", "work_conserving")
SINGLE_ACTION_MODES = ("binary", "paced_priority")


def _check_range(name: str, value: Any, low: float, high: float | None = None) -> tuple[float, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a pair (low, high), got {value!r}")
    for part in value:
        check_number(name, part, low=low, high=high)
    if value[0] > value[1]:
        raise ValueError(f"{name}={value!r} must have low <= high")
    return (float(value[0]), float(value[1]))


@dataclass(frozen=True)
class ApproxConfig:
    """Every knob of the approximation-job envs; presets (below) fill them, keyword overrides win."""

    RENAMED: ClassVar[dict[str, str]] = {  # deprecated in 0.2 (CHANGELOG): the offline optimum is the "oracle"
        "compute_benchmark": "compute_regret",
        "benchmark_kind": "oracle_kind",
    }

    n_machines: int = 20
    horizon: int = 2000
    max_visible_jobs: int = 8
    rate_process: str = "onoff_gamma"
    iid_mean_range: tuple[float, float] = (0.1, 0.9)
    speed_heterogeneity: float = 0.0
    prices: str | tuple[float, ...] = "proportional"
    price_factor: float = 2.0
    price_range: tuple[float, float] = (0.2, 1.0)
    job_source: str = "synthetic"
    jobs: tuple[tuple[float, float, float, float], ...] | None = None
    trace_path: str | None = None
    n_jobs: int = 3
    load: float = 2.0
    lifetime_median: float = 100.0
    lifetime_sigma: float = 1.0
    q_range: tuple[float, float] = (2.0, 100.0)
    v_range: tuple[float, float] = (1.0, 5.0)
    b_range: tuple[float, float] = (0.5, 2.0)
    budget_fraction: float = 0.2
    utility: str = "power"
    beta: float = 0.5
    job_keep_fraction: float = 1.0
    budget_mode: str = "hard"
    reward_mode: str = "true"
    compute_regret: bool = False
    oracle_kind: str = "eq6"
    fixed_instance: bool = False
    instance_seed: int = 0
    expose_oracle: bool = False
    capacity: int | tuple[int, ...] | None = None
    demand: float = 1.0
    parallelism: int | None = None
    info_level: str = "full"
    action_mode: str = "occupant"
    observation_mode: str = "dict"

    def __post_init__(self) -> None:
        check_number("n_machines", self.n_machines, low=1, integer=True)
        check_number("horizon", self.horizon, low=1, integer=True)
        check_number("max_visible_jobs", self.max_visible_jobs, low=1, integer=True)
        check_choice("rate_process", self.rate_process, RATE_PROCESSES)
        object.__setattr__(self, "iid_mean_range", _check_range("iid_mean_range", self.iid_mean_range, 0.0, 1.0))
        check_number("speed_heterogeneity", self.speed_heterogeneity, low=0.0, high=1.0, high_open=True)
        if isinstance(self.prices, str):
            check_choice("prices", self.prices, PRICE_MODES)
        else:
            prices = tuple(self.prices)
            if len(prices) != self.n_machines:
                raise ValueError(f"prices has {len(prices)} entries but n_machines={self.n_machines}")
            for i, p in enumerate(prices):
                check_number(f"prices[{i}]", p, low=0.0, low_open=True)
            object.__setattr__(self, "prices", tuple(float(p) for p in prices))
        low, high = self.iid_mean_range
        if self.rate_process == "iid_beta" and not 0.0 < low <= high < 1.0:
            raise ValueError(
                f"iid_mean_range={self.iid_mean_range!r} must lie inside (0, 1) with rate_process='iid_beta'"
                " (a Beta distribution with mean 0 or 1 does not exist)"
            )
        if self.prices == "proportional" and self.rate_process != "onoff_gamma" and low <= 0.0:
            raise ValueError(
                f"iid_mean_range={self.iid_mean_range!r} must be positive with prices='proportional'"
                " (a machine of mean rate 0 would cost nothing)"
            )
        check_number("price_factor", self.price_factor, low=0.0, low_open=True)
        price_range = _check_range("price_range", self.price_range, 0.0)
        if price_range[0] <= 0:
            raise ValueError(f"price_range={self.price_range!r} must be positive")
        object.__setattr__(self, "price_range", price_range)
        check_choice("job_source", self.job_source, JOB_SOURCES)
        if self.job_source == "list":
            object.__setattr__(self, "jobs", self._checked_jobs())
        elif self.jobs is not None:
            raise ValueError("jobs is only used with job_source='list'")
        if (self.job_source == "trace") != (self.trace_path is not None):
            raise ValueError("trace_path (a CSV of job_id,a,d) goes with job_source='trace', and only with it")
        if self.trace_path is not None and not Path(self.trace_path).is_file():
            raise ValueError(f"trace_path={self.trace_path!r} is not a file")
        check_number("n_jobs", self.n_jobs, low=1, integer=True)
        check_number("load", self.load, low=0.0, low_open=True)
        check_number("lifetime_median", self.lifetime_median, low=1.0)
        check_number("lifetime_sigma", self.lifetime_sigma, low=0.0)
        object.__setattr__(self, "q_range", _check_range("q_range", self.q_range, 0.0))
        object.__setattr__(self, "v_range", _check_range("v_range", self.v_range, 0.0))
        object.__setattr__(self, "b_range", _check_range("b_range", self.b_range, 0.0))
        if self.q_range[0] <= 0 or self.v_range[0] <= 0 or self.b_range[0] <= 0:
            raise ValueError("q_range, v_range and b_range must be positive")
        check_number("budget_fraction", self.budget_fraction, low=0.0, low_open=True)
        check_choice("utility", self.utility, UTILITIES)
        check_number("beta", self.beta, low=0.0, high=1.0, low_open=True)
        check_number("job_keep_fraction", self.job_keep_fraction, low=0.0, high=1.0, low_open=True)
        check_choice("budget_mode", self.budget_mode, BUDGET_MODES)
        check_choice("reward_mode", self.reward_mode, REWARD_MODES)
        check_choice("compute_regret", self.compute_regret, (False, True))
        check_choice("oracle_kind", self.oracle_kind, BENCHMARK_KINDS)
        check_choice("fixed_instance", self.fixed_instance, (False, True))
        check_number("instance_seed", self.instance_seed, low=0, integer=True)
        check_choice("expose_oracle", self.expose_oracle, (False, True))
        if self.capacity is not None:
            capacity = (self.capacity,) * self.n_machines if isinstance(self.capacity, int) else tuple(self.capacity)
            if len(capacity) != self.n_machines:
                raise ValueError(f"capacity has {len(capacity)} entries but n_machines={self.n_machines}")
            for i, c in enumerate(capacity):
                check_number(f"capacity[{i}]", c, low=1, integer=True)
            object.__setattr__(self, "capacity", capacity)
        check_number("demand", self.demand, low=0.0, low_open=True)
        if self.parallelism is not None:
            check_number("parallelism", self.parallelism, low=1, integer=True)
        check_choice("info_level", self.info_level, INFO_LEVELS)
        if self.capacity is None and (self.demand != 1.0 or self.parallelism is not None):
            raise ValueError("demand and parallelism need the Sec. V-C mode: set capacity (int or one per machine)")
        check_choice("action_mode", self.action_mode, MULTI_ACTION_MODES + SINGLE_ACTION_MODES)  # per id: the env
        check_choice("observation_mode", self.observation_mode, OBSERVATION_MODES)

    def _checked_jobs(self) -> tuple[tuple[float, float, float, float], ...]:
        if self.jobs is None or len(self.jobs) == 0:
            raise ValueError(
                "jobs must be a non-empty list of (arrival, deadline, budget, value) with job_source='list'"
            )
        out = []
        for n, job in enumerate(self.jobs):
            if len(job) != 4:
                raise ValueError(f"jobs[{n}]={job!r} must be (arrival, deadline, budget, value)")
            a, d, b, v = job
            check_number(f"jobs[{n}] arrival", a, low=0, integer=True)
            check_number(f"jobs[{n}] deadline", d, low=1, high=self.horizon, integer=True)
            if d <= a:
                raise ValueError(f"jobs[{n}]: deadline {d} must come after arrival {a}")
            check_number(f"jobs[{n}] budget", b, low=0.0, low_open=True)
            check_number(f"jobs[{n}] value", v, low=0.0, low_open=True)
            out.append((int(a), int(d), float(b), float(v)))
        return tuple(out)


_ONOFF = {
    "rate_process": "onoff_gamma",
    "prices": "proportional",
    "utility": "power",
    "job_source": "synthetic",
}
_IID = {"rate_process": "iid_bernoulli", "prices": "uniform", "utility": "log"}

MULTI_PRESETS: dict[str, dict[str, Any]] = {
    "default": {**_ONOFF},
    "medium": {
        **_ONOFF,
        "n_machines": 100,
        "horizon": 3600,
        "max_visible_jobs": 64,
        "load": 3.0,
        "lifetime_median": 200.0,
    },
    "paper": {
        **_ONOFF,
        "n_machines": 1000,
        "horizon": 36_000,
        "max_visible_jobs": 256,
        "load": 3.0,
        "lifetime_median": 600.0,
        "lifetime_sigma": 1.5,
    },
    "common_deadline": {
        **_IID,
        "n_machines": 8,
        "horizon": 4000,
        "max_visible_jobs": 3,
        "job_source": "common",
        "n_jobs": 3,
        "compute_regret": True,
    },
}
MULTI_PRESETS["paper_light"] = {**MULTI_PRESETS["paper"], "job_keep_fraction": 0.5}
MULTI_PRESETS["medium_light"] = {**MULTI_PRESETS["medium"], "job_keep_fraction": 0.5}

_SINGLE = {
    **_IID,
    "n_machines": 10,
    "horizon": 2000,
    "max_visible_jobs": 1,
    "job_source": "single",
    "compute_regret": True,
    "action_mode": "binary",
}
SINGLE_PRESETS: dict[str, dict[str, Any]] = {
    "default": _SINGLE,
    "soft": {**_SINGLE, "budget_mode": "soft"},
}
