"""``ClusterSLA-v1``: SLA-constrained sharing of one resource with binary feedback (paper 003)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.common.env import ClusterEnv, as_real_array, invalid_action
from cluster_envs.common.render import BLUE, RED, bar_chart, log_levels
from cluster_envs.sla.config import ACTION_MODES, PRESETS, REWARD_MODES, SLAConfig
from cluster_envs.sla.kernel import (
    DEFICIT,
    LOAD,
    QUEUE,
    STATIC_CUM,
    WORK,
)
from cluster_envs.sla.model import SLAProblem, make_scenario
from cluster_envs.sla.simulator import SLASimulator, feedback_vector

MINIMAL_INFO_ROWS = np.array([WORK, QUEUE, DEFICIT])


class ClusterSLAEnv(ClusterEnv):
    """N tenants share one divisible resource of capacity 1; the allocator sees only which queues are non-empty.

    Paper: Perez-Salazar, Menache, Singh, Toriello, "Dynamic Resource Allocation in the Cloud with
    Near-Optimal Efficiency" (paper 003; spec ``docs/specs/sla_mwu.md``).

    **Dynamics.** In step t the agent's action becomes an allocation h_t (Σh ≤ 1), the load L_t arrives,
    user i is served w_t(i) = min(h_t(i), Q_t(i) + L_t(i)) and the rest queues: Q_{t+1} = Q_t + L_t - w_t.
    User i has an SLA share β_i (Σβ may exceed 1: over-commitment) and the static share β̄_i = β_i / max(1, Σβ).
    Queues start empty; a queue ≤ ``empty_tol`` (a floating-point tolerance, 1e-9 by default, at most 1e-6) is set
    to 0 and counts as empty (spec A2). ``reset(options=...)``: ``"loads"``, an (N, T) array used instead of the
    scenario (β stays the scenario's), or ``"scenario_kwargs"``, merged over the config's for this episode. Reset
    info: ``sla, horizon, scenario, opt_total_work, opt_eps_total_work``.

    **Loads** come from ``scenario`` and are drawn at reset from the ``loads`` stream (common random numbers: the
    same seed gives every policy the same loads): ``paper_synthetic`` (Sec. 4.1: six periods, two users loaded in
    each, Gamma loads critically loaded in expectation; ``horizon`` a multiple of 6), ``example_1_1`` (Example 1.1;
    a multiple of 3), ``sec_3_4`` (the Sec. 3.4 example), ``gamma_iid`` (i.i.d. Gamma loads at ρ times the static
    shares), ``trace_standin`` (diurnal log-normal AR(1) demands standing in for the proprietary Azure traces of
    Sec. 4.2), ``trace`` (your own file: ``scenario_kwargs={"path": "loads.csv"}``, .npy/.npz/.csv, N×T or T×N,
    with ``start``, ``scale``, ``rho``; ``n_users`` must be the trace's number of users and ``horizon`` at most its
    length from ``start``), ``alibaba_gpu_2023`` and ``azure_llm_2023`` (see Presets), or a callable
    ``(rng, N, T, sla) -> L (N, T)``.

    **``sla="mean"``** gives each user its normalised mean load as SLA, as the paper's Sec. 4.2 did, from public
    data only (the information rule: the paper averaged the very window it replayed, which an online allocator
    cannot know): a replayed trace's mean over a *history window* before the replayed one, not replayed
    (``trace``: the ``history`` slots before ``start``, by default all of them; ``alibaba_gpu_2023`` and
    ``azure_llm_2023``: the replay span is cut into ``history`` + T equal slots, ``history`` = T by default, the
    previous period, and the episode replays the last T), or the stand-in's tenant weights w (each user's expected
    share of the load), drawn from the public ``tenants`` stream while the loads come from the ``loads`` stream.

    **Oracle quantities**, computed in closed form at reset from the episode's loads (spec §2.3): the SLA deficit
    D_t(i) = W'_t(i) - W_t(i), the cumulative work the static policy h = β̄ would have done for user i (on its own
    queue) minus the agent's (positive: behind its SLA; ``sla_deficit_relaxed`` uses the share (1 - 2ε) β̄ with
    ε = ``eps_ref``, Theorem 4's form), and the regret OPT_1(t) - Σ_i W_t(i), where OPT_c(t) is the most work any
    allocation of capacity c could have done by step t knowing all loads (Prop. 2: c·t + min_s (S_s - c·s) over
    the aggregate load); ``opt_eps_cum_work`` is OPT_{1-ε}(t), Theorem 4's reference.

    **Observation** (``observation_mode="binary"``, the paper's feedback): ``Box(0, 1, (3N,), float32)`` holding
    [a_t, h_t, β̄] with a_t = 1[Q_{t+1} > 0] (which queues are non-empty after the step), h_t the
    allocation just applied and β̄ = β / max(1, Σβ). At reset a_0 = 0 and h_0 = 1/N.
    ``include_time=True`` appends t/T. Non-paper ablations: ``"binary+sla"`` appends 1[D_t > sla_tol]
    (whether each user is behind its SLA) and ``"full"`` appends log1p(Q_{t+1}), log1p(L_t) and
    sign(D_t)·log1p(|D_t|). ``observation_format="dict"`` gives the same pieces as a Dict space.

    **Action** ``Box(0, 1, (N,))`` (``"softmax"``: ``Box(-10, 10, (N,))`` logits), mapped to h by
    ``action_mode``: ``"normalize"`` h = a⁺/Σa⁺ (uniform if Σa⁺ = 0); ``"sub_simplex"`` clip to [0, 1] and
    rescale only if Σa > 1 (idle capacity allowed); ``"softmax"`` h = softmax(a). NaN/inf, complex, non-numeric or a
    wrong shape raises ``ValueError`` and leaves the env unchanged.

    **Reward** (``reward_mode``), with s = β̄ and D_t = W'_t - W_t the SLA deficit against the static
    policy h = s: ``"work"`` Σw_t; ``"work_sla"`` (default) Σw_t - κ Σ([D_t]⁺ - [D_{t-1}]⁺);
    ``"work_sla_level"`` Σw_t - κ Σ s_i 1[D_t(i) > sla_tol]; ``"neg_regret"`` Σw_t - (OPT(t) - OPT(t-1));
    ``"neg_regret_sla"`` adds the ``work_sla`` penalty to it; or a callable ``f(info) -> float``.

    **Episode end.** Never terminated (the queues go on); truncated at t = ``horizon``.

    **info** (``info_level="full"``): ``t, alloc, action_projected, load, work, total_work, queue, active,
    cum_work, static_queue, static_cum_work, sla_deficit, sla_deficit_relaxed, sla_ok, opt_cum_work,
    opt_eps_cum_work, regret, queue_l2``, where ``work`` is w_t (N,) and ``total_work`` its sum Σ_i w_t(i), this
    step's work (the episode's is ``cum_work`` summed, or ``episode_summary["total_work"]``), and ``regret`` is
    OPT(t) - Σ cum_work so far; ``"minimal"`` keeps ``work, active, queue, sla_deficit``. At truncation
    ``episode_summary``: ``total_work, opt_total_work, opt_eps_total_work, regret, work_ratio``, the maximal SLA
    deficits, ``sla_violation_fraction`` and queue norms.
    OPT_c(t) is the offline dynamic optimum with capacity c (Prop. 2), c = 1 and 1 - ``eps_ref``.

    **Presets** (N, β, T, scenario, ``eps_ref``): ``paper`` (3, (0.2, 0.3, 0.5), 3·10⁶,
    ``paper_synthetic``, 0.02; Sec. 4.1), ``paper_a16`` (the same with spec A16's P2/P3 users,
    ``p23_pairs=((1, 2), (1, 2))``, the reading closest to the paper's Static numbers; ours is P2 = (1, 2),
    P3 = (1, 3)), ``default`` (the same at T = 6000), ``paper_real_standin`` (6, the
    tenant weights ``sla="mean"``, 14,628, ``trace_standin``, 0.01; Sec. 4.2), ``example_1_1`` (3,
    (0.5, 0.2, 0.3), 3000, ``example_1_1``, 0.02), ``proportionality_3_4`` (3, (0.5, 0.3, 0.2), 60,000,
    ``sec_3_4``, 0.1), ``production`` (128, 1/128 each, 6000, ``gamma_iid`` at ρ = 0.99, 0.02: an order of
    magnitude past the papers' 3-6 tenants), ``alibaba_gpu_2023`` (4, ``sla="mean"``, 10,000, ``alibaba_gpu_2023``,
    0.01), ``azure_llm_2023`` (2, ``sla="mean"``, 3500, ``azure_llm_2023``, 0.01) and ``azure_llm_2023_sizes`` (6,
    likewise).
    ``alibaba_gpu_2023`` needs ``trace_dir``, the folder of the Alibaba GPU 2023 CSVs (Weng et al., USENIX ATC '23;
    not shipped; the ClusterMultiServer-v0 sheet lists the files and columns read). The users are the trace's four
    QoS classes in descending order of their history demand (LS, Burstable, BE, Guaranteed); the pods' creation
    times from their 1 % quantile to the last are cut into ``history`` + T equal slots (2T by default), and user
    i's load in step t is the GPUs its pods hold on average over slot ``history`` + t (``num_gpu · gpu_milli /
    1000`` per pod, between creation and deletion). The loads are the same in every episode, rescaled to a mean
    total load ρ = 0.99 (``scenario_kwargs={"scale": "none"}`` keeps GPUs, ``{"rho": ...}`` another level); β is
    the normalised mean load of the history slots.
    ``azure_llm_2023`` and ``azure_llm_2023_sizes`` need ``trace_dir``, the folder of Azure's public LLM inference
    trace of November 2023 (Patel et al., *Splitwise*, ISCA 2024; CC-BY 4.0, cite the paper; not shipped):
    ``AzureLLMInferenceTrace_code.csv`` and ``AzureLLMInferenceTrace_conv.csv``, one row per request with
    ``TIMESTAMP``, ``ContextTokens`` and ``GeneratedTokens``. Paper 003's Sec. 4.2 ran on Azure production traces
    that are not public; this is Azure's own public one, one hour of two LLM services. The hour from the first
    request to the last is cut into ``history`` + T equal slots (2T by default; T = 3500: about half a second each)
    and a tenant's load in step t is the tokens (context + generated) of its requests arriving in slot
    ``history`` + t. The tenants are the services (code,
    conversation), or with ``n_users = 2k`` each service's requests split into k size classes at the quantiles of
    their tokens (``azure_llm_2023_sizes``: terciles, six tenants like the paper's; users 1-3 code small to
    large, 4-6 conversation). Rescaled to utilization ρ = 0.99 (mean total load per step; ``scale``, ``rho`` as
    above), the same in every episode; β is the normalised mean load of the history slots. Errors name the file,
    line and column. The share of steps in which capacity binds (``cluster_envs.sla.model.binding_share``) and the
    paper's algorithm against the heuristics there: ``cluster-envs reproduce traces``.

    **Public data**: ``problem`` (``n_users``, ``sla``, ``horizon``). **Privileged state** (offline oracles and
    evaluation only): ``loads`` (N, T), ``queue``, ``next_load`` (a ``RuntimeError`` after the last step),
    ``simulator``.

    **Rendering**: ``"ansi"``, a text line per user (allocation, queue, activity, SLA deficit); ``"rgb_array"``, a
    (120, 32 N + 8, 3) uint8 image (N ≤ 19; bars narrow beyond) with a pair of bars per user: the allocation h_t
    (blue, full height = 1) and the queue (red, log1p, scaled to the largest queue); (120, 104, 3) at the default
    preset.

    **Long horizons**: ``cluster_envs.sla.runner.simulate(agent, env)`` steps the same compiled dynamics without
    Gymnasium's overhead (results equal env stepping) and records a ``Trajectory`` every ``record_every`` steps.

    **Batched**: ``gym.make_vec("ClusterSLA-v1", num_envs=B, vectorization_mode="vector_entry_point")`` steps
    B copies in one compiled call (``vector_env.ClusterSLAVectorEnv``; paper observation, built-in rewards).
    """

    env_id = "ClusterSLA-v1"
    config_class = SLAConfig
    presets = PRESETS
    reset_options = ("loads", "scenario_kwargs")
    # the hidden loads, and the public draws of the tenants (the stand-in's mean shares); "loads" first, so adding
    # "tenants" left every scenario's loads unchanged
    stream_names = ("loads", "tenants")

    def __init__(self, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(preset, render_mode, overrides)
        config = self.config
        self._scenario = make_scenario(
            config.scenario, config.n_users, config.horizon, config.sla, config.scenario_kwargs, config.trace_dir
        )
        n = config.n_users
        self.action_space = (
            spaces.Box(-10.0, 10.0, shape=(n,), dtype=np.float32)
            if config.action_mode == "softmax"
            else spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        )
        self.observation_space = self._build_observation_space()
        self._sla_bar = np.zeros(n)
        self._action_mode = ACTION_MODES.index(config.action_mode)
        self._reward_mode = -1 if callable(config.reward_mode) else REWARD_MODES.index(config.reward_mode)
        self._feedback = np.zeros((1, 3 * n), dtype=np.float32)  # the kernel's a_t, h_t, β̄ (paper observation)
        self._reward_value = 0.0
        self._paper_observation = (config.observation_mode, config.observation_format, config.include_time) == (
            "binary",
            "flat",
            False,
        )

    def _build_observation_space(self) -> spaces.Space:
        n, cfg = self.config.n_users, self.config
        unit = spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        parts: dict[str, spaces.Box] = {"active": unit, "alloc": unit, "sla": unit}
        if cfg.observation_mode == "binary+sla":
            parts["sla_flag"] = unit
        if cfg.observation_mode == "full":
            parts["log_queue"] = spaces.Box(0.0, np.inf, shape=(n,), dtype=np.float32)
            parts["log_load"] = spaces.Box(0.0, np.inf, shape=(n,), dtype=np.float32)
            parts["signed_log_deficit"] = spaces.Box(-np.inf, np.inf, shape=(n,), dtype=np.float32)
        if cfg.include_time:
            parts["time"] = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        if cfg.observation_format == "dict":
            parts["active"] = spaces.MultiBinary(n)
            return spaces.Dict(parts)
        low = np.concatenate([p.low for p in parts.values()]).astype(np.float32)
        high = np.concatenate([p.high for p in parts.values()]).astype(np.float32)
        return spaces.Box(low, high, dtype=np.float32)

    # -- public static data and privileged state -------------------------------------------------------

    @property
    def problem(self) -> SLAProblem:
        """The static public data an agent is built from (available after ``reset``)."""
        return self.simulator.problem

    @property
    def loads(self) -> np.ndarray:
        """Privileged: the whole load matrix L (N, T) of this episode."""
        return self.simulator.loads

    @property
    def queue(self) -> np.ndarray:
        """Privileged: the current queues Q_t."""
        return self.simulator.queue

    @property
    def next_load(self) -> np.ndarray:
        """Privileged: the load L_t of the next step."""
        return self.simulator.next_load

    # -- the skeleton's hooks (cluster_envs.common.env) ------------------------------------------------

    def _check_reset(self, options: dict[str, Any]) -> tuple[Any, np.ndarray | None]:
        """This episode's scenario (``options["scenario_kwargs"]`` merged over the config's) and the given
        ``options["loads"]``, checked before anything changes."""
        cfg = self.config
        scenario = self._scenario
        if "scenario_kwargs" in options:
            if "loads" in options:
                raise ValueError("options: give either 'loads' or 'scenario_kwargs', not both")
            if not isinstance(options["scenario_kwargs"], dict):
                raise ValueError(f"options['scenario_kwargs'] must be a dict, got {type(options['scenario_kwargs'])}")
            episode_kwargs = {**cfg.scenario_kwargs, **options["scenario_kwargs"]}
            dataclasses.replace(cfg, scenario_kwargs=episode_kwargs)  # the config's checks, for this episode
            scenario = make_scenario(cfg.scenario, cfg.n_users, cfg.horizon, cfg.sla, episode_kwargs, cfg.trace_dir)
        given = self._checked_loads(options["loads"]) if "loads" in options else None
        return scenario, given

    def _new_episode(self, streams: dict[str, np.random.Generator], plan: tuple[Any, np.ndarray | None]):
        cfg = self.config
        scenario, loads = plan
        shares = scenario.shares(streams["tenants"])  # public: known before the episode's loads
        if loads is None:
            loads = self._checked_loads(np.asarray(scenario.loads(streams["loads"], shares), dtype=np.float64),
                                        name="scenario output")  # fmt: skip
        sla = tuple(shares) if cfg.sla == "mean" else cfg.sla
        problem = SLAProblem(n_users=cfg.n_users, sla=tuple(float(b) for b in sla), horizon=cfg.horizon)
        self._sim = SLASimulator(
            problem,
            loads,
            empty_tol=cfg.empty_tol,
            eps_ref=cfg.eps_ref,
            sla_tol=cfg.sla_tol,
            action_mode=self._action_mode,
            reward_mode=self._reward_mode,
            kappa=cfg.reward_kappa,
        )
        self._sla_bar = problem.static_share
        self._feedback[0] = feedback_vector(self._sim.active, self._sim.alloc, self._sla_bar)
        return {
            "sla": problem.sla_array,
            "horizon": cfg.horizon,
            "scenario": cfg.scenario
            if isinstance(cfg.scenario, str)
            else getattr(cfg.scenario, "__name__", "callable"),
            "opt_total_work": float(self._sim.opt_cum_work[-1]),
            "opt_eps_total_work": float(self._sim.opt_eps_cum_work[-1]),
        }

    def _checked_loads(self, loads: Any, name: str = "options['loads']") -> np.ndarray:
        loads = as_real_array(loads, name=name).astype(np.float64)  # refuses complex values and numeric strings
        expected = (self.config.n_users, self.config.horizon)
        if loads.shape != expected:
            raise ValueError(f"{name} must have shape (n_users, horizon) = {expected}, got {loads.shape}")
        if not np.isfinite(loads).all() or (loads < 0).any():
            raise ValueError(f"{name} must be finite and non-negative")
        with np.errstate(over="ignore"):
            total = loads.sum()
        if not np.isfinite(total):  # queues and cumulative work would overflow to inf
            raise ValueError(f"{name} is too large: its total load overflows float64 (rescale the loads)")
        return loads

    def _read_action(self, action: Any) -> np.ndarray:
        return as_real_array(action, self.action_space.shape).astype(np.float64, copy=False)

    def _advance(self, action: np.ndarray) -> None:
        self._reward_value = self._sim.step_action(action, self._feedback)
        if self._reward_value != self._reward_value:  # NaN: the kernel rejected the action, nothing changed
            raise invalid_action(f"must be finite (no NaN or inf), got {action}")

    def _episode_end(self) -> tuple[bool, bool]:
        return False, self._sim.t == self.config.horizon  # the queues go on: never terminated

    def _reward(self, info: dict[str, Any]) -> float:
        return float(self.config.reward_mode(info)) if self._reward_mode < 0 else self._reward_value

    def _episode_summary(self) -> dict[str, Any]:
        return self._sim.summary()

    def _minimal_info(self) -> dict[str, Any]:
        work, queue, deficit = self._sim.state.take(MINIMAL_INFO_ROWS, axis=0)  # one copy, three views
        return {"work": work, "active": queue > 0.0, "queue": queue, "sla_deficit": deficit}

    def _full_info(self, action: np.ndarray) -> dict[str, Any]:
        sim = self._sim
        info = self._minimal_info()
        projected = self.config.action_mode != "softmax" and float(np.abs(sim.alloc - action).max()) > 1e-6
        now = sim.series[sim.t - 1, 0]  # this step's load and static SLA references (one row per series)
        static_cum = now[STATIC_CUM]
        opt = sim.opt_total_work
        info.update(
            t=sim.t,
            alloc=sim.alloc.copy(),
            action_projected=projected,
            load=now[LOAD],
            total_work=float(sim.work.sum()),
            cum_work=sim.cum_work.copy(),
            static_queue=sim.cum_load - static_cum,
            static_cum_work=static_cum,
            sla_deficit_relaxed=sim.relaxed_deficit,
            sla_ok=sim.deficit <= self.config.sla_tol,
            opt_cum_work=opt,
            opt_eps_cum_work=float(sim.opt_eps_cum_work[sim.t - 1]),
            regret=opt - sim.total_work,
            queue_l2=sim.queue_l2,
        )
        return info

    def _observe(self) -> np.ndarray | dict[str, np.ndarray]:
        if self._paper_observation:  # the kernel's feedback (written by feedback_vector at reset)
            return self._feedback[0].copy()
        return self._observation()

    def _observation(self) -> np.ndarray | dict[str, np.ndarray]:
        sim, cfg = self.simulator, self.config
        parts = {"active": sim.active, "alloc": sim.alloc, "sla": self._sla_bar}
        if cfg.observation_mode == "binary+sla":
            parts["sla_flag"] = (sim.deficit > cfg.sla_tol).astype(np.float64)
        if cfg.observation_mode == "full":
            last_load = sim.loads[:, sim.t - 1] if sim.t else np.zeros(cfg.n_users)
            parts["log_queue"] = np.log1p(sim.queue)
            parts["log_load"] = np.log1p(last_load)
            parts["signed_log_deficit"] = np.sign(sim.deficit) * np.log1p(np.abs(sim.deficit))
        if cfg.include_time:
            parts["time"] = np.array([sim.t / sim.horizon])
        if cfg.observation_format == "dict":
            obs = {k: v.astype(np.float32) for k, v in parts.items()}
            obs["active"] = sim.active.astype(np.int8)
            return obs
        return np.concatenate(list(parts.values())).astype(np.float32)

    def _render_ansi(self) -> str:
        sim = self.simulator
        lines = [
            f"t={sim.t}/{sim.horizon}  work={sim.total_work:.2f}  regret={sim.opt_total_work - sim.total_work:.2f}"
        ]
        for i in range(self.config.n_users):
            bar = "#" * int(round(20 * sim.alloc[i]))
            lines.append(
                f"user {i + 1}: h={sim.alloc[i]:.3f} {bar:<20} queue={sim.queue[i]:.2f} "
                f"active={int(sim.active[i])} deficit={sim.deficit[i]:.2f}"
            )
        return "\n".join(lines) + "\n"

    def _render_rgb(self) -> np.ndarray:
        """Per user, the allocation (blue, full height = 1) beside the queue (red, log1p scaled to the largest)."""
        sim = self.simulator
        return bar_chart((np.column_stack([sim.alloc, log_levels(sim.queue)]), (BLUE, RED)))
