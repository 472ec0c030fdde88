"""Keyword arguments, validation and presets shared by ``ClusterMultiServer-v0`` and ``ClusterGang-v0``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.common.flat import OBSERVATION_MODES
from cluster_envs.multiserver.gang import MIN_TASKS, GangParams
from cluster_envs.multiserver.model import CAPACITY_MODES, NORMALIZATIONS, GeneratorParams

ACTION_MODES = ("binary", "scores")
INVALID_ACTIONS = ("repair", "raise")
REPAIR_ORDERS = ("index", "random")
UTILITY_DISTS = ("normal",)


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
    observation_mode: str = "dict"


@dataclass(frozen=True)
class MultiServerConfig(EnvOptions, GeneratorParams):
    """Keyword arguments of ``ClusterMultiServer-v0``: the generator's (defaults: the ``paper`` preset, spec
    §3.2), the common env options, and these."""

    allow_unusable_channels: bool = False
    obs_static: bool = False
    instance: Any = None  # an explicit instance bypasses generation (tests)

    def __post_init__(self) -> None:
        validate_common(self)
        check_number("capacity_beta", self.capacity_beta, low=0.0, low_open=True)
        check_choice("capacity_mode", self.capacity_mode, CAPACITY_MODES)
        for name in ("allow_unusable_channels", "obs_static"):
            check_choice(name, getattr(self, name), (False, True))
        if self.capacity is not None:
            cap = tuple(self.capacity) if np.ndim(self.capacity) else (self.capacity,)
            if len(cap) != self.n_device_types:
                raise ValueError(
                    f"capacity must have n_device_types={self.n_device_types} entries, got {self.capacity!r}"
                )
            for k, ck in enumerate(cap):
                check_number(f"capacity[{k}]", ck, low=1, integer=True)
            object.__setattr__(self, "capacity", cap)

    def generator_params(self) -> GeneratorParams:
        names = {f.name for f in dataclasses.fields(GeneratorParams)}
        return GeneratorParams(**{n: getattr(self, n) for n in names})


def validate_common(cfg) -> None:
    """Checks shared by ClusterMultiServer-v0 and ClusterGang-v0 (messages name the argument)."""
    for name in ("n_ports", "n_servers", "n_device_types", "horizon", "req_low", "c_low"):
        check_number(name, getattr(cfg, name), low=1, integer=True)
    check_number("instance_seed", cfg.instance_seed, low=0, integer=True)
    check_number("edge_prob", cfg.edge_prob, low=0.0, high=1.0, low_open=True)
    rho = np.atleast_1d(np.asarray(cfg.arrival_prob, dtype=object))
    if rho.ndim != 1 or rho.size not in (1, cfg.n_ports):
        raise ValueError(
            f"arrival_prob must be a scalar or have n_ports={cfg.n_ports} entries, got {cfg.arrival_prob!r}"
        )
    for i, p in enumerate(rho):  # check_number first: a string must not reach a float conversion
        check_number(f"arrival_prob[{i}]" if rho.size > 1 else "arrival_prob", p, low=0.0, high=1.0)
    check_number("req_high", cfg.req_high, low=1, integer=True)  # before the comparison, which needs numbers
    if cfg.req_high < cfg.req_low:
        raise ValueError(f"req_low={cfg.req_low} > req_high={cfg.req_high}; need 1 ≤ req_low ≤ req_high")
    check_number("c_high", cfg.c_high, low=1, integer=True)
    if cfg.c_high < cfg.c_low:
        raise ValueError(f"c_low={cfg.c_low} > c_high={cfg.c_high}; need 1 ≤ c_low ≤ c_high")
    check_number("mu_low", cfg.mu_low, low=0.0, low_open=True)
    check_number("mu_high", cfg.mu_high, low=cfg.mu_low)
    check_number("sigma_ratio", cfg.sigma_ratio, low=0.0, low_open=True)
    check_number("cost_mean", cfg.cost_mean)
    check_number("cost_std", cfg.cost_std, low=0.0)
    check_number("infeasible_penalty", cfg.infeasible_penalty, low=0.0)
    check_choice("utility_dist", cfg.utility_dist, UTILITY_DISTS)
    check_choice("normalization", cfg.normalization, NORMALIZATIONS)
    check_choice("action_mode", cfg.action_mode, ACTION_MODES)
    check_choice("invalid_action", cfg.invalid_action, INVALID_ACTIONS)
    check_choice("binary_repair_order", cfg.binary_repair_order, REPAIR_ORDERS)
    check_choice("info_level", cfg.info_level, INFO_LEVELS)
    check_choice("observation_mode", cfg.observation_mode, OBSERVATION_MODES)
    check_choice("compute_regret", cfg.compute_regret, (False, True))
    if isinstance(cfg.arrival_prob, list | np.ndarray):
        object.__setattr__(cfg, "arrival_prob", tuple(float(p) for p in cfg.arrival_prob))


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"n_ports": 4, "n_servers": 10, "edge_prob": 0.3},
    "tiny": {"n_ports": 2, "n_servers": 2, "edge_prob": 1.0, "n_device_types": 1},
}


@dataclass(frozen=True)
class GangConfig(EnvOptions, GangParams):
    """Keyword arguments of ``ClusterGang-v0``: the gang generator's (defaults: the ``small`` preset, spec
    §3.12) and the common env options."""

    def __post_init__(self) -> None:
        validate_common(self)
        check_number("tasks_low", self.tasks_low, low=1, integer=True)
        check_number("tasks_high", self.tasks_high, low=1, integer=True)
        if self.tasks_high < self.tasks_low:
            raise ValueError(f"tasks_low={self.tasks_low} > tasks_high={self.tasks_high}")
        check_choice("min_tasks", self.min_tasks, MIN_TASKS)

    def gang_params(self) -> GangParams:
        names = {f.name for f in dataclasses.fields(GangParams)}
        return GangParams(**{n: getattr(self, n) for n in names})


GANG_PRESETS: dict[str, dict[str, Any]] = {
    "small": {},
    "tiny": {"n_ports": 2, "n_servers": 3, "edge_prob": 1.0, "n_device_types": 1, "tasks_high": 2},
    "paper": {"n_ports": 8, "n_servers": 40, "edge_prob": 0.1},
}
