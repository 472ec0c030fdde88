"""Keyword arguments, validation and presets shared by ``ClusterMultiServer-v0`` and ``ClusterGang-v0``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from cluster_envs.common.alibaba_gpu import HOW_TO_PASS, RESOURCES
from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.domains import FLAG, AnyOf, Choice, Domain, Given, Number, Sequence, check_domains
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.common.flat import OBSERVATION_FORMATS
from cluster_envs.multiserver.entity import ENTITY, MAX_DEVICE_TYPES, MAX_SIZES
from cluster_envs.multiserver.gang import GangParams
from cluster_envs.multiserver.model import GeneratorParams

# The vocabularies of the modes (the one source; the configs' DOMAINS validate them).
ACTION_MODES = ("binary", "scores")
# the observation's content: the instance's own arrays (spaces sized by its edges), or the instance-independent
# padded edge rows (cluster_envs.multiserver.entity); its form is observation_format
OBSERVATION_MODES = ("instance", ENTITY)
NORMALIZATIONS = ("affine_clip", "clip", "none")  # how a utility maps to [0, 1] (spec §3.3)
CAPACITY_MODES = ("alpha_sum", "per_server_sum")
MIN_TASKS = ("all", "half")  # ClusterGang-v0's all-or-nothing threshold m_l
INVALID_ACTIONS = ("repair", "raise")
REPAIR_ORDERS = ("index", "random")
UTILITY_DISTS = ("normal",)
WORKLOADS = ("synthetic", ALIBABA)  # where ports, servers, requests and arrivals come from


MAX_MAGNITUDE = 1e6  # utilities, costs, penalties, requests and capacities: far from float64 and int64 overflow
MIN_SCALE = 1e-6  # the smallest μ and σ/μ: below, σ = (σ/μ)·μ can underflow to 0 and the normalisation divides by it
MAX_STATE = 10_000_000  # entries of the (device types × ports × servers) request and edge arrays


@dataclass(frozen=True)
class EnvOptions:
    """Keyword arguments that both envs add to their instance generator's parameters."""

    horizon: int = 2000
    utility_dist: str = "normal"
    instance_seed: int = 0
    action_mode: str = "binary"
    invalid_action: str = "repair"
    binary_repair_order: str = "index"
    infeasible_penalty: float = 0.0
    compute_regret: bool = True
    info_level: str = "full"
    workload: str = "synthetic"
    trace_dir: Any = None  # the folder of the trace CSVs (workload="alibaba_gpu_2023")
    observation_mode: str = "instance"
    observation_format: str = "dict"
    # observation_mode="entity" pads to these (cluster_envs.multiserver.entity); ClusterGang-v0 has its own max_edges
    max_edges: int = MAX_SIZES["ClusterMultiServer-v0"]["max_edges"]
    max_ports: int = MAX_SIZES["ClusterMultiServer-v0"]["max_ports"]
    max_servers: int = MAX_SIZES["ClusterMultiServer-v0"]["max_servers"]
    max_device_types: int = MAX_DEVICE_TYPES


_COUNT = Number(low=1, high=MAX_MAGNITUDE, integer=True)
_SIZE = Number(low=1, integer=True, size=True)
_PROB = Number(low=0.0, high=1.0)
#: The domains shared by ClusterMultiServer-v0 and ClusterGang-v0 (generator parameters and env options).
COMMON_DOMAINS: dict[str, Domain] = {
    "n_ports": _SIZE,
    "n_servers": _SIZE,
    "n_device_types": _SIZE,
    "edge_prob": Number(low=0.0, high=1.0, low_open=True),
    "arrival_prob": AnyOf((_PROB, Sequence(_PROB, length="n_ports"))),
    "req_low": _COUNT,
    "req_high": _COUNT,
    "c_low": _COUNT,
    "c_high": _COUNT,
    "mu_low": Number(low=MIN_SCALE, high=MAX_MAGNITUDE),
    "mu_high": Number(low=MIN_SCALE, high=MAX_MAGNITUDE),
    "sigma_ratio": Number(low=MIN_SCALE, high=1e3),
    "cost_mean": Number(low=-MAX_MAGNITUDE, high=MAX_MAGNITUDE),
    "cost_std": Number(low=0.0, high=MAX_MAGNITUDE),
    "normalization": Choice(NORMALIZATIONS),
    "horizon": _SIZE,
    "utility_dist": Choice(UTILITY_DISTS),
    "instance_seed": Number(low=0, integer=True),
    "action_mode": Choice(ACTION_MODES),
    "observation_mode": Choice(OBSERVATION_MODES),
    "observation_format": Choice(OBSERVATION_FORMATS),
    "max_edges": _SIZE,
    "max_ports": _SIZE,
    "max_servers": _SIZE,
    "max_device_types": Number(low=1, high=MAX_DEVICE_TYPES, integer=True),
    "invalid_action": Choice(INVALID_ACTIONS),
    "binary_repair_order": Choice(REPAIR_ORDERS),
    "infeasible_penalty": Number(low=0.0, high=MAX_MAGNITUDE),
    "compute_regret": FLAG,
    "info_level": Choice(INFO_LEVELS),
    "workload": Choice(WORKLOADS),
    "trace_dir": Given(f"None, or with workload={ALIBABA!r} the folder of the Alibaba GPU 2023 trace's CSVs"),
}
COMMON_JOINT = (
    f"`trace_dir` is given exactly when `workload` is {ALIBABA!r} (then `n_device_types` = {len(RESOURCES)}); "
    "`req_low` ≤ `req_high`, `c_low` ≤ `c_high`, `mu_low` ≤ `mu_high`; `arrival_prob` (a tuple) has `n_ports` "
    f"entries; `n_device_types` × `n_ports` × `n_servers` ≤ {MAX_STATE:.0e}; the `max_*` keywords are read only with "
    "`observation_mode='entity'` (and the instance must fit them), whose rows are one Box "
    "(`observation_format='flat'`)"
)


