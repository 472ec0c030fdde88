"""``ClusterBilinear-v0``: parallel-server queues with stochastic bilinear rewards (paper 004)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.azure import NAME as AZURE
from cluster_envs.bilinear.azure import trace_arrivals
from cluster_envs.bilinear.config import PRESETS, BilinearConfig, check_capacity
from cluster_envs.bilinear.kernel import NOISE_CLIP
from cluster_envs.bilinear.model import BilinearProblem, mean_rewards, oracle_lp, sample_arrivals, sample_instance
from cluster_envs.bilinear.simulator import (
    BilinearSimulator,
    episode_summary,
    project_allocation,
)
from cluster_envs.common.env import ClusterEnv, as_real_array, invalid_action, kernel_floats
from cluster_envs.common.render import RED, bar_chart, cycle_colors, log_levels

MINIMAL_INFO_KEYS = ("reward_noisy", "reward_mean", "reward_expected", "queue_total", "n_duplicates", "n_collisions")
LOGIT_SCALE = 10.0  # simplex_logits actions in [-1, 1] are logits in [-10, 10]
LOG_TABLE_MAX = 1 << 20  # the longest table of log1p of the selection counts (8 MB)


class ClusterBilinearEnv(ClusterEnv):
    """Jobs queue for classes of parallel servers; a class-i job on a class-j server pays u_iᵀΘv_j + noise.

    Paper: J.-h. Kim and M. Vojnović, "Learning to Schedule in Parallel-Server Queues with Stochastic
    Bilinear Rewards" (paper 004; spec ``docs/specs/bilinear_queues.md``).

    **Dynamics** (one step = one slot t). Q(t) includes the arrival A(t) (Q(0) = 0, so Q(1) = A(1)). The
    action becomes an expected allocation y (I × J, y ≥ 0, Σ_i y_ij ≤ n_j, rows of empty classes 0).
    Each class-j server selects a waiting class-i job with probability y_ij/(n_j Q_i) or idles; each
    selection pays ξ = r_ij + N(0, ``noise_std``²) (truncated at ±10σ so the spaces are bounded),
    r_ij = u_iᵀΘv_j, and completes the job with probability μ_i. ``service_model="paper"``: several
    servers may select one job and each selection is paid (eq. 22); ``"exclusive"``: servers go in a
    random order and a server whose job is taken idles (a collision). Then A(t+1) (Bernoulli(λ), class i
    w.p. λ_i/λ; pre-drawn at reset) joins the queue.
    λ_i = ρ_i μ_i; the config rejects λ > 1, ρ > n (the oracle LP is then infeasible) and, unless
    ``allow_unstable``, ρ ≥ n (Assumption II.1; 2λ/μ_min − ρ ≥ n for heterogeneous μ). ``server_schedule``
    (callable t ↦ n(t), or a (T, J) array) makes only the first n_j(t) servers of class j available in slot t;
    capacities and r*(t) follow it; reset checks it at n_min = min_t n(t) in the same way (App. D.2).
    ``arrivals="azure_llm_2023"`` (with ``trace_dir``, the folder of the trace's CSVs) replaces the Bernoulli
    draws by the requests of the Azure LLM inference trace of 2023, one job per request, of class service × size
    class, at most one admitted per slot of 0.1 s in the trace's order; each reset replays a window of T + 1
    slots from an offset drawn from its arrivals stream; ρ_i is the trace's admitted rate of class i over μ_i
    (``cluster_envs.bilinear.azure``).

    **Observation** ``Box(float32)``, parts in order (``env.unwrapped.problem.split(obs)`` names them):
    ``"queues"`` (default): Q(t) (I); the last slot's feedback, N_ij selection counts (I·J) and summed
    observed rewards Σξ per (i, j) (I·J) (sufficient for the least-squares estimator since features
    depend only on the classes). ``"queues_stats"`` appends t/T, log1p of the cumulative counts M_ij and
    the empirical means of ξ (0 if unobserved). ``"full"`` appends u (I·d) and v (J·d). With
    ``action_mode="job_allocation"`` a padded per-job block follows: for the first ``max_visible_jobs`` waiting
    jobs in FIFO order, class + 1 (0 = empty slot), and each job's cumulative selection counts and
    summed rewards per server class (K·J each). ``include_server_counts=True`` (off by default; App. D.2)
    appends ``"server_counts"`` (J): n_j(t) of the slot the next action decides, so an agent can solve over the
    available servers J(t) as App. D.2's algorithm (46) does (the fixed n_j without a ``server_schedule``).

    **Action** (``action_mode``): ``"allocation"`` (default) ``Box(0, 1, (I·J,))``, row-major fractions
    a_ij = y_ij/n_j of each server class (normalised so SB3 and ``check_env`` accept the space), projected
    per column onto {y ≥ 0, Σ_{i:Q_i>0} y_ij ≤ n_j(t)} (feasible inputs pass unchanged);
    ``"simplex_logits"`` ``Box(-1, 1, (J·(I+1),))``, logits 10·a, per server class a softmax over the
    non-empty classes and "idle" (last logit), y_ij = n_j π_ij; ``"server_choice"``
    ``MultiDiscrete([I+1]·n)``, the class each server (class-major) takes, I = idle, empty class = idle;
    servers choosing one class get distinct jobs; ``"job_allocation"`` ``Box(0, 1, (max_visible_jobs·J,))``
    fractions x_kj/n_j over the padded job list (jobs beyond ``max_visible_jobs`` are not served), same column
    projection. A
    non-finite, non-integral (``server_choice``) or wrongly shaped action raises ``ValueError`` and leaves
    the env unchanged.

    **Reward** (``reward_mode``) minus κ Σ_i c_i Q_i(t) (κ = ``holding_cost_weight``, pre-decision Q):
    ``"noisy"`` Σξ; ``"mean"`` Σ r_ij N_ij; ``"expected"`` Σ r_ij y_ij; ``"cost_adjusted"``
    Σ(ξ − ``gamma_env``).
    With ``"paper"`` service and κ = 0 filling every server maximises reward (r* is no upper bound there).

    **Episode end.** Truncated after slot T = ``horizon``; terminated only when Σ_i Q_i(t+1) > ``queue_cap``.
    Reset info: ``t`` (0), ``Q``, ``r_star``, ``oracle_allocation``, ``queue_total``.

    **info** (evaluation only; no agent reads it): ``t, Q, Q_next, A, D, y, N, assignments`` (a list of
    (job_id, job_class, server_class, server_index, reward), one per paid selection), ``jobs`` (list of
    (job id, class) waiting next; lists, since their length varies and vector envs stack arrays),
    ``reward_noisy, reward_mean, reward_expected, r_star, oracle_allocation`` (ρ_i p*_ij), ``regret_inc``
    (r* − Σ r_ij y_ij on the allocation requested), ``regret_inc_realized`` (r* − Σ r_ij N_ij),
    ``reward_served`` (Σ r_ij E[N_ij | Q(t), y]: the mean reward of the servers that serve, in expectation over
    the slot's randomised assignment; ``served.py``), ``regret_inc_served`` (r* − ``reward_served``: eq. 1, whose y
    is the expected number of servers working on the jobs; under ``"paper"`` service E[N | y] = y, so it equals
    ``regret_inc``, under ``"exclusive"`` it leaves out the collided servers), ``cum_regret`` (= ``regret``),
    ``cum_regret_realized, cum_regret_served, holding_cost`` (Σ c_i Q_i(t)), ``queue_total`` (Σ_i Q_i(t)),
    ``queue_total_next`` (Σ_i Q_i(t+1), what ``queue_cap`` is tested against), ``utilization`` (Σy/n),
    ``n_duplicates, n_collisions, action_projection_dist, overflow, hidden_jobs`` (waiting jobs beyond
    ``max_visible_jobs`` under ``job_allocation``); at the end ``episode_summary``. ``info_level="minimal"`` keeps
    only ``reward_noisy, reward_mean, reward_expected, queue_total, n_duplicates, n_collisions, regret`` (floats)
    and ``episode_summary`` (the fast setting for training and benchmarks).
    r* is the fluid LP oracle (HiGHS), once per instance (per distinct n(t) under a schedule).

    **Presets**: ``default`` (Sec. V: I = 10, J = 2, n_j = 2, d = 2, ρ = 1, μ = 1, σ = 0.1, T = 500, c = 1),
    ``paper_holding`` (Fig. 4: c = 7/4 for classes 1–5, 1/4 for 6–10), ``rl`` (exclusive service,
    ``simplex_logits``, ``full`` observation, κ = 0.01), ``production`` (I = 40 job classes on J = 8 server
    classes, n_j = 2: four times the default's classes at its load per server), ``azure_llm_2023`` (the trace's
    arrivals, ``trace_dir`` required: I = 6, the code and conversation services in three size classes each,
    μ = 0.22, exclusive service, T = 2000 slots of 0.1 s; ρ = λ/μ below the n = 4 servers, read from the trace at
    construction). ``instance_seed=None`` draws a new
    instance (u, v, θ: U[0,1] entries, unit-normalised) from each reset seed; an int fixes it.

    **Other options**: explicit ``job_features``, ``server_features``, ``theta``, ``traffic_intensity`` (total ρ or
    per class), ``service_rate``, ``noise_std``, ``holding_costs``, ``server_schedule``, ``allow_unstable``,
    ``max_visible_jobs``. Non-finite or non-unit-bounded features are ``ValueError``s.

    **Batched**: ``gym.make_vec("ClusterBilinear-v0", num_envs=B, vectorization_mode="vector_entry_point", **kwargs)``
    steps B copies in one compiled call on the single env's slot kernel (Gymnasium ``NEXT_STEP`` autoreset, equal to
    ``SyncVectorEnv`` step for step); ``action_mode`` ``"allocation"`` or ``"simplex_logits"`` (so the ``rl``
    preset), every ``observation_mode``, no ``server_schedule`` or ``include_server_counts``; ``info`` has the
    minimal keys as (B,) arrays with masks.

    **Rendering**: ``"ansi"``, one line (t, Q, regret); ``"rgb_array"``, a uint8 image with per job class its queue
    Q_i (red, log1p, scaled to the largest) beside the last slot's selections N_ij / n_j by each server class j (one
    colour per class), (120, 448, 3) at the default preset. Frames have a size fixed by the configuration and only
    read the state: rendering draws no random numbers and leaves the trajectory unchanged.

    **Public data**: ``problem`` (features, n_j, T, c, modes). **Privileged** (oracles, harness):
    ``true_mean_rewards`` (r), ``theta``, ``rho``, ``mu``, ``r_star``, ``oracle_allocation``, ``simulator``.
    """

    env_id = "ClusterBilinear-v0"
    config_class = BilinearConfig
    presets = PRESETS
    stream_names = ("instance", "arrivals", "assign", "service", "noise", "choice")

    def __init__(self, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(preset, render_mode, overrides)
        config = self.config
        n_i, n_j = config.num_job_classes, config.num_server_classes
        self._caps = np.asarray(config.servers_per_class, dtype=np.float64)
        self._rho = np.asarray(config.traffic_intensity)
        self._mu = np.asarray(config.service_rate)
        self._costs = np.asarray(config.holding_costs)
        # the replayed trace (read once per process by the config's check), or None for Bernoulli arrivals
        self._trace = trace_arrivals(config.trace_dir, n_i) if config.arrivals == AZURE else None
        k = config.max_visible_jobs
        self.action_space = {
            "allocation": lambda: spaces.Box(0.0, 1.0, shape=(n_i * n_j,), dtype=np.float32),
            "simplex_logits": lambda: spaces.Box(-1.0, 1.0, shape=(n_j * (n_i + 1),), dtype=np.float32),
            "server_choice": lambda: spaces.MultiDiscrete([n_i + 1] * int(self._caps.sum())),
            "job_allocation": lambda: spaces.Box(0.0, 1.0, shape=(k * n_j,), dtype=np.float32),
        }[config.action_mode]()
        self._lp_cache: dict[bytes, tuple[float, np.ndarray]] = {}
        self._problem: BilinearProblem | None = None
        self._r_star = 0.0
        self._minimal_rows = [kernel.STAT_NAMES.index(key) for key in MINIMAL_INFO_KEYS]
        # the slot's kernel writes the whole observation itself in the default observation and action modes, and
        # (through the simulator's observe_stats) the queues_stats and full observations without the per-job block or
        # the server counts
        plain = config.action_mode != "job_allocation" and not config.include_server_counts
        self._queues_only = plain and config.observation_mode == "queues"
        self._stats_only = plain and config.observation_mode in ("queues_stats", "full")
        # numpy's log1p of every count N_ij an episode can reach (T·max n_j), for the stats observation written in
        # the compiled slot; above LOG_TABLE_MAX entries, numpy's log1p of each observation's counts (_observation)
        reach = config.horizon * int(self._caps.max()) + 1
        self._log_table = np.log1p(np.arange(reach, dtype=np.float64)) if reach <= LOG_TABLE_MAX else None
        self._log_counts = np.zeros((n_i, n_j))
        # simplex_logits: the softmax's exponents, then its exponentials (one row: the kernel's action layout)
        self._exponents = np.zeros((1, n_j * (n_i + 1)))
        self.observation_space = self._build_observation_space()

    def _build_observation_space(self) -> spaces.Box:
        """Exact finite bounds: Q ≤ T + 1 arrivals, N_ij ≤ n_j, |ξ| ≤ 1 + 10σ (noise is truncated at 10σ)."""
        cfg = self.config
        n_i, n_j, d, k, t_max = (
            cfg.num_job_classes,
            cfg.num_server_classes,
            cfg.feature_dim,
            cfg.max_visible_jobs,
            cfg.horizon,
        )
        xi_max = 1.0 + NOISE_CLIP * cfg.noise_std
        caps = np.tile(self._caps, n_i)
        bounds = [
            (np.zeros(n_i), np.full(n_i, t_max + 1.0)),
            (np.zeros(n_i * n_j), caps),
            (-xi_max * caps, xi_max * caps),
        ]
        if cfg.observation_mode in ("queues_stats", "full"):
            bounds += [(np.zeros(1), np.ones(1)), (np.zeros(n_i * n_j), np.log1p(t_max * caps))]
            bounds += [(np.full(n_i * n_j, -xi_max), np.full(n_i * n_j, xi_max))]
        if cfg.observation_mode == "full":
            bounds += [(-np.ones((n_i + n_j) * d), np.ones((n_i + n_j) * d))]
        if cfg.action_mode == "job_allocation":
            job_caps = t_max * np.tile(self._caps, k)
            bounds += [(np.zeros(k), np.full(k, float(n_i))), (np.zeros(k * n_j), job_caps)]
            bounds += [(-xi_max * job_caps, xi_max * job_caps)]
        if cfg.include_server_counts:
            bounds += [(np.zeros(n_j), self._caps)]
        low = np.concatenate([b[0] for b in bounds]).astype(np.float32)
        high = np.concatenate([b[1] for b in bounds]).astype(np.float32)
        return spaces.Box(low, high, dtype=np.float32)

    # -- public static data and privileged state -------------------------------------------------------

    @property
    def problem(self) -> BilinearProblem:
        """The static public data an agent is built from (available after ``reset``)."""
        if self._problem is None:
            raise RuntimeError("ClusterBilinear-v0: call reset() before using the env")
        return self._problem

    @property
    def true_mean_rewards(self) -> np.ndarray:
        """Privileged: r (I, J)."""
        return self.simulator.r

    @property
    def theta(self) -> np.ndarray:
        """Privileged: θ = vec(Θ), row-major."""
        return self._theta

    @property
    def rho(self) -> np.ndarray:
        return self._rho

    @property
    def mu(self) -> np.ndarray:
        return self._mu

    @property
    def r_star(self) -> float:
        """Privileged: the oracle reward rate r* at the nominal server counts."""
        return self._oracle(self._caps)[0]

    @property
    def oracle_allocation(self) -> np.ndarray:
        """Privileged: ρ_i p*_ij at the nominal server counts."""
        return self._oracle(self._caps)[1]

    def _oracle(self, caps: np.ndarray) -> tuple[float, np.ndarray]:
        key = np.asarray(caps, dtype=np.float64).tobytes()
        if key not in self._lp_cache:
            self._lp_cache[key] = oracle_lp(self.simulator.r, self._rho, np.asarray(caps, dtype=np.float64))
        return self._lp_cache[key]

    # -- the skeleton's hooks (cluster_envs.common.env) ------------------------------------------------

    def _check_reset(self, options: dict[str, Any]) -> np.ndarray | None:
        return self._schedule()  # the server schedule, checked before the episode changes

    def _new_episode(self, streams: dict[str, np.random.Generator], schedule: np.ndarray | None) -> dict[str, Any]:
        cfg = self.config
        n_i, n_j, d, t_max = cfg.num_job_classes, cfg.num_server_classes, cfg.feature_dim, cfg.horizon
        rng = streams["instance"] if cfg.instance_seed is None else np.random.default_rng(cfg.instance_seed)
        u, v, theta = sample_instance(rng, n_i, n_j, d)
        u = u if cfg.job_features is None else np.asarray(cfg.job_features, dtype=np.float64)
        v = v if cfg.server_features is None else np.asarray(cfg.server_features, dtype=np.float64)
        self._theta = theta if cfg.theta is None else np.asarray(cfg.theta, dtype=np.float64)
        self._problem = BilinearProblem(
            servers_per_class=cfg.servers_per_class,
            job_features=u,
            server_features=v,
            horizon=t_max,
            holding_costs=cfg.holding_costs,
            service_model=cfg.service_model,
            action_mode=cfg.action_mode,
            observation_mode=cfg.observation_mode,
            max_visible_jobs=cfg.max_visible_jobs,
            include_server_counts=cfg.include_server_counts,
            noise_std=float(cfg.noise_std),
        )
        # u and v as the "full" observation ends with them (fixed for the episode)
        self._features = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in (u, v)])
        self._no_features = np.zeros(0)
        self._lp_cache = {}
        self._sim = BilinearSimulator(
            mean_rewards(u, v, self._theta),
            self._mu,
            self._caps.astype(np.int64),
            cfg.noise_std,
            cfg.service_model,
            self.draw_arrivals(streams["arrivals"]),
            streams,
            schedule,
            costs=self._costs,
            kappa=cfg.holding_cost_weight,
            gamma_env=cfg.gamma_env,
            reward_mode=cfg.reward_mode,
            max_visible_jobs=cfg.max_visible_jobs if cfg.action_mode == "job_allocation" else -1,
        )
        if self._stats_only and self._log_table is not None:
            features = self._features if cfg.observation_mode == "full" else self._no_features
            self._sim.observe_stats(self._log_table, t_max, features)
        self._r_star = self.r_star
        q = self._sim.queue()
        return {
            "t": 0,
            "Q": q,
            "r_star": self.r_star,
            "oracle_allocation": self.oracle_allocation.copy(),
            "queue_total": float(q.sum()),
        }

    def draw_arrivals(self, rng: np.random.Generator) -> np.ndarray:
        """The classes of A(1) … A(T+1) (-1: none) from the episode's arrivals stream: Bernoulli(λ) draws, or a
        window of the trace's admitted arrivals from an offset drawn from it."""
        t_max = self.config.horizon
        if self._trace is not None:
            return self._trace.window(rng, t_max)
        return sample_arrivals(rng, self._rho * self._mu, t_max + 1)

    def _schedule(self) -> np.ndarray | None:
        sched = self.config.server_schedule
        if sched is None:
            return None
        t_max = self.config.horizon
        rows = [sched(t) for t in range(1, t_max + 1)] if callable(sched) else sched
        arr = np.asarray(rows, dtype=np.float64)
        if arr.shape != (t_max, len(self._caps)) or not np.isfinite(arr).all():
            raise ValueError(f"server_schedule must give {len(self._caps)} finite counts per slot")
        if (arr != np.round(arr)).any() or (arr < 0).any() or (arr > self._caps).any():
            raise ValueError("server_schedule: n_j(t) must be integers in [0, servers_per_class[j]]")
        # App. D.2: stability at n_min = min_t n(t), and a feasible oracle LP in every slot
        check_capacity(
            "server_schedule (its smallest n(t))",
            self._rho,
            self._mu,
            arr.sum(axis=1).min(),
            self.config.allow_unstable,
        )
        return arr.astype(np.int64)

    def _read_action(self, action: Any) -> np.ndarray:
        mode = self.config.action_mode
        if mode == "simplex_logits":  # read as float64, checked finite by the kernel before it changes anything
            return kernel_floats(as_real_array(action, self.action_space.shape, f"action (action_mode={mode!r})"))
        if mode == "allocation":
            return self._float_action(action)  # finiteness: the kernel's, before it changes anything
        return self._checked_action(action)

    def _advance(self, a: np.ndarray) -> None:
        sim, cfg = self._sim, self.config
        caps = sim.caps_now()
        r_star = self._r_star if cfg.server_schedule is None else self._oracle(caps)[0]
        mode = cfg.action_mode
        projected = None  # the projected allocation, when the action is one (for action_projection_dist)
        if mode == "allocation":
            if not sim.step_fractions(a, r_star):
                raise invalid_action("must be finite (no NaN or inf)")
            projected = sim.slot_stats[kernel.Y]
        elif mode == "simplex_logits":  # logits_to_allocation's softmax, its exponential numpy's between two kernels
            z = self._exponents
            if not kernel.softmax_exponents(a, sim.obs, z, self.config.num_job_classes + 1, LOGIT_SCALE):
                raise invalid_action("must be finite (no NaN or inf)")
            np.exp(z, out=z)
            sim.step_softmax(z, r_star)
        elif mode == "server_choice":
            sim.step_servers(a.astype(np.int64), r_star)
        else:
            k = cfg.max_visible_jobs
            visible = np.arange(k) < len(sim.job_class)
            x = project_allocation(a.reshape(k, -1), visible, caps / self._caps) * self._caps
            full = np.zeros((len(sim.job_class), len(caps)))
            full[: min(k, len(full))] = x[: len(full)]
            sim.step_jobs(full, r_star)
            projected = x
        self._slot = (r_star, caps, projected)

    def _overflowed(self) -> bool:
        """Σ_i Q_i(t+1) > ``queue_cap``: the episode terminates."""
        cap = self.config.queue_cap
        return cap is not None and bool(self._sim.stats[kernel.QUEUE_TOTAL_NEXT] > cap)

    def _episode_end(self) -> tuple[bool, bool]:
        terminated = self._overflowed()
        return terminated, self._sim.t >= self.config.horizon and not terminated

    def _reward(self, info: dict[str, Any]) -> float:
        return float(self._sim.stats[kernel.REWARD])

    def _episode_summary(self) -> dict[str, float]:
        return self._summary()

    def _minimal_info(self) -> dict[str, Any]:
        stats = self._sim.stats
        info = dict(zip(MINIMAL_INFO_KEYS, stats[self._minimal_rows].tolist(), strict=True))
        info["regret"] = float(stats[kernel.TOTALS])
        return info

    def _full_info(self, action: np.ndarray) -> dict[str, Any]:
        info = self._record(action, *self._slot)
        info["overflow"] = self._overflowed()
        return info

    def _observe(self) -> np.ndarray:
        sim = self._sim
        if self._queues_only:
            return sim.obs.copy()
        return self._observation() if sim.stats_obs is None else sim.stats_obs.copy()

    def _float_action(self, action: Any) -> np.ndarray:
        """The action as a contiguous float64 array of the action space's shape (finiteness is the caller's)."""
        shape = self.action_space.shape
        action = as_real_array(action, shape, f"action (action_mode={self.config.action_mode!r})")
        return np.ascontiguousarray(action, dtype=np.float64)

    def _checked_action(self, action: Any) -> np.ndarray:
        a = self._float_action(action)
        if not np.isfinite(a).all():
            raise invalid_action("must be finite (no NaN or inf)")
        if self.config.action_mode == "server_choice":
            top = self.config.num_job_classes
            if (a != np.round(a)).any() or (a < 0).any() or (a > top).any():
                raise invalid_action(f"must hold integers in [0, {top}] (I = idle) in action_mode='server_choice'")
        return a

    def _record(self, action: np.ndarray, r_star: float, caps: np.ndarray, projected: np.ndarray | None):
        """The full info of the slot just run; ``projected``: the projected allocation of an allocation action."""
        sim, stats = self.simulator, self.simulator.stats
        res = sim.result()
        dist = 0.0
        if projected is not None:  # ‖y − a·n‖ (a huge finite action cannot overflow: y is projected in fractions)
            with np.errstate(over="ignore"):  # inf only when the distance itself exceeds the float max
                dist = float(np.linalg.norm(projected - action.reshape(projected.shape) * self._caps))
        totals = dict(zip(kernel.STAT_NAMES[kernel.TOTALS :], stats[kernel.TOTALS :].tolist(), strict=True))
        return {
            "t": sim.t,
            "Q": res.queue,
            "Q_next": sim.queue(),
            "A": res.arrivals,
            "D": res.departures,
            "y": res.y,
            "N": res.counts,
            "assignments": res.assignments.tolist(),
            "jobs": list(zip(sim.job_id.tolist(), sim.job_class.tolist(), strict=True)),
            "reward_noisy": res.reward_noisy,
            "reward_mean": res.reward_mean,
            "reward_expected": res.reward_expected,
            "r_star": r_star,
            "oracle_allocation": self._oracle(caps.astype(np.float64))[1].copy(),
            "regret_inc": float(stats[kernel.REGRET_INC]),
            "regret_inc_realized": float(stats[kernel.REGRET_INC_REALIZED]),
            "reward_served": res.reward_served,
            "regret_inc_served": float(stats[kernel.REGRET_INC_SERVED]),
            "cum_regret": totals["total_regret"],
            "regret": totals["total_regret"],
            "cum_regret_realized": totals["total_regret_realized"],
            "cum_regret_served": totals["total_regret_served"],
            "holding_cost": float(stats[kernel.HOLDING]),
            "queue_total": float(stats[kernel.QUEUE_TOTAL]),
            "queue_total_next": float(stats[kernel.QUEUE_TOTAL_NEXT]),
            "utilization": float(stats[kernel.UTILIZATION]),
            "n_duplicates": res.n_duplicates,
            "n_collisions": res.n_collisions,
            "action_projection_dist": dist,
            "hidden_jobs": int(stats[kernel.HIDDEN]),
        }

    def _summary(self) -> dict[str, float]:
        sim = self.simulator
        return {key: float(value) for key, value in episode_summary(sim.stats, sim.counters, self.r_star).items()}

    def _observation(self) -> np.ndarray:
        sim, prob = self.simulator, self.problem
        if self._stats_only:  # beyond the log1p table: the kernel writes the float32 observation, log1p numpy's
            total_counts, total_sums = sim.slot_stats[kernel.TOTAL_COUNTS], sim.slot_stats[kernel.TOTAL_SUMS]
            np.log1p(total_counts, out=self._log_counts)
            out = np.empty(self.observation_space.shape, dtype=np.float32)
            features = self._features if prob.observation_mode == "full" else self._no_features
            kernel.stats_observation_into(out, sim.obs, sim.t, prob.horizon, total_counts, self._log_counts,
                                          total_sums, features)  # fmt: skip
            return out
        parts = [sim.obs]  # Q(t), the last slot's N and Σξ, written by the kernel
        if prob.observation_mode in ("queues_stats", "full"):  # with t/T, log1p(N), the means and (full) u, v
            total_counts, total_sums = sim.slot_stats[kernel.TOTAL_COUNTS], sim.slot_stats[kernel.TOTAL_SUMS]
            features = self._features if prob.observation_mode == "full" else np.zeros(0)
            parts = [kernel.stats_observation(sim.obs, sim.t, prob.horizon, total_counts, np.log1p(total_counts),
                                              total_sums, features)]  # fmt: skip
        if prob.action_mode == "job_allocation":
            k, n_j = prob.max_visible_jobs, prob.n_server_classes
            shown = min(k, len(sim.job_class))
            cls, counts, sums = np.zeros(k), np.zeros((k, n_j)), np.zeros((k, n_j))
            cls[:shown] = sim.job_class[:shown] + 1
            counts[:shown], sums[:shown] = sim.job_counts[:shown], sim.job_reward_sums[:shown]
            parts += [cls, counts.ravel(), sums.ravel()]
        if prob.include_server_counts:
            parts += [sim.caps_now()]  # n_j(t) of the slot the next action decides
        if len(parts) == 1:
            return parts[0].astype(np.float32)
        return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts]).astype(np.float32)

    def _render_ansi(self) -> str:
        sim = self.simulator
        return f"t={sim.t}/{self.config.horizon} Q={sim.queue().tolist()} regret={sim.stats[kernel.TOTALS]:.2f}\n"

    def _render_rgb(self) -> np.ndarray:
        """Per job class, its queue Q_i (red, log1p scaled to the largest) beside the last slot's selections
        N_ij / n_j by each server class j (one colour per server class)."""
        sim = self.simulator
        selections = sim.slot_stats[kernel.COUNTS] / self._caps
        colors = (RED, *cycle_colors(len(self._caps)))
        return bar_chart((np.column_stack([log_levels(sim.queue()), selections]), colors))
