"""``ClusterApprox-v1`` and ``ClusterApproxSingleJob-v0``: approximation jobs on machines of unknown,
varying speed, with semi-bandit feedback (paper 000)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.approx.actions import read_actions
from cluster_envs.approx.config import (
    MULTI_ACTION_MODES,
    MULTI_PRESETS,
    SINGLE_ACTION_MODES,
    SINGLE_PRESETS,
    ApproxConfig,
)
from cluster_envs.approx.kernel import (
    CAPACITY,
    DECODE_MATRIX,
    DECODE_OCCUPANT,
    DECODE_SINGLE,
    LAST_MASK,
    LAST_RATE,
    N_OBS,
    ORACLE_ACCRUED,
    PRICE,
    REWARD_APPROX,
    REWARD_SPARSE,
    REWARD_TRUE,
    SUM_OBS,
    UTILITY_APPROX,
    UTILITY_TRUE,
    occupants,
)
from cluster_envs.approx.model import (
    ApproxProblem,
    Instance,
    Jobs,
    common_deadline_jobs,
    listed_jobs,
    make_rate_process,
    model_mean_rate,
    opt_per_job,
    oracle_estimate,
    prior_mean_rate,
    read_job_trace,
    single_job,
    synthetic_jobs,
    trace_jobs,
)
from cluster_envs.approx.simulator import ApproxSimulator
from cluster_envs.common.config import check_choice, check_reset_options
from cluster_envs.common.env import ClusterEnv, as_real_array
from cluster_envs.common.guards import BENCHMARK_TIME_LIMIT, check
from cluster_envs.common.render import BLUE, GRAY, GREEN, ORANGE, RED, bar_chart
from cluster_envs.common.seeding import episode_streams


def observation_from(t: Any, horizon: int, mf: np.ndarray, mi: np.ndarray, rows: np.ndarray, single_job: bool,
                     last: tuple[str, np.ndarray]) -> dict[str, np.ndarray]:  # fmt: skip
    """The observation dict from the state arrays of one env (``mf`` (rows, M), ``t`` a number) or of a batch
    (``mf`` (B, rows, M), ``t`` (B,)); ``last`` is the multi-job envs' (key, last assignment or occupants)."""
    obs = {
        "time": np.array([t / horizon, (horizon - t) / horizon]).T.copy(),
        "price": mf[..., PRICE, :].copy(),
        "n_obs": mf[..., N_OBS, :].copy(),
        "sum_obs": mf[..., SUM_OBS, :].copy(),
        "last_rate": mf[..., LAST_RATE, :].copy(),
        "last_mask": mi[..., LAST_MASK, :].astype(np.int8),
    }
    if single_job:
        obs["job"] = rows[..., 0, :].copy()
    else:
        obs["jobs"] = rows.copy()
        obs[last[0]] = last[1]
    return obs