@dataclass(frozen=True)
class MultiServerConfig(EnvOptions, GeneratorParams):
    """Keyword arguments of ``ClusterMultiServer-v0``: the generator's (defaults: the ``default`` preset, the paper's
    sizes, spec §3.2), the common env options, and these.

    Domains: ``DOMAINS`` (one per keyword); joint constraints: ``JOINT``.
    """

    JOINT: ClassVar[str] = COMMON_JOINT + "; `capacity` (a tuple) has `n_device_types` entries"

    DOMAINS: ClassVar[dict[str, Domain]] = {
        **COMMON_DOMAINS,
        "capacity_mode": Choice(CAPACITY_MODES),
        "capacity_beta": Number(low=0.0, high=MAX_MAGNITUDE, low_open=True),
        "capacity": AnyOf(
            (Number(low=1, high=MAX_MAGNITUDE, integer=True, none=True), Sequence(_COUNT, length="n_device_types"))
        ),  # fmt: skip
        "allow_unusable_channels": FLAG,
        "obs_static": FLAG,
        "instance": Given("None, or an explicit instance that bypasses generation (tests)"),
    }

    allow_unusable_channels: bool = False
    obs_static: bool = False
    instance: Any = None  # an explicit instance bypasses generation (tests)

    def __post_init__(self) -> None:
        check_domains(self, self.DOMAINS)
        check_joint(self)
        if self.capacity is not None:
            cap = tuple(self.capacity) if np.ndim(self.capacity) else (self.capacity,)
            if len(cap) != self.n_device_types:
                raise ValueError(
                    f"capacity must have n_device_types={self.n_device_types} entries, got {self.capacity!r}"
                )
            object.__setattr__(self, "capacity", cap)

    def generator_params(self) -> GeneratorParams:
        names = {f.name for f in dataclasses.fields(GeneratorParams)}
        return GeneratorParams(**{n: getattr(self, n) for n in names})


def check_joint(cfg) -> None:
    """``COMMON_JOINT``: the checks across keywords shared by ClusterMultiServer-v0 and ClusterGang-v0."""
    for low, high in (("req_low", "req_high"), ("c_low", "c_high"), ("mu_low", "mu_high")):
        if getattr(cfg, high) < getattr(cfg, low):
            raise ValueError(f"{low}={getattr(cfg, low)} > {high}={getattr(cfg, high)}; need {low} ≤ {high}")
    state = cfg.n_device_types * cfg.n_ports * cfg.n_servers
    if state > MAX_STATE:
        raise ValueError(
            f"n_device_types × n_ports × n_servers = {state} exceeds {MAX_STATE:.0e} request/edge entries; lower them"
        )
    check_workload(cfg)
    check_entity_sizes(cfg)
    if isinstance(cfg.arrival_prob, tuple):
        object.__setattr__(cfg, "arrival_prob", tuple(float(p) for p in cfg.arrival_prob))


def check_entity_sizes(cfg) -> None:
    """The ``max_*`` keywords size ``observation_mode="entity"`` and mean nothing in another mode; the entity rows
    are one Box."""
    if cfg.observation_mode == ENTITY:
        if cfg.observation_format != "flat":
            raise ValueError(f"observation_mode={ENTITY!r} gives its padded edge rows as one Box; pass observation_"
                             f"format='flat', got observation_format={cfg.observation_format!r}")  # fmt: skip
        return
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    for name in ("max_edges", "max_ports", "max_servers", "max_device_types"):
        if getattr(cfg, name) != defaults[name]:
            raise ValueError(f"{name} is only read with observation_mode={ENTITY!r}, got observation_mode="
                             f"{cfg.observation_mode!r}")  # fmt: skip


