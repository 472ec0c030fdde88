"""``ClusterMultiServer-v0``: multi-server jobs under service locality with fluctuating speeds (paper 001)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.env import ClusterEnv, as_real_array, invalid_action, kernel_floats
from cluster_envs.common.guards import Estimate, check
from cluster_envs.common.render import BLUE, GREEN, ORANGE, bar_chart, cycle_colors
from cluster_envs.multiserver import knapsack
from cluster_envs.multiserver.alibaba import trace_instance
from cluster_envs.multiserver.config import PRESETS, MultiServerConfig
from cluster_envs.multiserver.entity import (
    ENTITY,
    N_FEATURES,
    EdgeStatics,
    EntityRows,
    advance_rows,
    capacity_share,
    padded_mask,
)
from cluster_envs.multiserver.kernel import action_problem, score_request
from cluster_envs.multiserver.model import (
    KnapsackOracle,
    MultiServerInstance,
    MultiServerProblem,
    generate_instance,
    violations,
)
from cluster_envs.multiserver.simulator import MultiServerSimulator, SlotResult


def check_action_array(action: Any, size: int, binary: bool) -> np.ndarray:
    """A well-formed action as float64[size] (:func:`~cluster_envs.common.env.as_real_array`, then finite and, in
    ``action_mode="binary"``, 0/1); ``ValueError`` naming ``action`` otherwise."""
    arr = as_real_array(action, (size,)).astype(np.float64, copy=False)
    problem = action_problem(arr, binary)
    if problem == 1:
        raise invalid_action("must be finite (no NaN or inf)")
    if problem == 2:
        raise invalid_action("must be binary (0/1 per edge) in action_mode='binary'")
    return arr


class ClusterMultiServerEnv(ClusterEnv):
    """Schedule multi-server jobs on a bipartite port–server graph under a cluster-wide device capacity.

    Paper: Zhao, Deng, Chen, Yin, Dustdar, Zomaya, "Learning to Schedule Multi-Server Jobs with Fluctuated
    Processing Speeds" (paper 001/002; spec ``docs/specs/multiserver_esdp.md``).

    ## Model

    Ports (job types) `l` and servers `r` are joined by edges `e = (l, r)` of a bipartite graph (service locality). The
    edge order is lexicographic in `(l, r)`, and the edge index is the action index. In each slot every port yields a
    job with probability `ρ_l`, and the scheduler sees the arrivals before it decides. It picks `x ∈ {0,1}^|E|`: a job
    may run on several servers at once (a multi-server job). Each used edge consumes `A[k, e] ≥ 1` units of each device
    type `k` (CPU, MEM, GPU) from a cluster-wide per-slot capacity, so `Ax ≤ c`. Edges of ports without a job cannot be
    used. A used edge pays the normalised utility `Z̃_e(t)`: the processing speed `Z_e(t) ~ N(μ_e, (μ_e/2)²)` with
    unknown `μ_e ~ U(0.1, 1)`, minus the known provisioning cost `C_e = Σ_k f_k`, `f_k ~ N(0.5, 0.1)`, mapped affinely
    to [0, 1] and clipped (`normalization="affine_clip"`, spec §3.3; `"clip"` and `"none"` are options). Only the used
    edges are observed (semi-bandit feedback). The oracle knows the means `ṽ` (exact clipped-normal means) and
    solves each slot's 0/1 multi-dimensional knapsack exactly.

    The instance (graph, `A`, `c`, `μ`, costs) is drawn once from `instance_seed` in the spec's normative order.
    `reset(seed)` seeds three streams (arrivals, utilities, repair permutations). Every slot draws all arrival uniforms
    and all `|E|` normals, whatever the action, so two agents run with the same seed see the same arrivals and the same
    `Z(t)` (common random numbers).

    ## Spaces

    **Observation** (`Dict`):

    - `arrivals`: space `MultiBinary(|L|)`; content ports with a job in the slot about to be decided
    - `edge_mask`: space `MultiBinary(|E|)`; content edges usable now (their port has a job)
    - `time`: space `Box(0, 1, (1,))`; content `(t − 1)/T`
    - `last_action`: space `MultiBinary(|E|)`; content the executed (repaired) action of the previous slot; 0 after
      reset
    - `last_utility`: space `Box(0, 1, (|E|,))`; content `Z̃_e` on the edges used in the previous slot, 0 elsewhere
      (unbounded with `normalization="none"`)
    - `static` (if `obs_static=True`): space `Box(0, h, (K+1, |E|))`, h = max(1, max A_k/c_k) (> 1 only for an unusable
      channel kept by `allow_unusable_channels`); content rows `A_k / c_k` and `C / max C`

    The feedback the agents need (the executed action and the utilities of the used edges) is part of the observation,
    so no agent reads `info`. This departs from spec §3.10. The static data an agent is built from (graph, `A`, `c`,
    costs, `T`) is `env.unwrapped.problem`.

    **Action**: `action_mode="binary"` (default) gives `MultiBinary(|E|)`, the paper's `x`. `action_mode="scores"` gives
    `Box(0, 1, (|E|,))`: the request is `{e : score_e > 0.5}`, in descending-score priority. With
    `invalid_action="repair"` (default), the env drops the edges of idle ports, then keeps the remaining requested edges
    first-fit in priority order (ascending index, or a random permutation with `binary_repair_order="random"`). With
    `invalid_action="raise"`, an infeasible action raises `ValueError` naming the violated constraint (arrival gating
    (4), or capacity (2) of device type `k`). A malformed action (wrong shape, NaN, a value other than 0/1 in binary
    mode) raises `ValueError` and leaves the env unchanged. `action_masks()` returns the sb3-contrib MaskablePPO mask,
    `bool[2·|E|]` (per edge: value 0 allowed, value 1 allowed only for edges of arrived ports whose request fits `c`). A
    mask cannot express the joint knapsack, so repair still applies. The classmethod `action_mask_from(problem,
    observation)` computes the same mask from public data (the RL adapter uses it to run a trained MaskablePPO policy as
    an agent).

    **Reward**: the realised slot utility `U(x(t)) = Σ_e x_e Z̃_e(t)` (the paper's AOU contribution), minus
    `infeasible_penalty` × dropped bits (default 0).

    **Episode end**: never terminated; truncated after `horizon` slots (a contextual bandit: actions do not change
    future observations, so `gamma = 0` is the natural RL setting).

    **Observation content and form**: `observation_mode` is the content, `"instance"` (default: the Dict above) or
    `"entity"` (below); `observation_format` its form, `"dict"` (default) or `"flat"`, one float32 `Box`
    (`gymnasium.spaces.flatten` of the Dict, what `FlattenObservation` gives).

    **RL-ready id**: `gym.make("cluster_envs:ClusterMultiServerRL-v1")` is this env with the benchmark's
    `preset="small"` and `action_mode="scores", observation_format="flat"`, `info_level="minimal"`: one `Box`
    observation and a `Box` action, so a client that takes only an id (docs/clients.md) trains the benchmark's task
    with no wrapper (`tests/test_rl_ids.py`); override the preset as for the base id.

    **Instance-independent interface** (`observation_mode="entity"`, `cluster_envs.multiserver.entity`): the spaces
    above are the instance's (`|E|` changes with `instance_seed`); in this mode they are the family's. The observation
    is `Box((max_edges · 17,))`, one row of 17 columns per edge padded with zero rows to `max_edges` (96; `max_ports`
    8, `max_servers` 40, `max_device_types` 3; the paper's sizes have 19–49 edges over instance seeds 0–299 and
    1000–1299): `valid`, `port`, `server`, `arrived`, `A_ke / c_k` per device type, `c_k / Σ_e A_ke`, the cost over the
    largest, `task_share` (1), `min_share` (0), the edge's use count over `T`, its mean observed utility, the last
    executed action, and `(t − 1)/T`.
    Only public data and past feedback, as sufficient statistics. The action is one entry per padded edge
    (`MultiBinary(max_edges)` or `Box(0, 1, (max_edges,))`); padding is ignored, and `action_masks()` is
    `bool[2·max_edges]` with padding allowed value 0 only. An instance with more edges, ports, servers or device
    types than the maximum is refused at construction, naming the maximum and the keyword that raises it; the `max_*`
    keywords are refused in another mode. Gymnasium's `Graph` space is not used: its samples have a variable
    number of nodes and edges, which stable-baselines3's rollout buffers cannot hold; the padded `Box` with a validity
    column carries the same graph (the port and server columns). **RL-ready id**:
    `gym.make("ClusterMultiServerEntityRL-v0")` (`action_mode="scores", observation_mode="entity",
    observation_format="flat"`), batched alike;
    `baselines.rl.edge_policy.EdgePolicy` is a permutation-equivariant policy for it.

    ## info (evaluation only)

    `t`, `utility`, `raw_utility` (`Σ x (Z − C)`), `n_dropped_arrival`, `n_dropped_capacity`; with `compute_regret=True`
    (default): `expected_utility` `ṽᵀx`, `oracle_utility` `ṽᵀx*(t)`, `slot_regret` (≥ 0), `regret` (cumulative
    pseudo-regret), `realized_regret` `ṽᵀx* − U`. With `info_level="full"` (default) also `x`, `arrivals` (of the
    executed slot), `capacity_used` `Ax`, `oracle_x`. At truncation, `episode_summary`: `aou`, `average_aou`,
    `expected_aou`, `oracle_aou`, `regret`, `dropped`, `prob_all_arrive` (`Π ρ_l`, the event Theorems 1–2 condition on).
    The oracle is cached per arrival pattern. Its knapsack DP grows with `|E|·Π(c_k + 1)`: with `compute_regret=True`
    the env estimates its memory and time at construction, for the largest arrival pattern, and refuses (`ValueError`
    naming the keywords) above 2 GiB or 1 s per solve (docs/robustness.md, "Resource guards").

    ## Presets and main options

    - `default` (the paper's sizes): |L| 8; |R| 40; K 3; edge_prob 0.1; notes Table 3
    - `small`: |L| 4; |R| 10; K 3; edge_prob 0.3; notes fast runs
    - `tiny`: |L| 2; |R| 2; K 1; edge_prob 1.0; notes unit and regret tests
    - `alibaba_gpu_2023`: |L| 8; |R| 40; K 3; edge_prob 0.1; notes real nodes and pods; needs `trace_dir` (below)
    - `alibaba_gpu_2023_binding`: the same trace where capacity binds: T = 400 (time compressed 5×, slots of 2 hours)
      and `capacity_beta=0.1` (a fifth of the capacity rule's 0.5). At `alibaba_gpu_2023`'s T = 2,000 the pods arrive
      at ρ_l = 0.07–0.23 and capacity never binds (`cluster_envs.multiserver.alibaba.binding_share`: no slot's
      arrivals ask for more than `c`); a port holds at most one job per slot, so compressing time alone cannot make
      it bind (all 8 ports at once ask for about 60 % of `c`). Chosen by measuring the binding share over T in
      {200, 400, 500, 1,000, 2,000} and β in {0.05, 0.08, 0.1, 0.2, 0.5}: the mildest scaling of that grid that
      binds in more than half the slots with a margin and leaves `c` at least two units of every type; the share,
      and the paper's algorithm against the heuristics there, come from `cluster-envs reproduce traces`
    - `production`: |L| 200; |R| 1523 (the Alibaba trace's node count); K 3; edge_prob 0.004 (about 6 channels per
      port); `compute_regret=False`: the regret oracle's knapsack DP is refused by the guards at this size

    Other keyword arguments: `arrival_prob` (0.9; scalar or one per port), `horizon` (2000), `req_low`/`req_high` (1/2),
    `capacity_mode` (`"alpha_sum"`: `c_k = max(max_e A_ke, ⌊0.5 Σ_e A_ke⌋)`, ours; `"per_server_sum"`, the literal
    reading, whose per-server capacities are drawn from `c_low`..`c_high`, 1/2), `capacity_beta`, `capacity` (explicit),
    `utility_dist` (`"normal"`, the only one), `mu_low`/`mu_high`, `sigma_ratio`, `cost_mean`/`cost_std`,
    `normalization`, `instance_seed`, `action_mode`, `invalid_action`, `binary_repair_order`, `infeasible_penalty`,
    `compute_regret`, `obs_static`, `info_level`, `workload` (`"synthetic"`, or `"alibaba_gpu_2023"`, set by that
    preset), `trace_dir`, `instance` (an explicit `MultiServerInstance`, for tests). Bad values raise `ValueError`
    naming the argument.

    ## Rendering

    `render_mode="ansi"`: AOU, regret, the arrivals and the edges used last slot. `"rgb_array"` (what
    stable-baselines3's `make_vec_env` asks for): a uint8 image of three panels of bars, (364, 598, 3) for the default
    preset. Top: per port, whether a job arrived for the slot about to be decided (green). Middle: per edge, the last
    slot's executed action (blue) beside its observed utility Z̃_e (orange, clipped to [0, 1]). Bottom: the last slot's
    capacity use (A x)_k / c_k, one bar per device type. Frames are drawn with numpy alone, have a size fixed by the
    configuration (so videos work) and only read the state: rendering draws no random numbers and leaves the trajectory
    unchanged.

    ## Batched env and speed

    `gym.make_vec("ClusterMultiServer-v0", num_envs=B, vectorization_mode="vector_entry_point", **kwargs)` builds
    `cluster_envs.multiserver.vector_env.ClusterMultiServerVectorEnv`: B copies stepped by one compiled loop that runs
    the single env's own repair and utility kernels per copy, on normals and arrival uniforms drawn in advance (256
    slots at a time) from each copy's own generators, so copy i equals a single env reset with seed s + i
    (`reset(seed=[...])`: one seed per copy), step for step. Autoreset: Gymnasium's `NEXT_STEP`. `info` holds the
    `info_level="minimal"` keys as (B,) arrays with `_key` masks (plus the reset info `t`, `arrivals` of copies just
    reset) and `episode_summary` for copies that end. Not supported (`ValueError`; use `SyncVectorEnv`):
    `obs_static=True`, `binary_repair_order="random"`, more than 20 ports with `compute_regret=True`.
    """

    env_id = "ClusterMultiServer-v0"
    config_class = MultiServerConfig
    presets = PRESETS
    stream_names = ("arrivals", "utility", "repair")

    def __init__(self, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(preset, render_mode, overrides)
        config = self.config
        self.instance = self._make_instance()
        self.problem = self._make_problem()
        if config.compute_regret:
            check(self._oracle_estimate(), f"the regret oracle's {self.oracle_solver} (compute_regret=True)",
                  self.oracle_remedy)  # fmt: skip
        self.oracle = self._make_oracle()
        n_e = self._n_edges = self.instance.n_edges
        self._index_order = np.arange(n_e)  # the default repair priority
        self.entity = self.entity_rows() if config.observation_mode == ENTITY else None
        n_act = n_e if self.entity is None else config.max_edges  # entity mode: one entry per padded edge
        self.action_space = (
            spaces.MultiBinary(n_act)
            if config.action_mode == "binary"
            else spaces.Box(0.0, 1.0, shape=(n_act,), dtype=np.float32)
        )
        self.set_observation_space(self._build_observation_space(), writes_box=True)
        # observation_format="flat" (of the instance's Dict): each Dict part's slice of the Box that _flat_observation
        # writes from the state; the entity rows are a Box of their own (emit)
        parts = [] if self._flatten is None or self.entity is not None else self._flatten.parts
        self._flat_slices = {key: slice(start, stop) for key, start, stop, _ in parts} or None
        if self.entity is not None:
            self.observation_space = self.entity.space
        self._last: SlotResult | None = None
        self._counts = np.zeros(n_e)  # entity mode's feedback statistics: slots used, sum of observed utilities
        self._utility_sums = np.zeros(n_e)
        # entity mode: the current padded rows (max_edges, N_FEATURES), kept up to date by a kernel each slot
        self._rows: np.ndarray | None = None
        # action_mode="scores" with repair: the requested edges and the priority, read by one kernel into these
        self._scores_repair = config.action_mode == "scores" and config.invalid_action == "repair"
        self._requested, self._priority = np.zeros(n_e, dtype=bool), np.zeros(n_e, dtype=np.int64)

    # -- what ClusterGang-v0 overrides ---------------------------------------------------------------

    oracle_solver = "knapsack DP"
    oracle_remedy = (
        "Use fewer edges (n_ports, n_servers, edge_prob) or smaller capacities (capacity, capacity_beta, req_high, "
        "n_device_types): the DP grows with |E|·Π(c_k + 1). Or pass compute_regret=False."
    )

    def _oracle_estimate(self) -> Estimate:
        """The oracle's solve for the largest arrival pattern (every port with ρ_l > 0)."""
        inst = self.instance
        return knapsack.estimate(inst.A, inst.c, usable=inst.rho[inst.port_of_edge] > 0)

    def _make_instance(self) -> MultiServerInstance:
        config = self.config
        if config.instance is not None:
            if not isinstance(config.instance, MultiServerInstance):
                raise ValueError(f"instance must be a MultiServerInstance, got {type(config.instance).__name__}")
            inst = config.instance
        else:
            rng = np.random.default_rng(np.random.SeedSequence(config.instance_seed))
            if config.workload == ALIBABA:
                inst = trace_instance(config.generator_params(), config.trace_dir, config.horizon, rng)
            else:
                inst = generate_instance(config.generator_params(), rng)
        unusable = np.flatnonzero(~self._fits_alone(inst))
        if unusable.size and not config.allow_unusable_channels:
            raise ValueError(
                f"capacity={inst.c.tolist()} is below the request of edges {unusable.tolist()}, "
                "which could never be used; raise capacity or pass allow_unusable_channels=True"
            )
        return inst

    def _make_problem(self) -> MultiServerProblem:
        inst = self.instance
        return MultiServerProblem(
            inst.n_ports, inst.n_servers, inst.n_device_types, inst.edges, inst.A, inst.c,
            inst.utility.cost, self.config.horizon, inst.utility.normalization,
        )  # fmt: skip

    def _make_oracle(self):
        inst = self.instance
        return KnapsackOracle(inst.v_tilde, inst.A, inst.c, inst.port_of_edge)

    @staticmethod
    def _fits_alone(inst) -> np.ndarray:
        """Per edge: whether it fits the capacity on its own (the mask cannot say more)."""
        return (inst.A <= inst.c[:, None]).all(axis=0)

    def _edge_statics(self) -> EdgeStatics:
        """The public per-edge data of ``observation_mode="entity"``: requests over the cluster-wide capacity."""
        inst, n_e = self.instance, self.instance.n_edges
        c = inst.c[:, None].astype(np.float64)
        capacity = capacity_share(c, inst.A.sum(axis=1, keepdims=True).astype(np.float64))
        return EdgeStatics(inst.edges[:, 0], inst.edges[:, 1], inst.A / c, np.repeat(capacity, n_e, axis=1),
                           inst.utility.cost, np.ones(n_e), np.zeros(n_e))  # fmt: skip

    def entity_rows(self) -> EntityRows:
        """The padded edge rows of this instance (``ValueError`` naming the ``max_*`` keyword it exceeds)."""
        inst = self.instance
        return EntityRows(self._edge_statics(), inst.n_ports, inst.n_servers, self.config.horizon, self.config,
                          unbounded=inst.utility.normalization == "none")  # fmt: skip

    def violation(self, x: np.ndarray, arrivals: np.ndarray) -> str | None:
        """The first constraint ``x`` violates under ``arrivals``, as a sentence, or None (the batched env's too)."""
        return violations(x, self.instance, arrivals)

    def _is_feasible(self, x: np.ndarray) -> bool:
        return self.simulator.is_feasible(x)

    def _repair(self, requested: np.ndarray, priority: np.ndarray) -> tuple[np.ndarray, int, int]:
        return self.simulator.repair(requested, priority)

    def _capacity_used(self, x: np.ndarray) -> np.ndarray:
        return self.instance.A @ x

    def _capacity(self) -> np.ndarray:
        """The capacity ``_capacity_used`` is measured against."""
        return self.instance.c

    # -- spaces ---------------------------------------------------------------------------------------

    def _build_observation_space(self) -> spaces.Dict:
        inst, cfg = self.instance, self.config
        lo, hi = (-np.inf, np.inf) if inst.utility.normalization == "none" else (0.0, 1.0)
        parts: dict[str, spaces.Space] = {
            "arrivals": spaces.MultiBinary(inst.n_ports),
            "edge_mask": spaces.MultiBinary(inst.n_edges),
            "time": spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32),
            "last_action": spaces.MultiBinary(inst.n_edges),
            "last_utility": spaces.Box(lo, hi, shape=(inst.n_edges,), dtype=np.float32),
        }
        if getattr(cfg, "obs_static", False):
            high = max(1.0, float((inst.A / inst.c[:, None]).max()))  # > 1 only for an unusable channel
            parts["static"] = spaces.Box(0.0, high, shape=(inst.n_device_types + 1, inst.n_edges), dtype=np.float32)
        return spaces.Dict(parts)

    # -- the skeleton's hooks (cluster_envs.common.env) ------------------------------------------------

    def _new_episode(self, streams: dict[str, np.random.Generator], plan: dict[str, Any]) -> dict[str, Any]:
        self._sim = MultiServerSimulator(self.instance, streams, self.config.horizon)
        self._last = None
        self._counts[:] = 0.0
        self._utility_sums[:] = 0.0
        if self.entity is not None:
            obs = self._dict_observation()
            rows = self.entity.rows(obs["edge_mask"][None], obs["last_action"][None], self._counts[None],
                                    self._utility_sums[None], obs["time"][None])  # fmt: skip
            self._rows = rows.reshape(-1, N_FEATURES)
        self._cum = {"aou": 0.0, "expected": 0.0, "oracle": 0.0, "regret": 0.0, "dropped": 0.0}
        return {"t": 1, "arrivals": self._sim.arrivals.copy()}

    def _read_action(self, action: Any) -> tuple[np.ndarray, int, int]:
        return self._feasible_action(action)

    def _advance(self, action: tuple[np.ndarray, int, int]) -> None:
        sim = self._sim
        result = self._last = sim.execute(*action)
        if self.entity is not None:
            advance_rows(self._rows, self._counts, self._utility_sums, result.x, result.feedback, sim.edge_mask, sim.t,
                         sim.horizon)  # fmt: skip
        cum = self._cum
        cum["aou"] += result.utility
        cum["dropped"] += result.n_dropped_arrival + result.n_dropped_capacity
        if self.config.compute_regret:
            self._oracle_slot = self.oracle.lookup(result.arrivals)
            oracle_value = self._oracle_slot[1]
            cum["expected"] += result.expected
            cum["oracle"] += oracle_value
            cum["regret"] += oracle_value - result.expected

    def _episode_end(self) -> tuple[bool, bool]:
        return False, self._sim.t > self._sim.horizon  # a contextual bandit: never terminated

    def _reward(self, info: dict[str, Any]) -> float:
        r = self._last
        return float(r.utility - self.config.infeasible_penalty * (r.n_dropped_arrival + r.n_dropped_capacity))

    def _episode_summary(self) -> dict[str, float]:
        return self.summary_from(self._cum)

    def _minimal_info(self) -> dict[str, Any]:
        r = self._last
        info: dict[str, Any] = {
            "t": self._sim.t - 1,
            "utility": r.utility,
            "raw_utility": r.raw_utility,
            "n_dropped_arrival": r.n_dropped_arrival,
            "n_dropped_capacity": r.n_dropped_capacity,
        }
        if self.config.compute_regret:
            oracle_value = self._oracle_slot[1]
            info.update(
                expected_utility=r.expected,
                oracle_utility=oracle_value,
                slot_regret=oracle_value - r.expected,
                regret=self._cum["regret"],
                realized_regret=oracle_value - r.utility,
            )
        return info

    def _full_info(self, action: tuple[np.ndarray, int, int]) -> dict[str, Any]:
        r, info = self._last, self._minimal_info()
        if self.config.compute_regret:
            info["oracle_x"] = self._oracle_slot[0].copy()
        info.update(x=r.x.copy(), arrivals=r.arrivals.copy(), capacity_used=self._capacity_used(r.x))
        return info

    def _feasible_action(self, action: Any) -> tuple[np.ndarray, int, int]:
        cfg, sim = self.config, self.simulator
        if self._scores_repair:  # the check, the request and the priority in one kernel
            arr = kernel_floats(as_real_array(action, self.action_space.shape))
            if not score_request(arr, self._n_edges, self._requested, self._priority):
                raise invalid_action("must be finite (no NaN or inf)")
            return self._repair(self._requested, self._priority)
        binary = cfg.action_mode == "binary"
        arr = check_action_array(action, self.action_space.shape[0], binary)
        if self.entity is not None:
            arr = self.entity.padded_action(arr)
        requested = arr > 0.5
        if cfg.invalid_action == "raise":
            x = requested.astype(np.int8)
            if not self._is_feasible(x):
                problem = self.violation(x, self.simulator.arrivals)
                raise invalid_action(f"is infeasible (invalid_action='raise'): it violates {problem}")
            return x, 0, 0
        if binary:
            priority = sim.random_priority() if cfg.binary_repair_order == "random" else self._index_order
        else:
            priority = np.argsort(-arr, kind="stable")
        return self._repair(requested, priority)

    def summary_from(self, cum: dict[str, float]) -> dict[str, float]:
        """The ``episode_summary`` from an episode's running sums ``cum`` (``aou, expected, oracle, regret,
        dropped``: this env's own, or a batch copy's)."""
        horizon = self.config.horizon
        summary = {
            "aou": cum["aou"],
            "average_aou": cum["aou"] / horizon,
            "dropped": cum["dropped"],
            "prob_all_arrive": float(np.prod(self.instance.rho)),
        }
        if self.config.compute_regret:
            summary.update(expected_aou=cum["expected"], oracle_aou=cum["oracle"], regret=cum["regret"])
        return summary

    def _observe(self) -> Any:
        """The Dict of the state; in ``observation_format="flat"`` the Box written part by part from the state, in the
        layout of ``gymnasium.spaces.flatten`` (no Dict built); in ``observation_mode="entity"`` the padded rows (a
        copy of the ones the slot's kernel keeps)."""
        if self._rows is not None:
            return self._rows.reshape(-1).copy()
        return self._dict_observation() if self._flat_slices is None else self._flat_observation()

    def _dict_observation(self) -> dict[str, np.ndarray]:
        sim, last = self.simulator, self._last
        n_e = self._n_edges
        obs = {
            "arrivals": sim.arrivals.copy(),
            "edge_mask": sim.edge_mask.copy(),
            "time": np.array([min(1.0, (sim.t - 1) / sim.horizon)], dtype=np.float32),
            "last_action": np.zeros(n_e, np.int8) if last is None else last.x.copy(),
            "last_utility": np.zeros(n_e, np.float32) if last is None else last.feedback.copy(),
        }
        if getattr(self.config, "obs_static", False):
            obs["static"] = self._static_observation()
        return obs

    def _static_observation(self) -> np.ndarray:
        """``static``: A_k/c_k per device type and edge, then the edge costs scaled to [0, 1]."""
        inst = self.instance
        cost = inst.utility.cost
        scaled_cost = np.clip(cost / cost.max(), 0.0, 1.0) if cost.max() > 0 else np.zeros(self._n_edges)
        return np.vstack([inst.A / inst.c[:, None], scaled_cost]).astype(np.float32)

    def _flat_observation(self) -> np.ndarray:
        sim, last, at = self.simulator, self._last, self._flat_slices
        out = np.zeros(self._flatten.size, dtype=self._flatten.dtype)
        out[at["arrivals"]] = sim.arrivals
        out[at["edge_mask"]] = sim.edge_mask
        out[at["time"]] = np.float32(min(1.0, (sim.t - 1) / sim.horizon))
        if last is not None:
            out[at["last_action"]] = last.x
            out[at["last_utility"]] = last.feedback
        if "static" in at:
            out[at["static"]] = self._static_observation().ravel()
        return out

    def emit(self, observation: Any) -> Any:
        """As :meth:`ClusterEnv.emit`; in ``observation_mode="entity"`` the padded edge rows :meth:`_observe` gives,
        and ``last_observation`` the Dict of the same state, built when it is read."""
        return super().emit(observation) if self.entity is None else observation

    @property
    def last_observation(self) -> Any:
        """The observation last emitted (:meth:`ClusterEnv.emit`); in ``observation_mode="entity"`` the Dict of the
        state it was written from (``edge_mask``, ``last_action``, ...; the state changes only in ``step``)."""
        return self._dict_observation() if self.entity is not None else self._last_observation

    @last_observation.setter
    def last_observation(self, observation: Any) -> None:
        self._last_observation = observation

    def action_masks(self) -> np.ndarray:
        """MaskablePPO mask: bool[2·|E|], pairs (value 0 allowed, value 1 allowed) per edge (per padded edge in
        ``observation_mode="entity"``: padding allows value 0 only)."""
        inst = self.instance
        mask = self.action_mask_from(inst, {"edge_mask": self.simulator.edge_mask})
        return mask if self.entity is None else padded_mask(mask.reshape(-1, 2), self.config.max_edges)

    @classmethod
    def action_mask_from(cls, problem: Any, observation: dict[str, np.ndarray]) -> np.ndarray:
        """``action_masks()`` from public data alone (the static problem and the observation's ``edge_mask``),
        so that a trained MaskablePPO policy runs as an agent outside the env."""
        allow_one = np.asarray(observation["edge_mask"], dtype=bool) & cls._fits_alone(problem)
        return np.stack([np.ones(allow_one.size, bool), allow_one], axis=1).ravel()

    def _render_ansi(self) -> str:
        sim = self.simulator
        lines = [f"t={sim.t}/{sim.horizon}  AOU={self._cum['aou']:.2f}  regret={self._cum['regret']:.2f}"]
        lines.append("arrivals: " + "".join(str(int(a)) for a in sim.arrivals))
        if self._last is not None:
            lines.append(f"last slot used: {np.flatnonzero(self._last.x).tolist()}")
        return "\n".join(lines) + "\n"

    def _render_rgb(self) -> np.ndarray:
        """Top: per port, whether a job arrived for the slot about to be decided (green). Middle: per edge (arm),
        the last slot's executed action (blue) beside its observed utility Z̃ (orange, clipped to [0, 1]). Bottom:
        the last slot's capacity use, used / capacity per device type (one colour per type), in one group (per
        server in ClusterGang-v0)."""
        last, n_e = self._last, self._n_edges
        x = np.zeros(n_e, np.int8) if last is None else last.x
        utility = np.zeros(n_e) if last is None else last.feedback
        capacity = self._capacity()
        use = (self._capacity_used(x) / capacity).reshape(len(capacity), -1).T  # (groups, device types)
        return bar_chart(
            (self.simulator.arrivals[:, None], (GREEN,)),
            (np.column_stack([x, utility]), (BLUE, ORANGE)),
            (use, cycle_colors(len(capacity))),
        )
