"""``ClusterGang-v0``: all-or-nothing gang scheduling of multi-task jobs (paper 001 §3.4, spec §3.12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.guards import Estimate
from cluster_envs.multiserver.alibaba import trace_gang_instance
from cluster_envs.multiserver.config import GANG_PRESETS, GangConfig
from cluster_envs.multiserver.entity import EdgeStatics, capacity_share
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
    """Gang scheduling: a job runs only if enough of its tasks are placed, each on one server, within capacities.

    Paper: Zhao et al., "Learning to Schedule Multi-Server Jobs with Fluctuated Processing Speeds", Section
    3.4 (constraints only; utility, feedback, draw order and repair are ours, spec §3.12). Shares the
    utility model, streams, spaces and info of ``ClusterMultiServer-v0``, with arms in place of edges.

    ## Model

    A type-`l` job has tasks `q ∈ Q_l`, with `|Q_l| ~ U{2..4}`. An arm is a placement `(l, q, r)` with `r` a server
    adjacent to `l`. Arms are in lexicographic order, and the arm index is the action index. A task requests `a_(q,k) ~
    U{1, 2}` units of each device type. Servers have their own capacities `c_(k,r) ~ U{1, 2}`. Constraints:

    * (G1) a task is placed at most once;
    * (G2) nothing is placed for a port without a job;
    * (G3) all-or-nothing: a port places 0 tasks or at least `m_l` of them (`min_tasks="all"`: `m_l = |Q_l|`, default;
      `"half"`: `⌈|Q_l|/2⌉`, Kubernetes minMember-style);
    * (G4) per-server capacity.

    Each placed arm pays `Z̃` drawn exactly like a channel of the main env (unknown normal speed minus a known cost,
    affine-clipped to [0, 1]). Only the placed arms are observed.

    ## Spaces, reward, episode

    * **Observation**: `arrivals`, `edge_mask` (per arm: its port has a job), `time`, `last_action`, `last_utility` (per
      arm), as in `ClusterMultiServer-v0`. The static structure (arms, tasks, requests, server capacities, costs) is
      `env.unwrapped.problem`.
    * **Action**: `MultiBinary(n_arms)`, or `Box(0, 1, (n_arms,))` with `action_mode="scores"`. Repair is one
      deterministic pass. It drops the bits of idle ports. It visits ports in the order of their best requested arm
      (binary mode: lowest index, or a random permutation; scores mode: highest score). For each port it places each
      requested task on its highest-priority requested server that still has room. A port that placed fewer than `m_l`
      tasks is rolled back. With `invalid_action="raise"` the env raises `ValueError` naming the violated constraint:
      single placement (G1), arrival gating (G2), all-or-nothing (G3) or per-server capacity (G4). `action_masks()`
      allows value 1 only for the arms of arrived ports whose task fits its server alone.
    * **Reward**: `Σ x Z̃` over the placed arms.
    * **Episode end**: truncated after `horizon` slots.
    * **info**: as in `ClusterMultiServer-v0`. `capacity_used` is the `(K, |R|)` server load. The oracle is a MILP
      (`scipy.optimize.milp`/HiGHS, one binary `y_l` per port) over the arrived ports, cached per arrival pattern.
      Estimated at construction from the constraint matrix's nonzeros and refused (`ValueError` naming the keywords)
      above 2 GiB or 1 s per solve (docs/robustness.md, "Resource guards").

    `observation_format="flat"` gives the observation as one float32 `Box`. **RL-ready id**:
    `gym.make("cluster_envs:ClusterGangRL-v1")` is this env with the benchmark's `horizon=200` and PPO's
    `action_mode="scores", observation_format="flat"`, `info_level="minimal"`: one `Box` observation and a `Box`
    action, so PPO trains the benchmark's task on the id alone (docs/clients.md; `tests/test_rl_ids.py`). A `Box`
    action cannot carry `action_masks()`; MaskablePPO
    users make the base id with `action_mode="binary"`.

    `observation_mode="entity"` is ClusterMultiServer-v0's instance-independent interface, one row per arm, padded
    to `max_edges` = 256 arms (the `paper` preset has 48–141 over instance seeds 0–199 and 1000–1199): `request`
    is the task's request over its server's capacity (clipped to 2: above 1 the arm never fits), `capacity` that
    capacity over the requests of every task that could be placed on the server, `task_share` `1/|Q_l|` and
    `min_share` `m_l/|Q_l|`. **RL-ready id**: `gym.make("ClusterGangEntityRL-v0")`.

    ## Presets

    - `default`: |L| 4; |R| 10; K 3; edge_prob 0.3; tasks per job 2–4
    - `tiny`: |L| 2; |R| 3; K 1; edge_prob 1.0; tasks per job 2
    - `paper`: |L| 8; |R| 40; K 3; edge_prob 0.1; tasks per job 2–4
    - `alibaba_gpu_2023`: |L| 4; |R| 10; K 3; edge_prob 0.3; tasks per job from the trace, 2–4
    - `production`: |L| 100; |R| 1523 (the Alibaba trace's node count); K 3; edge_prob 0.002; tasks per job 2–4;
      `compute_regret=False`: the oracle's MILP is refused by the guards at this size
    - `alibaba_gpu_2023_binding`: the same trace where capacity binds: T = 200 (time compressed 10×, slots of 4
      hours), `edge_prob=1.0` (every node that can host a job type is adjacent to its port) and
      `capacity_scale=0.2` (each node's capacity a fifth, floored in units). At `alibaba_gpu_2023` no slot binds:
      four ports hold at most one job each on ten nodes sized for dozens of pods, and with `edge_prob=0.3` a
      smaller capacity only leaves jobs that fit nowhere even alone (not contention). *Binds*
      (`cluster_envs.multiserver.gang.binding_share`): no feasible placement runs every task of the arrived jobs
      that could each run alone. Chosen by measuring that share over T in {200, 400, 2,000}, `edge_prob` in
      {0.3, 0.5, 1.0} and `capacity_scale` in {0.15, 0.2, 0.25, 0.3, 0.5, 1}: the mildest scaling of that grid
      that binds in at least half of the slots. The measured share and the agents there are on the generated
      page [Real traces where capacity binds](../results/traces/report.md).

    `alibaba_gpu_2023` needs `trace_dir`, the folder of the Alibaba GPU 2023 CSVs. It is ClusterMultiServer-v0's [trace
    workload](ClusterMultiServer-v0.md#trace-driven-preset-alibaba_gpu_2023) (device types, job types, replayed
    arrivals, node sample, units, utilities), with two differences: each server's capacity (G4) is its own node's, in
    units, and port `l` gets `clip(round(m_l), tasks_low, tasks_high)` tasks, `m_l` the mean number of type-`l` pods
    created in a slot that has one. The batched env refuses it (replayed arrivals).

    Other keyword arguments: `arrival_prob`, `horizon`, `tasks_low`/`tasks_high`, `min_tasks`, `req_low`/`req_high`,
    `c_low`/`c_high`, `capacity_scale` (each server's capacity × this factor, floored to whole units; default
    1), the utility parameters, `normalization`, `instance_seed`, `action_mode`, `invalid_action`,
    `binary_repair_order`, `infeasible_penalty`, `compute_regret`, `info_level`, `workload` and `trace_dir`.

    ## Rendering

    As `ClusterMultiServer-v0` (`"ansi"`, or `"rgb_array"` panels of arrivals per port and of the last action and
    utility per arm), with the bottom panel per server: its load / capacity per device type. (364, 635, 3) uint8 for the
    default preset. Frames are drawn with numpy alone, have a size fixed by the configuration (so videos work) and only
    read the state: rendering draws no random numbers and leaves the trajectory unchanged.

    ## Batched env and speed

    `gym.make_vec("ClusterGang-v0", num_envs=B, vectorization_mode="vector_entry_point", **kwargs)` builds
    `cluster_envs.multiserver.vector_env.ClusterGangVectorEnv`, the batched env of ClusterMultiServer-v0 with the single
    env's compiled gang repair (same draws, autoreset, `info` and unsupported settings; see that page).
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

    def _edge_statics(self) -> EdgeStatics:
        """Per arm: its task's request over its server's capacity; that capacity over the requests of all tasks
        that could be placed on the server; the share of its job's tasks, and of the ones the job needs."""
        inst = self.instance
        port, task, server = inst.arms.T
        request = inst.task_req[:, task].astype(np.float64)
        cap = inst.server_cap[:, server].astype(np.float64)
        demand = np.zeros(inst.server_cap.shape)
        np.add.at(demand.T, server, request.T)
        n_tasks = inst.n_tasks_of_port[port].astype(np.float64)
        min_tasks = np.asarray(inst.min_tasks)[port]
        return EdgeStatics(port, server, request / cap, capacity_share(cap, demand[:, server]), inst.utility.cost,
                           1.0 / n_tasks, min_tasks / n_tasks)  # fmt: skip

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