def check_workload(cfg) -> None:
    """``trace_dir`` is required by the trace workload and meaningless without it (the files are read at build)."""
    if cfg.workload != ALIBABA:
        if cfg.trace_dir is not None:
            raise ValueError(f"trace_dir is only read by preset {ALIBABA!r} (workload={ALIBABA!r})")
        return
    if cfg.trace_dir is None:
        raise ValueError(f"preset {ALIBABA!r} needs its data: {HOW_TO_PASS}")
    if cfg.n_device_types != len(RESOURCES):
        raise ValueError(f"n_device_types={cfg.n_device_types} is not allowed with workload={ALIBABA!r}, whose "
                         f"device types are {list(RESOURCES)}")  # fmt: skip


PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "small": {"n_ports": 4, "n_servers": 10, "edge_prob": 0.3},
    "tiny": {"n_ports": 2, "n_servers": 2, "edge_prob": 1.0, "n_device_types": 1},
    ALIBABA: {"workload": ALIBABA},  # the paper's sizes on the trace (cluster_envs.multiserver.alibaba)
    # the trace where capacity binds: time compressed 5x (400 slots of 2 h, not 2,000 of 24 min) and the
    # capacity rule's β a fifth of the default's; chosen by measurement (binding_share: 58 % of the slots)
    f"{ALIBABA}_binding": {"workload": ALIBABA, "horizon": 400, "capacity_beta": 0.1},
    # production scale: 200 ports on the Alibaba trace's 1,523 servers, ≈ 6 channels per port (|E| ≈ 1,200); the
    # regret oracle's knapsack DP would need ~256 GiB per slot there, so it is off (compute_regret=False)
    "production": {"n_ports": 200, "n_servers": 1523, "edge_prob": 0.004, "compute_regret": False},
}


@dataclass(frozen=True)
class GangConfig(EnvOptions, GangParams):
    """Keyword arguments of ``ClusterGang-v0``: the gang generator's (defaults: the ``default`` preset, spec
    §3.12) and the common env options.

    Domains: ``DOMAINS`` (one per keyword); joint constraints: ``JOINT``.
    """

    JOINT: ClassVar[str] = (
        COMMON_JOINT + f"; `tasks_low` ≤ `tasks_high`; `n_device_types` × `n_ports` × `tasks_high` × `n_servers` ≤ "
        f"{MAX_STATE:.0e}"
    )

    DOMAINS: ClassVar[dict[str, Domain]] = {
        **COMMON_DOMAINS,
        "tasks_low": Number(low=1, integer=True, size=True),
        "tasks_high": Number(low=1, integer=True, size=True),
        "min_tasks": Choice(MIN_TASKS),
        "capacity_scale": Number(low=0.0, high=MAX_MAGNITUDE, low_open=True),
    }

    max_edges: int = MAX_SIZES["ClusterGang-v0"]["max_edges"]  # arms

    def __post_init__(self) -> None:
        check_domains(self, self.DOMAINS)
        check_joint(self)
        if self.tasks_high < self.tasks_low:
            raise ValueError(f"tasks_low={self.tasks_low} > tasks_high={self.tasks_high}")
        arms = self.n_device_types * self.n_ports * self.tasks_high * self.n_servers
        if arms > MAX_STATE:
            raise ValueError(
                f"n_device_types × n_ports × tasks_high × n_servers = {arms} exceeds {MAX_STATE:.0e} arm entries; "
                "lower them"
            )

    def gang_params(self) -> GangParams:
        names = {f.name for f in dataclasses.fields(GangParams)}
        return GangParams(**{n: getattr(self, n) for n in names})


GANG_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "tiny": {"n_ports": 2, "n_servers": 3, "edge_prob": 1.0, "n_device_types": 1, "tasks_high": 2},
    "paper": {"n_ports": 8, "n_servers": 40, "edge_prob": 0.1},
    ALIBABA: {"workload": ALIBABA},  # the small preset's sizes on the trace (cluster_envs.multiserver.alibaba)
    # production scale: 100 ports on 1,523 servers, ≈ 3 servers per port; the oracle's per-slot MILP is off (too slow
    # to solve every slot at this size)
    "production": {"n_ports": 100, "n_servers": 1523, "edge_prob": 0.002, "compute_regret": False},
    # the trace where capacity binds: time compressed 10x (200 slots of 4 h), every hosting node adjacent and the
    # nodes' capacities a fifth (the env's page says how it was chosen; its share: `reproduce traces`)
    f"{ALIBABA}_binding": {"workload": ALIBABA, "horizon": 200, "edge_prob": 1.0, "capacity_scale": 0.2},
}
# presets that read user data (trace_dir): not built without it (ClusterMultiServer-v0's, then ClusterGang-v0's)
TRACE_PRESETS = (ALIBABA, f"{ALIBABA}_binding")
# presets an order of magnitude past the papers, beyond the oracle's and ESDP's reach: timed by `cluster-envs bench
# --scaling-only` and built by tests/test_production_presets.py, not played by every agent in the tests
PRODUCTION_PRESETS = ("production",)
