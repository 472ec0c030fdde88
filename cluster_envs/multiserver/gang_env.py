"""``ClusterGang-v0``: all-or-nothing gang scheduling of multi-task jobs (paper 001 §3.4, spec §3.12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.guards import Estimate
from cluster_envs.multiserver.alibaba import trace_gang_instance
from cluster_envs.multiserver.config import GANG_PRESETS, GangConfig
from cluster_envs.multiserver.env import ClusterMultiServerEnv
from cluster_envs.multiserver.gang import (
    GangInstance,
    GangOracle,
    GangStructure,
    gang_is_feasible,
    gang_repair,
    gang_violation,
    gang_workspace,
    generate_gang_instance,
    milp_estimate,
)


@dataclass(frozen=True, eq=False)
class GangProblem(GangStructure):
    """Static public data: the gang structure (arms = action index), the known costs and the horizon."""

    cost: np.ndarray = None  # type: ignore[assignment]
    horizon: int = 0
    normalization: str = "affine_clip"


class ClusterGangEnv(ClusterMultiServerEnv):
    """Gang scheduling: a job of type ``l`` has tasks ``Q_l`` (|Q_l| ~ U{2..4}); it runs only if at least
    ``m_l`` of them are placed (``min_tasks="all"``: every task; ``"half"``: ⌈|Q_l|/2⌉), each task on one
    server of ``R_l``, within per-server capacities ``c_(k,r) ~ U{1,2}`` (task requests ``~ U{1,2}``).

    Rendering: as ``ClusterMultiServer-v0``, with arms for edges and the capacity use per server and device type.

    Paper: Zhao et al., "Learning to Schedule Multi-Server Jobs with Fluctuated Processing Speeds", Section
    3.4 (constraints only; utility, feedback, draw order and repair are ours, spec §3.12). Shares the
    utility model, streams, spaces and info of ``ClusterMultiServer-v0``, with arms in place of edges.

    **Observation**: as ``ClusterMultiServer-v0``: ``arrivals``, ``edge_mask`` (per arm), ``time``,
    ``last_action``, ``last_utility`` (per arm).

    **Action**: MultiBinary(n_arms) (or ``"scores"`` Box). Repair in one pass: drop idle ports' bits; visit
    ports by their best requested arm (binary: lowest index or a random permutation; scores: highest
    score); place each requested task on its highest-priority requested server with room; roll the port
    back if fewer than ``m_l`` tasks were placed. ``invalid_action="raise"`` names the violated constraint
    (G1 single placement, G2 arrivals, G3 all-or-nothing, G4 per-server capacity). ``action_masks()``:
    value 1 only for arms of arrived ports whose task fits its server alone.

    **Reward**: ``Σ x Z̃`` over placed arms. **Episode end**: truncated after ``horizon`` slots.

    **info**: as ``ClusterMultiServer-v0``; ``capacity_used`` is the (K, |R|) server load; the oracle is a
    MILP (HiGHS) over the arrived ports, cached per arrival pattern; estimated at construction from its
    nonzeros and refused (``ValueError``) above the limits of :mod:`cluster_envs.common.guards`, as in
    ``ClusterMultiServer-v0``.

    **Presets**: ``default`` (|L| = 4, |R| = 10, edge_prob 0.3, K = 3; formerly ``small``), ``tiny`` (2 ports,
    3 servers, K = 1, two tasks per job), ``paper`` (the main env's graph: |L| = 8, |R| = 40, edge_prob 0.1),
    ``alibaba_gpu_2023`` (the ``default`` sizes on the Alibaba GPU 2023 trace; needs ``trace_dir``): the main env's
    trace workload (device types, ports, replayed arrivals, node sample, units), with each server's capacity
    its node's own (G4) and port ``l`` given ``clip(round(mean type-l pods per slot with one), tasks_low,
    tasks_high)`` tasks.

    **Batched**: ``gym.make_vec(id, B, vectorization_mode="vector_entry_point")`` (the compiled gang repair per
    copy, :class:`~cluster_envs.multiserver.vector_env.ClusterGangVectorEnv`).
    """

    env_id = "ClusterGang-v0"
    config_class = GangConfig
    presets = GANG_PRESETS

    def __init__(self, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(preset, render_mode, **overrides)
        self._workspace: tuple[np.ndarray, ...] | None = None  # the repair's scratch arrays, made on first use

    def _make_instance(self) -> GangInstance:
        config = self.config
        rng = np.random.default_rng(np.random.SeedSequence(config.instance_seed))
        if config.workload == ALIBABA:
            return trace_gang_instance(config.gang_params(), config.trace_dir, config.horizon, rng)
        return generate_gang_instance(config.gang_params(), rng)

    def _make_problem(self) -> GangProblem:
        inst = self.instance
        return GangProblem(
            inst.n_ports, inst.n_servers, inst.arms, inst.task_port, inst.min_tasks, inst.task_req,
            inst.server_cap, cost=inst.utility.cost, horizon=self.config.horizon,
            normalization=inst.utility.normalization,
        )  # fmt: skip

    oracle_solver = "MILP"
    oracle_remedy = "Use fewer arms (n_ports, n_servers, edge_prob, tasks_high) or pass compute_regret=False."

    def _oracle_estimate(self) -> Estimate:
        return milp_estimate(self.instance)

    def _make_oracle(self) -> GangOracle:
        return GangOracle(self.instance)

    @staticmethod
    def _fits_alone(inst: GangInstance) -> np.ndarray:
        return (inst.task_req[:, inst.arms[:, 1]] <= inst.server_cap[:, inst.arms[:, 2]]).all(axis=0)

    def violation(self, x: np.ndarray, arrivals: np.ndarray) -> str | None:
        return gang_violation(x, self.instance, arrivals)

    def _is_feasible(self, x: np.ndarray) -> bool:
        inst = self.instance
        return gang_is_feasible(x, self.simulator.edge_mask, inst.arms, inst.task_req, inst.server_cap,
                                inst.min_tasks)  # fmt: skip

    def _repair(self, requested: np.ndarray, priority: np.ndarray) -> tuple[np.ndarray, int, int]:
        if self._workspace is None:
            self._workspace = gang_workspace(self.instance)
        return gang_repair(requested, self.instance, self.simulator.edge_mask, priority, self._workspace)

    def _capacity_used(self, x: np.ndarray) -> np.ndarray:
        return self.instance.server_load(x)

    def _capacity(self) -> np.ndarray:
        return self.instance.server_cap