def kernel_array(action: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``action`` as a numeric array of ``shape`` (:func:`~cluster_envs.common.env.as_real_array`) in a dtype the
    kernels take: bool as uint8, float16 and long double as float64; ``ValueError`` naming ``name``."""
    action = as_real_array(action, shape, name)
    kind = action.dtype.kind
    if kind == "b":
        return action.view(np.uint8)
    if kind == "f" and action.dtype.itemsize not in (4, 8):  # float16 / long double: not numba types
        return action.astype(np.float64)
    return action


class _ApproxEnvCore(ClusterEnv):
    """The shared core; the two registered classes below differ only in presets and space encodings."""

    single_job = False
    config_class = ApproxConfig
    presets: dict[str, dict[str, Any]] = MULTI_PRESETS
    env_id = "ClusterApprox-v1"

    def __init__(self, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(preset, render_mode, overrides)
        config = self.config
        if self.single_job and (config.job_source != "single" or config.max_visible_jobs != 1):
            raise ValueError(f"{self.env_id} has one job: job_source must be 'single' and max_visible_jobs 1")
        if self.single_job and config.capacity is not None:
            raise ValueError(f"capacity (Sec. V-C mode) is only available in ClusterApprox-v1, not {self.env_id}")
        if not self.single_job and config.job_source == "single":
            raise ValueError("job_source='single' belongs to ClusterApproxSingleJob-v0")
        check_choice("action_mode", config.action_mode, SINGLE_ACTION_MODES if self.single_job else MULTI_ACTION_MODES)
        if config.capacity is not None and config.action_mode != "occupant":
            raise ValueError(f"action_mode={config.action_mode!r} needs the base model (capacity=None): the Sec. V-C "
                             "mode reads MultiBinary((K, M)) assignments")  # fmt: skip
        self._trace = read_job_trace(config.trace_path, config.horizon) if config.job_source == "trace" else None
        if config.compute_regret:  # on the instance of instance_seed (every episode's with fixed_instance)
            rng = np.random.default_rng(config.instance_seed)
            self._check_oracle(self._draw_instance(rng, np.random.default_rng(0)).jobs)
        m, k = config.n_machines, config.max_visible_jobs
        self._generalized = config.capacity is not None
        self._n_fields = 14 if self._generalized else 12
        job_high = self._job_bounds()
        price_high = self._price_bound()
        horizon = float(config.horizon)
        obs = {
            "time": spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float64),
            "price": spaces.Box(0.0, price_high, shape=(m,), dtype=np.float64),
            "n_obs": spaces.Box(0.0, horizon, shape=(m,), dtype=np.float64),
            "sum_obs": spaces.Box(0.0, horizon, shape=(m,), dtype=np.float64),
            "last_rate": spaces.Box(0.0, 1.0, shape=(m,), dtype=np.float64),
            "last_mask": spaces.MultiBinary(m),
        }
        low = np.zeros_like(job_high)
        low[6] = -job_high[5]  # remaining budget is negative after an overrun (soft mode)
        if self.single_job:
            obs["job"] = spaces.Box(low, job_high, dtype=np.float64)
            self.action_space = (
                spaces.Box(0.0, 1.0, shape=(m,), dtype=np.float32)
                if config.action_mode == "paced_priority"
                else spaces.MultiBinary(m)
            )
        else:
            obs["jobs"] = spaces.Box(np.tile(low, (k, 1)), np.tile(job_high, (k, 1)), dtype=np.float64)
            if self._generalized:
                obs["last_assignment"] = spaces.MultiBinary((k, m))
                self.action_space = spaces.MultiBinary((k, m))
            else:
                obs["last_occupant"] = spaces.MultiDiscrete(np.full(m, k + 1))
                # priorities are only compared: [-1, 1] is centred where a Gaussian policy starts, so the clipping
                # to the bounds (SB3's) does not tie half the priorities at a bound (docs/rl_curves/approx.md)
                self.action_space = (
                    spaces.Box(-1.0, 1.0, shape=(k + m,), dtype=np.float32)
                    if config.action_mode == "paced_priority"
                    else spaces.MultiDiscrete(np.full(m, k + 1))
                )
        self.set_observation_space(spaces.Dict(obs))
        self._action_shape = self.action_space.shape
        # how the kernel reads an action and which of its rewards is the env's (the batched env steps with them)
        self.decode_mode = DECODE_MATRIX if self._generalized else DECODE_OCCUPANT
        if self.single_job:
            self.decode_mode = DECODE_SINGLE
        self.reward_entry = {"true": REWARD_TRUE, "approx": REWARD_APPROX, "sparse": REWARD_SPARSE}[config.reward_mode]
        self._minimal_info = config.info_level == "minimal"
        self._horizon = config.horizon
        self.problem: ApproxProblem | None = None
        self.misc_rng: np.random.Generator | None = None

    def _price_bound(self) -> float:
        cfg = self.config
        if isinstance(cfg.prices, tuple):
            return max(cfg.prices)
        return cfg.price_factor if cfg.prices in ("proportional", "flat") else cfg.price_range[1]

    def _job_bounds(self) -> np.ndarray:
        """Finite upper bounds of the ``jobs`` columns, from the config (fixed before any instance exists)."""
        cfg = self.config
        m, horizon = cfg.n_machines, float(cfg.horizon)
        if cfg.job_source in ("synthetic", "trace"):
            budget, value = cfg.q_range[1] * horizon, cfg.v_range[1]
        elif cfg.job_source == "common":
            budget, value = cfg.b_range[1] * horizon, cfg.v_range[1]
        elif cfg.job_source == "single":
            budget, value = cfg.budget_fraction * m * horizon, 1.0
        else:
            budget, value = max(j[2] for j in cfg.jobs), max(j[3] for j in cfg.jobs)
        max_tasks = max(cfg.capacity) if cfg.capacity is not None else 1
        max_spend = max(budget, self._price_bound() * m * max_tasks * horizon)
        high = [
            1,
            1,
            value,
            1,
            budget,
            max_spend,
            budget,
            budget,
            horizon,
            horizon,
            m * max_tasks * horizon,
            horizon,
        ]
        if self._generalized:
            high += [cfg.demand, m if cfg.parallelism is None else cfg.parallelism]
        return np.asarray(high, dtype=np.float64)

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        super().reset(seed=seed)
        cfg = self.config
        streams = episode_streams(self.np_random, ["instance", "rates", "misc"])
        instance_rng = np.random.default_rng(cfg.instance_seed) if cfg.fixed_instance else streams["instance"]
        self.misc_rng = streams["misc"]
        instance = self._draw_instance(instance_rng, streams["rates"])
        if cfg.compute_regret:
            self._check_oracle(instance.jobs)  # before the episode's state changes
        self._instance = instance
        self.problem = ApproxProblem(
            n_machines=cfg.n_machines,
            horizon=cfg.horizon,
            max_visible_jobs=cfg.max_visible_jobs,
            single_job=self.single_job,
            utility=cfg.utility,
            beta=float(cfg.beta),
            prices=tuple(float(p) for p in self._instance.prices),
            budget_mode=cfg.budget_mode,
            rate_prior_mean=prior_mean_rate(cfg.rate_process, cfg.iid_mean_range, cfg.speed_heterogeneity),
            capacity=cfg.capacity,
        )
        opt = None
        if cfg.compute_regret:
            jobs = self._instance.jobs
            opt = opt_per_job(
                cfg.utility,
                cfg.beta,
                jobs,
                self._instance.means,
                self._instance.prices,
                cfg.horizon,
                cfg.oracle_kind,
            )
        self._sim = ApproxSimulator(self.problem, self._instance, budget_mode=cfg.budget_mode, opt_per_job=opt)
        info = {
            "n_jobs": self._sim.n_jobs,
            "arrivals": [int(j) for j in np.flatnonzero(self._instance.jobs.arrival == 0)],
        }
        if opt is not None:
            info["oracle_total"] = info["benchmark_total"] = float(opt.sum())  # benchmark_total: deprecated alias
        return self.emit(self._observation()), info

    def _check_oracle(self, jobs: Jobs) -> None:
        """Refuse (``ValueError``) an oracle convex program above the resource limits (common.guards)."""
        cfg = self.config
        check(
            oracle_estimate(jobs, cfg.horizon, cfg.n_machines),
            f"the oracle's convex program (compute_regret=True) for {jobs.count} jobs",
            "Use fewer machines (n_machines) or jobs (load, n_jobs, jobs, job_keep_fraction) or fewer distinct "
            "arrival and deadline times (horizon, lifetime_median), or pass compute_regret=False.",
            time_limit=BENCHMARK_TIME_LIMIT,
        )

    def _draw_instance(self, rng: np.random.Generator, rates_rng: np.random.Generator) -> Instance:
        cfg = self.config
        m = cfg.n_machines
        rates = make_rate_process(
            cfg.rate_process, rng, rates_rng, m, cfg.horizon, cfg.iid_mean_range, cfg.speed_heterogeneity
        )
        if isinstance(cfg.prices, tuple):
            prices = np.asarray(cfg.prices)
        elif cfg.prices == "proportional":
            # the machine's speed times the model's mean rate: public. Not the realised mean ``rates.means`` (a
            # function of the whole hidden trajectory, which the price would reveal to every observation).
            prices = cfg.price_factor * rates.speed * model_mean_rate(cfg.rate_process, cfg.iid_mean_range)
        elif cfg.prices == "flat":
            prior = prior_mean_rate(cfg.rate_process, cfg.iid_mean_range, cfg.speed_heterogeneity)
            prices = np.full(m, cfg.price_factor * prior)
        else:
            prices = rng.uniform(*cfg.price_range, size=m)
        if cfg.job_source == "synthetic":
            jobs = synthetic_jobs(
                rng,
                horizon=cfg.horizon,
                n_machines=m,
                mean_price=float(prices.mean()),
                load=cfg.load,
                lifetime_median=cfg.lifetime_median,
                lifetime_sigma=cfg.lifetime_sigma,
                q_range=cfg.q_range,
                v_range=cfg.v_range,
                keep_fraction=cfg.job_keep_fraction,
            )
        elif cfg.job_source == "trace":
            arrival, deadline = self._trace
            jobs = trace_jobs(
                rng,
                arrival=arrival,
                deadline=deadline,
                q_range=cfg.q_range,
                v_range=cfg.v_range,
                keep_fraction=cfg.job_keep_fraction,
            )
        elif cfg.job_source == "common":
            jobs = common_deadline_jobs(
                rng, horizon=cfg.horizon, n_jobs=cfg.n_jobs, b_range=cfg.b_range, v_range=cfg.v_range
            )
        elif cfg.job_source == "single":
            jobs = single_job(horizon=cfg.horizon, n_machines=m, budget_fraction=cfg.budget_fraction)
        else:
            jobs = listed_jobs(cfg.jobs)
        n = jobs.count
        capacity = np.asarray(cfg.capacity if cfg.capacity is not None else (1,) * m, dtype=np.float64)
        parallelism = np.full(n, m if cfg.parallelism is None else cfg.parallelism, dtype=np.int64)
        return Instance(jobs, prices, rates, np.full(n, float(cfg.demand)), parallelism, capacity)

    def _episode_over(self) -> bool:
        return int(self._sim.c[0]) >= self._horizon

    def _step(self, action: Any):
        sim = self._sim
        t = int(sim.c[0])
        sim.step_action(self._flat_action(action), self.decode_mode)
        reward = float(sim.f[self.reward_entry])
        terminated = t + 1 == self._horizon
        if self._minimal_info:
            values = sim.f.tolist()
            info = {"t": sim.t, "utility_true": values[UTILITY_TRUE], "utility_approx": values[UTILITY_APPROX]}
            if sim.opt_per_job is not None:
                info["regret"] = values[ORACLE_ACCRUED] - values[UTILITY_APPROX]
        else:
            sim.step_info = sim.slot_details()
            info = self._info()
        if terminated:
            info["episode_summary"] = sim.summary()
        return self.emit(self._observation()), reward, terminated, False, info

    def _flat_action(self, action: Any) -> np.ndarray:
        """A well-formed action, read as ``action_mode``, as a flat array for the kernel (which rejects NaN,
        fractions, out-of-range)."""
        action = kernel_array(action, self._action_shape, "action")
        if self.config.action_mode in ("work_conserving", "paced_priority"):  # the modes that read the observation
            seen = {key: value[None] for key, value in self.last_observation.items()}
            action = np.asarray(read_actions(self.config.action_mode, action[None], seen)[0])
        return action.reshape(-1)

    def _info(self) -> dict[str, Any]:
        sim = self.simulator
        s = sim.step_info
        executed = s["executed"]
        if self.single_job or self._generalized:
            executed_out = executed.astype(np.int8) if self._generalized else executed[0].astype(np.int8)
        else:
            executed_out = occupants(executed)
        info: dict[str, Any] = {
            "t": sim.t,
            "work": s["slot_work"].copy(),
            "cost": s["slot_cost"].copy(),
            "executed": executed_out,
            "observed_rates": np.where(s["ran"], s["rates"], -1.0),
            "n_invalid": s["n_invalid"],
            "n_budget_blocked": s["n_budget_blocked"],
            "n_repaired": s["n_repaired"],
            "exhausted": s["exhausted_slots"],
            "migrations": s["migrations"],
            "utility_true": sim.utility_true,
            "utility_approx": sim.utility_approx,
            "fit": sim.fit_signed,
            "fit_positive": sim.fit_positive,
            "slot_job_ids": sim.slot_job.copy(),
            "arrivals": s["arrivals"],
            "departures": s["departures"],
        }
        if sim.opt_per_job is not None:
            info["oracle_total"] = info["benchmark_total"] = float(sim.opt_per_job.sum())  # deprecated alias
            info["regret"] = sim.oracle_accrued - sim.utility_approx
        if self.config.expose_oracle:
            info["oracle"] = {"rates": s["rates"].copy(), "means": self._instance.means.copy()}
        return info

    def _observation(self) -> dict[str, np.ndarray]:
        sim = self.simulator
        rows = sim.job_rows()
        if self._generalized:
            last = ("last_assignment", sim.executed.astype(np.int8))
        else:
            last = ("last_occupant", occupants(sim.executed))
        return observation_from(sim.c[0], self._horizon, sim.mf, sim.mi, rows, self.single_job, last)

    def _render_ansi(self) -> str:
        sim = self.simulator
        lines = [
            f"t={sim.t}/{sim.horizon}  utility={sim.utility_true:.2f}  "
            f"visible={int((sim.slot_job >= 0).sum())}  waiting={len(sim.waiting)}"
        ]
        for k, j in enumerate(sim.slot_job):
            if j >= 0:
                machines = int(sim.last_assign[k].sum())
                lines.append(
                    f"slot {k + 1}: job {j} machines={machines} work={sim.work[j]:.1f} "
                    f"spent={sim.spent[j]:.1f}/{sim.budget[j]:.1f} deadline={sim.deadline[j]}"
                )
        return "\n".join(lines) + "\n"

    def _render_rgb(self) -> np.ndarray:
        """Top, per machine: last slot's use (tasks run / capacity, blue), its observed rate θ (green) and the
        empirical mean of its observed rates (grey). Bottom, per job slot: the share of the job's lifetime elapsed
        (orange) beside the share of its budget spent (red); an empty slot is empty."""
        sim = self.simulator
        n_obs = sim.n_obs
        mean_rate = np.divide(sim.sum_obs, n_obs, out=np.zeros_like(n_obs), where=n_obs > 0)
        use = sim.executed.sum(axis=0) / sim.mf[CAPACITY]
        jobs = np.zeros((len(sim.slot_job), 2))
        visible = sim.slot_job >= 0
        j = sim.slot_job[visible]
        jobs[visible, 0] = (sim.t - sim.arrival[j]) / sim.lifetime[j]
        jobs[visible, 1] = sim.spent[j] / sim.budget[j]
        return bar_chart((np.column_stack([use, sim.last_rate, mean_rate]), (BLUE, GREEN, GRAY)), (jobs, (ORANGE, RED)))


class ClusterApproxEnv(_ApproxEnvCore):
    """Approximation jobs share M machines of unknown, varying speed; rates are seen only where tasks ran.

    Rendering: ``"ansi"`` (a text line per visible job) or ``"rgb_array"`` (two panels of bars: per machine, the
    last slot's use beside its observed rate and empirical mean rate; per job slot, lifetime elapsed beside budget
    spent).

    Paper: Xu, Liu, Lau, Zeng, Guo, Liu, "Online Resource Allocation with Machine Variability: A Bandit
    Perspective" (paper 000; spec ``docs/specs/approx_bandit.md``).

    **Dynamics.** Machine i delivers θ_i^t ∈ [0, 1] work in slot t and costs p_i. Job j is active in slots
    a_j < t ≤ d_j, has budget B_j and utility f_j(X_j) = v_j X_j^β (``utility="power"``; also ``"log"``,
    ``"linear"``). Jobs come from ``job_source``: ``"synthetic"`` (Google-like stand-in), ``"trace"`` (a CSV
    ``job_id,a,d`` at ``trace_path``, q_j and v_j drawn as in the paper), ``"common"`` or ``"list"``.
    Visible jobs sit in K job slots (lowest free slot on arrival; a FIFO queue holds the overflow). Each
    step: proposals to empty slots idle (``n_invalid``); ``budget_mode="hard"`` runs the Alg. 1 check per
    job in machine-index order (C_j + Σ p_i < B_j strictly, the first failure exhausts the job for good and
    frees its slot); ``"soft"`` runs every proposal and measures Fit. Rates come from ``rate_process`` (the
    paper's Gamma on/off availability model, or i.i.d. Bernoulli/uniform/beta), drawn from their own stream:
    every policy sees the same θ_i^t for a seed (common random numbers). Prices are public: ``prices="proportional"``
    (default) p_i = ``price_factor`` × s_i × the model's mean rate (L691's "mean service rate", with s_i machine i's
    speed), ``"flat"`` one price, ``"uniform"`` drawn, or a given tuple; never a function of the hidden rate trajectory.

    **Observation** (Dict, float64 Boxes): ``time`` [t/T, (T−t)/T]; ``price`` p; ``n_obs`` / ``sum_obs`` the
    count and sum of observed rates per machine (Eq. 12's statistics); ``last_rate`` θ_i^{t−1} where
    machine i ran, else 0; ``last_mask``; ``last_occupant`` (slot 1..K, 0 = idle) of the last slot;
    ``jobs`` (K, 12): [present, is_new, v_j, β, B_j, C_j, B_j − C_j, B_j/(d_j − a_j), elapsed slots,
    remaining slots, realised work W_j, d_j − a_j], zeros for an empty slot.

    ``observation_mode="flat"``: the same Dict flattened into one float64 Box (``gymnasium.spaces.flatten``, as
    ``FlattenObservation`` gives it; ``last_occupant`` one-hot).

    **Action** ``MultiDiscrete([K+1]*M)``: machine i goes to job slot a_i (0 = idle); capacity (Eq. 3)
    holds by construction. Wrong shape, NaN, fractions or out-of-range values raise ``ValueError``.
    ``action_mode="occupant"`` (default) reads it as the paper does: a machine sent to an empty slot idles
    (``n_invalid``); ``"work_conserving"`` sends it to the next occupied slot, cyclically (``actions.py``).
    ``action_mode="paced_priority"``: ``Box(-1, 1, (K + M,))``, a priority per job slot then per machine; the
    occupied slots in descending priority each take the free machines in descending priority while the job's cost
    in the slot stays within its paced budget (B_j − C_j)/(d_j − t) and below B_j − C_j (``actions.py``); the other
    machines idle; NaN or inf raise ``ValueError`` naming ``action``.
    The Sec. V-C mode (``capacity`` C_i, ``demand`` r_j, ``parallelism`` u_j) uses ``MultiBinary((K, M))``
    actions, repaired deterministically (drop the highest slots on an over-full machine, then a job's
    highest machines beyond u_j; counted in ``n_repaired``); its ``jobs`` rows add r_j and u_j and
    ``last_occupant`` becomes ``last_assignment``. ``FractionalActionWrapper`` gives a Box action.

    **Reward** (``reward_mode``): ``"true"`` (default) Σ_j [f_j(W_j(t)) − f_j(W_j(t−1))], return Σ_j f_j(X_j)
    (the P1 objective reported in Table I); ``"approx"`` the increments of (t − a_j) f_j(W_j/(t − a_j)),
    return Σ_j (d_j − a_j) f_j(X_j/(d_j − a_j)) (Eq. 6's utility term); ``"sparse"`` f_j(X_j) at d_j.

    **Episode end.** ``terminated`` after slot T (every deadline has passed); never truncated.

    **info**: ``t, work, cost`` (per slot), ``executed`` (M,) slot per machine (0 = idle), ``observed_rates``
    (−1 where unobserved), ``n_invalid, n_budget_blocked, n_repaired, exhausted`` (per slot), ``migrations``
    (share of machines whose previous, still-running occupant changed), ``utility_true, utility_approx, fit``
    (Eq. 8 over departed jobs), ``fit_positive, slot_job_ids, arrivals, departures``; with
    ``compute_regret=True``: ``oracle_total`` (the offline optimum's utility; also as ``benchmark_total``,
    deprecated, removed in 0.3) and ``regret`` (cumulative, equal to Eq. 6's Reg_T at the end; ``oracle_kind``
    ``"eq6"``/``"p1"``/``"thm3"`` picks the optimum); ``oracle`` only with ``expose_oracle=True``. The optimum's
    convex program is estimated before it runs (:mod:`cluster_envs.common.guards`): at construction on the instance
    of ``instance_seed`` and at each reset on the drawn one, a ``ValueError`` naming the keywords refuses it above
    ``MEMORY_LIMIT`` (2 GiB) or ``BENCHMARK_TIME_LIMIT`` (600 s estimated). At the end, ``episode_summary``:
    utility, utility_approx, regret, oracle_total (and benchmark_total), fit, fit_positive, mean_migrations, budget
    and cost-to-utility shares, counters.
    ``info_level="minimal"`` keeps only ``t, utility_true, utility_approx`` (and ``regret``) per step, plus
    ``episode_summary``; the trajectory is the same.

    **Batched**: ``gym.make_vec(id, B, vectorization_mode="vector_entry_point")`` (``vector_env.py``) steps B
    copies through the same compiled slot transition (``kernel.py``); not for the Sec. V-C mode.

    **Presets**: ``default`` (M = 20, T = 2000, K = 8, on/off machines, synthetic Google-like jobs at offered
    load 2, β = 0.5), ``medium`` / ``medium_light`` (M = 100, T = 3600, K = 64, load 3), ``paper`` /
    ``paper_light`` (M = 1000, T = 36 000, K = 256, load 3, half the jobs kept), ``paper_hidden_speed`` (speeds
    s_i ~ U[0.5, 1] behind one flat price), ``paper_budget_bound`` (load 1) and ``paper_budget_bound_hidden_speed``
    (both; readings of Sec. VI, docs/reproductions/approx.md), ``common_deadline``
    (Corollary 1: M = 8, N = 3, a_j = 0, d_j = T = 4000, i.i.d. Bernoulli rates, log utility, benchmark on).

    **Privileged state**: ``_instance`` (jobs, true means, rate process) and ``_sim``.
    """

    env_id = "ClusterApprox-v1"


class ClusterApproxSingleJobEnv(_ApproxEnvCore):
    """One approximation job over the whole horizon on M machines of unknown speed (Sec. IV, OPS).

    Rendering: as ``ClusterApprox-v1`` (``"ansi"``, or ``"rgb_array"`` bars per machine and for the one job).

    The single-job case of ``ClusterApprox-v1`` (same dynamics, feedback, budget check, rewards, info keys):
    N = 1, a_1 = 0, d_1 = T, B = ρ M T (``budget_fraction`` ρ). Action ``MultiBinary(M)`` (run the job on
    machine i or not; ``action_mode="binary"``, default). ``action_mode="paced_priority"``: ``Box(0, 1, (M,))``,
    a priority per machine; the machines run in descending priority while the slot's cost stays within the paced
    budget (B − C)/(T − t) (``actions.py``). Observation: ``time, price, n_obs, sum_obs, last_rate, last_mask`` as
    in ``ClusterApprox-v1`` and ``job`` (12,), the job's row (``present`` is 0 once the budget is exhausted);
    ``observation_mode="flat"`` flattens it into one Box.
    ``info["executed"]`` is the executed 0/1 vector.

    **Presets**: ``default`` (M = 10, T = 2000, ρ = 0.2, i.i.d. Bernoulli rates with θ_i ~ U[0.1, 0.9],
    p_i ~ U[0.2, 1], f(X) = log(1 + X), hard budget, benchmark on: ``info["regret"]`` is Eq. 6's regret
    against the closed-form optimum T f(θ·x*)), ``soft`` (the same without the budget check; Fit measured).
    """

    single_job = True
    presets = SINGLE_PRESETS
    env_id = "ClusterApproxSingleJob-v0"
