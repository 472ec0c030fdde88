"""Keyword arguments and presets of ``ClusterApprox-v1`` and ``ClusterApproxSingleJob-v0`` (spec §3.2)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cluster_envs.common.config import check_number
from cluster_envs.common.domains import FLAG, AnyOf, Choice, Domain, Given, Number, Sequence, check_domains
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.common.flat import OBSERVATION_FORMATS as FLAT_FORMATS

# "scaled" (the RL-ready ids'): the flat observation as float32, each entry divided by its public bound
OBSERVATION_FORMATS = (*FLAT_FORMATS, "scaled")

# The vocabularies of the modes (the one source; ``ApproxConfig.DOMAINS`` validates them).
RATE_PROCESSES = ("iid_bernoulli", "iid_uniform", "iid_beta", "onoff_gamma")
UTILITIES = ("power", "log", "linear")
ORACLE_KINDS = ("eq6", "p1", "thm3")  # the offline optimum of the regret (cluster_envs.approx.model.opt_per_job)
JOB_SOURCES = ("synthetic", "trace", "common", "single", "list")
# "proportional": p_i = price_factor × machine i's mean service rate under the model, its speed s_i times the
# model's mean rate (L691; public, never the realised mean of the hidden trajectory, which the price would reveal);
# "flat": one price for all, price_factor × the model's population mean rate (L691's "the mean service rate" read
# as the cluster's, ours); "uniform": p_i ~ U[price_range]
PRICE_MODES = ("proportional", "flat", "uniform")
BUDGET_MODES = ("hard", "soft")
REWARD_MODES = ("true", "approx", "sparse")
# How an action is read (cluster_envs/approx/actions.py). Multi-job, base model: "occupant" (the paper's: a machine
# sent to an empty slot idles), "work_conserving" or "paced_priority"; single job: "binary" (the paper's) or
# "paced_priority".
MULTI_ACTION_MODES = ("occupant", "work_conserving", "paced_priority")
SINGLE_ACTION_MODES = ("binary", "paced_priority")


MAX_JOBS = 1_000_000  # jobs of one instance: their arrays and the per-step job loops stay within memory and time
MAX_ALLOCATION = 10_000_000  # entries of the (visible jobs × machines) allocation matrix
MAX_MAGNITUDE = 1e6  # prices, values, budgets, loads: far below float64 overflow once summed over jobs and steps
_POSITIVE = Number(low=0.0, high=MAX_MAGNITUDE, low_open=True)
# q̄ divides the job count: q_range=(5e-324, 5e-324) divided it by 0 (found by the configuration fuzz)
_RATE_OF_SPEND = Number(low=1e-6, high=MAX_MAGNITUDE)


def job_count_bound(cfg: ApproxConfig) -> float:
    """An upper bound on the expected synthetic job count n̄ = load·M·p̄·T / (q̄·ℓ̄) of ``synthetic_jobs``, known
    before anything is drawn: p̄ ≤ the largest price a machine can get (rates are at most 1) and ℓ̄ ≥ half the mean
    time-in-system of a job living the median lifetime m (half the lifetimes are at least m), that is
    ½·(m(m+1)/2 + m(T−m))/T for m < T, else ½·(T+1)/2."""
    if isinstance(cfg.prices, tuple):
        price = max(cfg.prices)
    else:
        price = cfg.price_factor if cfg.prices in ("proportional", "flat") else cfg.price_range[1]
    m, horizon = max(1, math.floor(cfg.lifetime_median)), cfg.horizon
    in_system = (m * (m + 1) / 2 + m * (horizon - m)) / horizon if m < horizon else (horizon + 1) / 2
    return cfg.load * cfg.n_machines * price * horizon / (sum(cfg.q_range) / 2 * 0.5 * in_system)


@dataclass(frozen=True)
class ApproxConfig:
    """Every knob of the approximation-job envs; presets (below) fill them, keyword overrides win.

    Domains: ``DOMAINS`` (one per keyword); joint constraints: ``JOINT``.
    """

    JOINT: ClassVar[str] = (
        "`prices` and `capacity` (a tuple) have `n_machines` entries; `iid_mean_range` lies inside (0, 1) with "
        "`rate_process='iid_beta'` and is positive with `prices='proportional'` or `'flat'` and an i.i.d. rate "
        "process; `jobs` goes with `job_source='list'` and `trace_path` with `'trace'`; `demand` and `parallelism` "
        "need `capacity`; "
        f"`max_visible_jobs` × `n_machines` ≤ {MAX_ALLOCATION:.0e}; with `job_source='synthetic'` the expected job "
        "count load·M·p̄·T/(q̄·ℓ̄), bounded before any draw from `load`, `n_machines`, the prices (`prices`, "
        f"`price_factor`, `price_range`), `horizon`, `q_range` and `lifetime_median`, is at most {MAX_JOBS:.0e}"
    )

    DOMAINS: ClassVar[dict[str, Domain]] = {
        "n_machines": Number(low=1, integer=True, size=True),
        "horizon": Number(low=1, integer=True, size=True),
        "max_visible_jobs": Number(low=1, integer=True, size=True),
        "rate_process": Choice(RATE_PROCESSES),
        "iid_mean_range": Sequence(Number(low=0.0, high=1.0), pair=True),
        "speed_heterogeneity": Number(low=0.0, high=1.0, high_open=True),
        "prices": AnyOf((Choice(PRICE_MODES), Sequence(_POSITIVE, length="n_machines"))),
        "price_factor": _POSITIVE,
        "price_range": Sequence(_POSITIVE, pair=True),
        "job_source": Choice(JOB_SOURCES),
        "jobs": Given(
            "None, or with job_source='list' a non-empty list of (arrival, deadline ≤ horizon, budget > 0, "
            "value > 0), arrival < deadline integers"
        ),  # fmt: skip
        "trace_path": Given("None, or with job_source='trace' a CSV file of job_id,a,d"),
        "n_jobs": Number(low=1, high=MAX_JOBS, integer=True, size=True),
        "load": _POSITIVE,
        "lifetime_median": Number(low=1.0, high=1e9),
        "lifetime_sigma": Number(low=0.0, high=10.0),  # a log-normal's σ: e^(10·6) is already 10²⁶ steps
        "q_range": Sequence(_RATE_OF_SPEND, pair=True),
        "v_range": Sequence(_POSITIVE, pair=True),
        "b_range": Sequence(_POSITIVE, pair=True),
        # ρ at least 10⁻⁹: ρ = 5e-324 made the per-step budget 0 and consumed/budget inf (found by the config fuzz)
        "budget_fraction": Number(low=1e-9, high=MAX_MAGNITUDE),
        "utility": Choice(UTILITIES),
        "beta": Number(low=0.0, high=1.0, low_open=True),
        "job_keep_fraction": Number(low=0.0, high=1.0, low_open=True),
        "budget_mode": Choice(BUDGET_MODES),
        "reward_mode": Choice(REWARD_MODES),
        "compute_regret": FLAG,
        "oracle_kind": Choice(ORACLE_KINDS),
        "instance_seed": Number(low=0, integer=True, none=True),
        "expose_oracle": FLAG,
        "capacity": AnyOf(
            (Number(low=1, integer=True, none=True), Sequence(Number(low=1, integer=True), length="n_machines"))
        ),  # fmt: skip
        "demand": _POSITIVE,
        "parallelism": Number(low=1, integer=True, none=True),
        "info_level": Choice(INFO_LEVELS),
        "action_mode": Choice(
            tuple(dict.fromkeys(MULTI_ACTION_MODES + SINGLE_ACTION_MODES))
        ),  # per id: the env checks its own
        "observation_format": Choice(OBSERVATION_FORMATS),
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
    instance_seed: int | None = None  # None: each reset seed draws its instance; an int fixes it across resets
    expose_oracle: bool = False
    capacity: int | tuple[int, ...] | None = None
    demand: float = 1.0
    parallelism: int | None = None
    info_level: str = "full"
    action_mode: str = "occupant"
    observation_format: str = "dict"

    def __post_init__(self) -> None:
        check_domains(self, self.DOMAINS)
        for name in ("iid_mean_range", "price_range", "q_range", "v_range", "b_range"):
            object.__setattr__(self, name, tuple(float(x) for x in getattr(self, name)))
        if isinstance(self.prices, tuple):
            object.__setattr__(self, "prices", tuple(float(p) for p in self.prices))
        low, high = self.iid_mean_range
        if self.rate_process == "iid_beta" and not 0.0 < low <= high < 1.0:
            raise ValueError(
                f"iid_mean_range={self.iid_mean_range!r} must lie inside (0, 1) with rate_process='iid_beta'"
                " (a Beta distribution with mean 0 or 1 does not exist)"
            )
        if self.prices in ("proportional", "flat") and self.rate_process != "onoff_gamma" and low <= 0.0:
            raise ValueError(
                f"iid_mean_range={self.iid_mean_range!r} must be positive with prices={self.prices!r}"
                " (a machine of mean rate 0 would cost nothing)"
            )
        if self.job_source == "list":
            object.__setattr__(self, "jobs", self._checked_jobs())
        elif self.jobs is not None:
            raise ValueError("jobs is only used with job_source='list'")
        if (self.job_source == "trace") != (self.trace_path is not None):
            raise ValueError("trace_path (a CSV of job_id,a,d) goes with job_source='trace', and only with it")
        if self.trace_path is not None and not Path(self.trace_path).is_file():
            raise ValueError(f"trace_path={self.trace_path!r} is not a file")
        if isinstance(self.capacity, numbers.Integral):
            object.__setattr__(self, "capacity", (self.capacity,) * self.n_machines)
        if self.capacity is None and (self.demand != 1.0 or self.parallelism is not None):
            raise ValueError("demand and parallelism need the Sec. V-C mode: set capacity (int or one per machine)")
        if self.max_visible_jobs * self.n_machines > MAX_ALLOCATION:
            raise ValueError(
                f"max_visible_jobs × n_machines = {self.max_visible_jobs} × {self.n_machines} exceeds "
                f"{MAX_ALLOCATION:.0e} allocation entries; lower max_visible_jobs or n_machines"
            )
        if self.job_source == "synthetic" and job_count_bound(self) > MAX_JOBS:
            raise ValueError(
                f"the synthetic job count load·M·p̄·T/(q̄·ℓ̄) may reach {job_count_bound(self):.3g} > {MAX_JOBS:.0e} "
                f"jobs (load={self.load!r}, n_machines={self.n_machines}, price_factor={self.price_factor!r}, "
                f"prices={self.prices!r}, horizon={self.horizon}, q_range={self.q_range!r}, lifetime_median="
                f"{self.lifetime_median!r}); lower load, n_machines, horizon or the prices, or raise q_range"
            )

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
# Readings of Sec. VI the spec left open (docs/reproductions/approx.md, "Sensitivity to the open readings"):
# machines whose speeds s_i ~ U[0.5, 1] the prices do not show (one price, 2 × the population mean rate), so that
# rate estimation can matter; and an offered load of 1, where jobs' budgets, not the machines, bind (Fair then
# spends at least 90% of nearly every budget, as in Fig. 1b).
HIDDEN_SPEED = {"prices": "flat", "speed_heterogeneity": 0.5}
BUDGET_BOUND = {"load": 1.0}
MULTI_PRESETS["paper_hidden_speed"] = {**MULTI_PRESETS["paper"], **HIDDEN_SPEED}
MULTI_PRESETS["paper_budget_bound"] = {**MULTI_PRESETS["paper"], **BUDGET_BOUND}
MULTI_PRESETS["paper_budget_bound_hidden_speed"] = {**MULTI_PRESETS["paper"], **BUDGET_BOUND, **HIDDEN_SPEED}
MULTI_PRESETS["medium_light"] = {**MULTI_PRESETS["medium"], "job_keep_fraction": 0.5}
# production scale: the paper preset on 10,000 machines, its job load per machine (so ten times the jobs) and the
# visible job slots scaled likewise up to the allocation limit (1,000 × 10,000 entries)
MULTI_PRESETS["production"] = {**MULTI_PRESETS["paper"], "n_machines": 10_000, "max_visible_jobs": 1000}

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

# presets an order of magnitude past the papers: timed by `cluster-envs bench --scaling-only` and built by
# tests/test_production_presets.py, not played by every agent in the tests
PRODUCTION_PRESETS = ("production",)
