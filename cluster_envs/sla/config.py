"""Keyword arguments and presets of ``ClusterSLA-v1`` (spec ``docs/specs/sla_mwu.md`` §3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cluster_envs.common import alibaba_gpu, azure_llm
from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.azure_llm import NAME as AZURE
from cluster_envs.common.domains import FLAG, AnyOf, Choice, Domain, Given, Keywords, Number, Sequence, check_domains
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.common.flat import OBSERVATION_FORMATS
from cluster_envs.sla.model import SCENARIOS, SLA_FROM_LOADS, default_history

# The vocabularies of the modes (the one source; ``SLAConfig.DOMAINS`` validates them). The kernel reads the
# action and reward modes by their index here.
ACTION_MODES = ("normalize", "sub_simplex", "softmax")
REWARD_MODES = ("work", "work_sla", "work_sla_level", "neg_regret", "neg_regret_sla")
OBSERVATION_MODES = ("binary", "binary+sla", "full")
MAX_EMPTY_TOL = 1e-6
# The load matrix (and the simulator's per-user cumulative arrays) hold n_users × horizon float64 entries: 5·10⁷
# is 400 MB per array, beyond which a configuration is a mistake rather than an experiment.
MAX_LOAD_CELLS = 50_000_000
MAX_RHO = 1e3  # ρ, the mean total load per step (the capacity is 1): 10³ is already a thousandfold overload
MAX_KAPPA = 1e6  # κ times a deficit (at most the horizon's total load) must stay far from float64 overflow
THREE_USER_SCENARIOS = ("paper_synthetic", "example_1_1", "sec_3_4")
PERIODS = {"paper_synthetic": 6, "example_1_1": 3}  # horizon must be a multiple of the scenario's periods

_SHAPE = Number(low=1e-2, high=1e8)  # the Gamma shape k: below 10⁻² draws are mostly exact zeros
# ρ at least 10⁻⁶: ρ = 5e-324 scaled every load to 0, which sla="mean" then divided by (found by the config fuzz)
_RHO = Number(low=1e-6, high=MAX_RHO)
# the slots of a replayed trace before the episode's window whose mean load sla="mean" declares (model.py)
_HISTORY = Number(low=1, integer=True, none=True)

#: The ``scenario_kwargs`` each built-in scenario accepts (its generator's keywords, ``docs/envs/ClusterSLA-v1.md``).
SCENARIO_DOMAINS: dict[str, dict[str, Domain]] = {
    "paper_synthetic": {
        "shape": _SHAPE,
        "p23_pairs": Given("two (burst, stream) pairs of distinct users in 1..3, each pair with β_b + β_s > 0"),
    },
    "example_1_1": {},
    "sec_3_4": {
        "t0": Number(low=0, integer=True, none=True),
        "eta": Number(low=0.0, high=1.0, low_open=True),
        "eps": Number(low=0.0, high=1.0, low_open=True),
    },
    "gamma_iid": {"shape": _SHAPE, "rho": _RHO},
    "trace": {
        "path": Given("a .npy, .npz or .csv file of non-negative loads, N×T or T×N"),
        "start": Number(low=0, integer=True),
        "scale": Choice(("rho", "none")),
        "rho": _RHO,
        "history": _HISTORY,
    },
    "trace_standin": {
        "rho": _RHO,
        "sigma": Number(low=0.0, high=5.0),  # exp(σZ − σ²/2): beyond 5 every load underflows to 0
        "amplitude": Number(low=0.0, high=1.0),  # 1 + a sin(·) must stay non-negative
        "ar_coef": Number(low=-1.0, high=1.0, low_open=True, high_open=True),  # a stationary AR(1)
        "day": Number(low=1.0, high=1e12),  # 2π(t + φ) with φ ~ U[0, day) overflowed to inf at day = 3e307
    },
    # the replay span read from trace_dir, cut into history + horizon slots
    ALIBABA: {"scale": Choice(("rho", "none")), "rho": _RHO, "history": _HISTORY},
    AZURE: {"scale": Choice(("rho", "none")), "rho": _RHO, "history": _HISTORY},
}
# The scenarios that replay a trace from the folder trace_dir, with what to pass
TRACE_DIR_SCENARIOS = {ALIBABA: alibaba_gpu.HOW_TO_PASS, AZURE: azure_llm.HOW_TO_PASS}
SCENARIO_JOINT = (
    "`sec_3_4`: user 3 starts at `t0` ≤ horizon, or at ⌈1/(η ε)⌉ ≤ horizon (η ε ≥ 1/horizon); `paper_synthetic`: "
    "β_b + β_s > 0 for the (burst, stream) pair of each of periods 0-2; `trace`: the window [start, start + "
    "horizon) lies in the file, its total load is finite, and positive with `scale='rho'`; with `sla='mean'`, the "
    "history window [start − history, start) (`history` defaults to `start`) lies in the file and has load; "
    f"`{AZURE}`: an even `n_users` (each of the two services split into `n_users / 2` size classes)"
)


@dataclass(frozen=True)
class SLAConfig:
    """Keyword arguments of ``ClusterSLA-v1`` (defaults of the ``default`` preset).

    Domains: ``DOMAINS`` (one per keyword, ``SCENARIO_DOMAINS`` per ``scenario_kwargs`` entry); joint
    constraints: ``JOINT``.
    """

    JOINT: ClassVar[str] = (
        "`sla` has `n_users` entries and a positive sum, and is `'mean'` only with a scenario with public mean shares "
        "(a replayed trace's history window, the stand-in's tenant weights); the 3-user "
        "scenarios (`paper_synthetic`, `example_1_1`, `sec_3_4`) need `n_users=3`, `paper_synthetic` a horizon "
        f"divisible by 6 and `example_1_1` by 3; `n_users` × `horizon` ≤ {MAX_LOAD_CELLS:.0e}; " + SCENARIO_JOINT
    )

    DOMAINS: ClassVar[dict[str, Domain]] = {
        "n_users": Number(low=2, integer=True, size=True),
        # shares above 1 are over-commitment (normalised by max(1, Σβ), A26); 10⁶ keeps Σβ far from overflow
        "sla": AnyOf((Choice(("mean",)), Sequence(Number(low=0.0, high=1e6), length="n_users"))),
        "horizon": Number(low=1, integer=True, size=True),
        "scenario": AnyOf((Choice(SCENARIOS), Given("a callable (rng, N, T, sla, **kwargs) -> loads", callable=True))),
        "scenario_kwargs": Keywords("scenario", SCENARIO_DOMAINS),
        "action_mode": Choice(ACTION_MODES),
        "observation_mode": Choice(OBSERVATION_MODES),
        "observation_format": Choice(OBSERVATION_FORMATS),
        "include_time": FLAG,
        "reward_mode": AnyOf((Choice(REWARD_MODES), Given("a callable f(info) -> float", callable=True))),
        "reward_kappa": Number(low=0.0, high=MAX_KAPPA),
        "sla_tol": Number(low=0.0),
        "eps_ref": Number(low=0.0, high=0.5, low_open=True, high_open=True),
        # a floating-point tolerance: a queue at or below it is emptied, so a large value would discard work
        "empty_tol": Number(low=0.0, high=MAX_EMPTY_TOL),
        "info_level": Choice(INFO_LEVELS),
        "trace_dir": Given(
            f"None, or with scenario={ALIBABA!r} or {AZURE!r} the folder of the Alibaba GPU 2023 or the Azure LLM "
            "inference 2023 trace's CSVs"
        ),
    }

    n_users: int = 3
    sla: tuple[float, ...] | str = (0.2, 0.3, 0.5)
    horizon: int = 6000
    scenario: str | Callable = "paper_synthetic"
    scenario_kwargs: dict[str, Any] = field(default_factory=dict)
    action_mode: str = "normalize"
    observation_mode: str = "binary"
    observation_format: str = "flat"
    include_time: bool = False
    reward_mode: str | Callable = "work_sla"
    reward_kappa: float = 1.0
    sla_tol: float = 1.0
    eps_ref: float = 0.02
    empty_tol: float = 1e-9
    info_level: str = "full"
    trace_dir: Any = None  # the folder of the trace CSVs (scenario="alibaba_gpu_2023" or "azure_llm_2023")

    def __post_init__(self) -> None:
        check_domains(self, self.DOMAINS)
        if self.sla != "mean":
            object.__setattr__(self, "sla", tuple(float(b) for b in self.sla))
            if sum(self.sla) <= 0:
                raise ValueError(f"sla={self.sla!r} must have a positive sum")
        if self.n_users * self.horizon > MAX_LOAD_CELLS:
            raise ValueError(
                f"n_users × horizon = {self.n_users} × {self.horizon} exceeds {MAX_LOAD_CELLS:.0e} load entries "
                "(the episode's load matrix); lower n_users or horizon"
            )
        check_trace_dir(self.scenario, self.trace_dir)
        if not callable(self.scenario):
            check_scenario(self.scenario, self.scenario_kwargs, self.n_users, self.horizon, self.sla)


def check_trace_dir(scenario: str | Callable, trace_dir: Any) -> None:
    """``trace_dir`` is required by the scenarios of ``TRACE_DIR_SCENARIOS`` and refused by every other scenario
    (its folder's own checks come when the trace is read)."""
    replays = not callable(scenario) and scenario in TRACE_DIR_SCENARIOS
    if replays != (trace_dir is not None):
        if trace_dir is None:
            raise ValueError(f"scenario {scenario!r} (its presets) needs its data: {TRACE_DIR_SCENARIOS[scenario]}")
        raise ValueError(f"trace_dir is only read by scenario={' or '.join(map(repr, TRACE_DIR_SCENARIOS))}")


def check_scenario(scenario: str, kwargs: dict, n_users: int, horizon: int, sla: tuple[float, ...] | str) -> None:
    """Check a built-in scenario against the env's size and ``kwargs`` (already checked against their domains)
    against ``SCENARIO_JOINT``; the trace file's own checks come when it is read."""
    if sla == "mean" and scenario not in SLA_FROM_LOADS:
        raise ValueError(
            f"sla='mean' needs a scenario with public mean shares {list(SLA_FROM_LOADS)}, got scenario={scenario!r}"
        )
    if (
        sla == "mean"
        and scenario == "trace"
        and not 1 <= default_history(scenario, kwargs, horizon) <= kwargs.get("start", 0)
    ):
        raise ValueError(
            f"sla='mean' with scenario='trace' takes the shares from the history window [start − history, start) "
            f"before the replayed one; scenario_kwargs start={kwargs.get('start', 0)}, "
            f"history={kwargs.get('history')} do not fit: allowed 1 ≤ history ≤ start (history defaults to start)"
        )
    if scenario in THREE_USER_SCENARIOS and n_users != 3:
        raise ValueError(f"n_users={n_users} is not allowed with scenario={scenario!r}, which has exactly 3 users")
    if horizon % PERIODS.get(scenario, 1):
        raise ValueError(
            f"horizon={horizon} must be divisible by {PERIODS[scenario]} for scenario={scenario!r} (its periods)"
        )
    if scenario == "sec_3_4":
        t0, eta, eps = kwargs.get("t0"), kwargs.get("eta", 1 / 3), kwargs.get("eps", 0.1)
        if t0 is not None and t0 > horizon:
            raise ValueError(f"scenario_kwargs['t0']={t0} is out of range; allowed: [0, horizon={horizon}]")
        if t0 is None and eta * eps * horizon < 1:  # t0 = ⌈1/(η ε)⌉ would lie beyond the horizon (or overflow)
            raise ValueError(
                f"scenario_kwargs eta={eta!r}, eps={eps!r} put user 3's start ⌈1/(η ε)⌉ beyond horizon={horizon}; "
                "allowed: η ε ≥ 1/horizon (or give t0)"
            )
    if scenario == "paper_synthetic":
        _check_pairs(kwargs.get("p23_pairs", ((1, 2), (1, 3))), sla)
    if scenario == AZURE and n_users % 2:
        raise ValueError(
            f"n_users={n_users} is not allowed with scenario={AZURE!r}: each of its two services (code, conversation) "
            "is split into n_users / 2 size classes, so n_users must be even"
        )
    if scenario == "trace" and "path" not in kwargs:
        raise ValueError("scenario='trace' needs scenario_kwargs['path'] (a .npy, .npz or .csv file)")


def _check_pairs(pairs: Any, sla: tuple[float, ...]) -> None:
    name = "scenario_kwargs['p23_pairs']"
    allowed = "two (burst, stream) pairs of distinct users in 1..3"
    try:
        pairs = tuple(tuple(pair) for pair in pairs)
    except TypeError:
        raise ValueError(f"{name}={pairs!r} is not allowed; allowed: {allowed}") from None
    users = (1, 2, 3)
    if len(pairs) != 2 or any(len(p) != 2 or p[0] == p[1] or not set(p) <= set(users) for p in pairs):
        raise ValueError(f"{name}={pairs!r} is not allowed; allowed: {allowed}")
    for b, s in ((2, 3), *pairs):  # each SLA-proportional period splits its load by β_b / (β_b + β_s)
        if sla[b - 1] + sla[s - 1] <= 0:
            raise ValueError(
                f"sla={sla!r} gives users {b} and {s}, loaded together in scenario 'paper_synthetic', no share "
                "(β_b + β_s = 0); allowed: a positive share for at least one user of each pair"
            )


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"horizon": 3_000_000},  # Sec. 4.1 at the paper's scale
    # spec A16's reading of the unspecified P2/P3 users, the one closest to the paper's Static numbers
    "paper_a16": {"horizon": 3_000_000, "scenario_kwargs": {"p23_pairs": ((1, 2), (1, 2))}},
    "default": {},
    "paper_real_standin": {
        "n_users": 6,
        "sla": "mean",
        "horizon": 14_628,
        "scenario": "trace_standin",
        "eps_ref": 0.01,
    },
    "example_1_1": {"sla": (0.5, 0.2, 0.3), "horizon": 3000, "scenario": "example_1_1"},
    # production scale: 128 tenants of equal share, i.i.d. Gamma loads at utilization 0.99 (the papers had 3-6)
    "production": {"n_users": 128, "sla": (1 / 128,) * 128, "scenario": "gamma_iid", "scenario_kwargs": {"rho": 0.99}},
    "proportionality_3_4": {"sla": (0.5, 0.3, 0.2), "horizon": 60_000, "scenario": "sec_3_4", "eps_ref": 0.1},
    # tenants = the trace's 4 QoS classes, load = their GPU demand (cluster_envs.sla.model.alibaba_gpu_loads)
    ALIBABA: {"n_users": 4, "sla": "mean", "horizon": 10_000, "scenario": ALIBABA, "eps_ref": 0.01},
    # tenants = the trace's 2 services, load = tokens arriving per 0.5-s slot (cluster_envs.sla.model.azure_llm_loads)
    AZURE: {"n_users": 2, "sla": "mean", "horizon": 3_500, "scenario": AZURE, "eps_ref": 0.01},
    # 6 tenants like the paper's Sec. 4.2: each service's requests split into terciles of their tokens
    f"{AZURE}_sizes": {"n_users": 6, "sla": "mean", "horizon": 3_500, "scenario": AZURE, "eps_ref": 0.01},
}
TRACE_PRESETS = (ALIBABA, AZURE, f"{AZURE}_sizes")  # presets that read user data (trace_dir): not built without it
# presets an order of magnitude past the papers: timed by `cluster-envs bench --scaling-only` and built by
# tests/test_production_presets.py, not played by every agent in the tests
PRODUCTION_PRESETS = ("production",)
