"""Keyword arguments and presets of ``ClusterSLA-v0`` (spec ``docs/specs/sla_mwu.md`` §3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.env import INFO_LEVELS
from cluster_envs.sla.kernel import ACTION_MODES, REWARD_MODES

OBSERVATION_MODES = ("binary", "binary+sla", "full")
OBS_FORMATS = ("box", "dict")
MAX_EMPTY_TOL = 1e-6


@dataclass(frozen=True)
class SLAConfig:
    """Keyword arguments of ``ClusterSLA-v0`` (defaults of the ``paper_synthetic_small`` preset)."""

    RENAMED: ClassVar[dict[str, str]] = {"obs_mode": "observation_mode"}  # deprecated in 0.2 (CHANGELOG)

    n_users: int = 3
    sla: tuple[float, ...] | str = (0.2, 0.3, 0.5)
    horizon: int = 6000
    scenario: str | Callable = "paper_synthetic"
    scenario_kwargs: dict[str, Any] = field(default_factory=dict)
    action_mode: str = "normalize"
    observation_mode: str = "binary"
    obs_format: str = "box"
    include_time: bool = False
    reward_mode: str | Callable = "work_sla"
    reward_kappa: float = 1.0
    sla_tol: float = 1.0
    eps_ref: float = 0.02
    empty_tol: float = 1e-9
    info_level: str = "full"
    trace_dir: Any = None  # the folder of the trace CSVs (scenario="alibaba_gpu_2023")

    def __post_init__(self) -> None:
        check_number("n_users", self.n_users, low=2, integer=True)
        check_number("horizon", self.horizon, low=1, integer=True)
        if isinstance(self.sla, str):
            check_choice("sla", self.sla, ("mean",))
        else:
            if not isinstance(self.sla, (tuple, list, np.ndarray)):
                raise ValueError(
                    f"sla must be a sequence of {self.n_users} non-negative shares or 'mean', got {self.sla!r}"
                )
            sla = tuple(np.ravel(self.sla))
            if len(sla) != self.n_users:
                raise ValueError(f"sla has {len(sla)} entries but n_users={self.n_users}; give one SLA share per user")
            for i, b in enumerate(sla):
                check_number(f"sla[{i}]", b, low=0.0)
            if sum(sla) <= 0:
                raise ValueError("sla must have a positive sum")
            object.__setattr__(self, "sla", tuple(float(b) for b in sla))
        check_choice("action_mode", self.action_mode, ACTION_MODES)
        check_choice("observation_mode", self.observation_mode, OBSERVATION_MODES)
        check_choice("obs_format", self.obs_format, OBS_FORMATS)
        check_choice("include_time", self.include_time, (False, True))
        if not callable(self.reward_mode):
            check_choice("reward_mode", self.reward_mode, REWARD_MODES)
        check_number("reward_kappa", self.reward_kappa, low=0.0)
        check_number("sla_tol", self.sla_tol, low=0.0)
        check_number("eps_ref", self.eps_ref, low=0.0, high=0.5, low_open=True, high_open=True)
        # A floating-point tolerance: a queue at or below it is emptied, so a large value would discard work.
        check_number("empty_tol", self.empty_tol, low=0.0, high=MAX_EMPTY_TOL)
        check_choice("info_level", self.info_level, INFO_LEVELS)
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict, got {type(self.scenario_kwargs).__name__}")


PRESETS: dict[str, dict[str, Any]] = {
    "paper_synthetic": {"horizon": 3_000_000},
    "paper_synthetic_small": {},
    "paper_real_standin": {
        "n_users": 6,
        "sla": "mean",
        "horizon": 14_628,
        "scenario": "trace_standin",
        "eps_ref": 0.01,
    },
    "example_1_1": {"sla": (0.5, 0.2, 0.3), "horizon": 3000, "scenario": "example_1_1"},
    "proportionality_3_4": {"sla": (0.5, 0.3, 0.2), "horizon": 60_000, "scenario": "sec_3_4", "eps_ref": 0.1},
    # tenants = the trace's 4 QoS classes, load = their GPU demand (cluster_envs.sla.model.alibaba_gpu_loads)
    ALIBABA: {"n_users": 4, "sla": "mean", "horizon": 10_000, "scenario": ALIBABA, "eps_ref": 0.01},
}
TRACE_PRESETS = (ALIBABA,)  # presets that read user data (trace_dir): not built without it
