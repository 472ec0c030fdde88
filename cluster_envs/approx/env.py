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
    FLAT_KEYS,
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
    write_flat_observation,
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
from cluster_envs.common.config import check_choice
from cluster_envs.common.env import ClusterEnv, as_real_array
from cluster_envs.common.guards import EPISODE_ORACLE_TIME_LIMIT, check
from cluster_envs.common.render import BLUE, GRAY, GREEN, ORANGE, RED, bar_chart


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
    stream_names = ("instance", "rates", "misc")

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
        if config.compute_regret:  # on the instance of instance_seed (of seed 0 when each reset draws its own)
            rng = np.random.default_rng(0 if config.instance_seed is None else config.instance_seed)
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
                # to the bounds (SB3's) does not tie half the priorities at a bound (docs/appendix/rl_curves/approx.md)
                self.action_space = (
                    spaces.Box(-1.0, 1.0, shape=(k + m,), dtype=np.float32)
                    if config.action_mode == "paced_priority"
                    else spaces.MultiDiscrete(np.full(m, k + 1))
                )
        self.set_observation_space(spaces.Dict(obs), writes_box=True)
        self._flat_output(config.observation_format)
        self._action_shape = self.action_space.shape
        self._reads_observation = config.action_mode in ("work_conserving", "paced_priority")
        # how the kernel reads an action and which of its rewards is the env's (the batched env steps with them)
        self.decode_mode = DECODE_MATRIX if self._generalized else DECODE_OCCUPANT
        if self.single_job:
            self.decode_mode = DECODE_SINGLE
        self.reward_entry = {"true": REWARD_TRUE, "approx": REWARD_APPROX, "sparse": REWARD_SPARSE}[config.reward_mode]
        self._horizon = config.horizon
        self.problem: ApproxProblem | None = None
        self.misc_rng: np.random.Generator | None = None

    def _flat_output(self, mode: str) -> None:
        """The one-Box modes, written by the compiled :func:`write_flat_observation`: ``"flat"`` (float64,
        ``gymnasium.spaces.flatten`` of the Dict) and ``"scaled"`` (float32, each entry divided by its public upper
        bound, the flat Box's ``high``: a function of the config alone, so it reveals nothing hidden)."""
        self._flat_starts = None
        if mode not in ("flat", "scaled"):
            return
        flat = spaces.flatten_space(self.dict_observation_space)
        starts = dict.fromkeys(FLAT_KEYS, -1)
        start = 0
        for key, sub in self.dict_observation_space.spaces.items():  # flatten's layout: the parts in key order
            starts[key] = start
            start += spaces.flatdim(sub)
        self._flat_starts = np.array(list(starts.values()), dtype=np.int64)
        if mode == "flat":
            self.flat_scale = np.ones(flat.shape)
            return
        self.flat_scale = np.where(flat.high > 0, flat.high, 1.0)
        low, high = flat.low / self.flat_scale, flat.high / self.flat_scale
        self.observation_space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)

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

    # ------------------------------------------------------- the skeleton's hooks (cluster_envs.common.env)
    def _new_episode(self, streams: dict[str, np.random.Generator], plan: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        fixed = cfg.instance_seed is not None
        instance_rng = np.random.default_rng(cfg.instance_seed) if fixed else streams["instance"]
        instance = self._draw_instance(instance_rng, streams["rates"])
        if cfg.compute_regret:
            self._check_oracle(instance.jobs)  # before the episode's state changes
        self.misc_rng = streams["misc"]
        self._instance = instance
        self.problem = ApproxProblem(
            n_machines=cfg.n_machines,
            horizon=cfg.horizon,
            max_visible_jobs=cfg.max_visible_jobs,
            single_job=self.single_job,
            utility=cfg.utility,
            beta=float(cfg.beta),
            prices=tuple(float(p) for p in instance.prices),
            budget_mode=cfg.budget_mode,
            rate_prior_mean=prior_mean_rate(cfg.rate_process, cfg.iid_mean_range, cfg.speed_heterogeneity),
            capacity=cfg.capacity,
        )
        opt = None
        if cfg.compute_regret:
            opt = opt_per_job(cfg.utility, cfg.beta, instance.jobs, instance.means, instance.prices, cfg.horizon,
                              cfg.oracle_kind)  # fmt: skip
        self._sim = ApproxSimulator(self.problem, instance, budget_mode=cfg.budget_mode, opt_per_job=opt)
        info = {"n_jobs": self._sim.n_jobs, "arrivals": [int(j) for j in np.flatnonzero(instance.jobs.arrival == 0)]}
        if opt is not None:
            info["oracle_total"] = info["benchmark_total"] = float(opt.sum())  # benchmark_total: deprecated alias
        return info

    def _check_oracle(self, jobs: Jobs) -> None:
        """Refuse (``ValueError``) an oracle convex program above the resource limits (common.guards)."""
        cfg = self.config
        check(
            oracle_estimate(jobs, cfg.horizon, cfg.n_machines),
            f"the oracle's convex program (compute_regret=True) for {jobs.count} jobs",
            "Use fewer machines (n_machines) or jobs (load, n_jobs, jobs, job_keep_fraction) or fewer distinct "
            "arrival and deadline times (horizon, lifetime_median), or pass compute_regret=False.",
            time_limit=EPISODE_ORACLE_TIME_LIMIT,
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

    def _read_action(self, action: Any) -> np.ndarray:
        return self._flat_action(action)

    def _advance(self, action: np.ndarray) -> None:
        self._sim.step_action(action, self.decode_mode)

    def _episode_end(self) -> tuple[bool, bool]:
        return int(self._sim.c[0]) == self._horizon, False  # every deadline has passed; never truncated

    def _reward(self, info: dict[str, Any]) -> float:
        return float(self._sim.f[self.reward_entry])

    def _episode_summary(self) -> dict[str, Any]:
        return self._sim.summary()

    def _minimal_info(self) -> dict[str, Any]:
        sim = self._sim
        values = sim.f.tolist()
        info = {"t": sim.t, "utility_true": values[UTILITY_TRUE], "utility_approx": values[UTILITY_APPROX]}
        if sim.opt_per_job is not None:
            info["regret"] = values[ORACLE_ACCRUED] - values[UTILITY_APPROX]
        return info

    def _flat_action(self, action: Any) -> np.ndarray:
        """A well-formed action, read as ``action_mode``, as a flat array for the kernel (which rejects NaN,
        fractions, out-of-range)."""
        action = kernel_array(action, self._action_shape, "action")
        if self._reads_observation:
            action = np.asarray(read_actions(self.config.action_mode, action[None], self._seen)[0])
        return action.reshape(-1)

    def _full_info(self, action: np.ndarray) -> dict[str, Any]:
        sim = self._sim
        s = sim.slot_details()
        if self.single_job or self._generalized:
            executed_out = sim.executed.astype(np.int8) if self._generalized else sim.executed[0].astype(np.int8)
        else:
            executed_out = sim.occupants()
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

    def _observe(self) -> Any:
        """The Dict of the state, or in ``observation_format`` ``"flat"`` and ``"scaled"`` the Box written straight from
        the state arrays; keeps in ``_seen`` the parts the action readings that read the observation use (the job rows
        and prices the policy saw, batched as one)."""
        sim = self.simulator
        rows = sim.job_rows()
        if self._reads_observation:
            seen_rows = ("job", rows[None, 0].copy()) if self.single_job else ("jobs", rows[None].copy())
            self._seen = dict((seen_rows, ("price", sim.mf[None, PRICE].copy())))
        if self._flat_starts is not None:
            out = np.empty(self.observation_space.shape, dtype=self.observation_space.dtype)
            write_flat_observation(out, self._flat_starts, self.flat_scale, sim.c[0], self._horizon, sim.mf, sim.mi,
                                   rows, sim.executed)  # fmt: skip
            return out
        if self._generalized:
            last = ("last_assignment", sim.executed.astype(np.int8))
        else:
            last = ("last_occupant", sim.occupants())
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

    Paper: Xu, Liu, Lau, Zeng, Guo, Liu, "Online Resource Allocation with Machine Variability: A Bandit
    Perspective" (paper 000; spec ``docs/specs/approx_bandit.md``).

    ## Dynamics

    - Machine i delivers θ_i^t ∈ [0, 1] work in slot t and costs p_i per slot of use. The rates come from
      `rate_process`: `"onoff_gamma"` (the paper's model: available periods of length Gamma(0.34, 94.35) with rate
      U[0.7, 1], unavailable periods of length Gamma(0.19, 39.92) with rate U[0, 0.1]), or i.i.d. `"iid_bernoulli"`,
      `"iid_uniform"`, `"iid_beta"` with means θ_i ~ U[`iid_mean_range`] (inside (0, 1) for `"iid_beta"`).
      `prices="proportional"` sets p_i = `price_factor` × the machine's mean service rate under the model, its speed
      s_i times the model's mean rate (the on/off model's stationary 0.697, or the middle of `iid_mean_range`; the
      paper uses 2×, L691; with an i.i.d. process `iid_mean_range` must then be positive, so no machine is free). The
      price is public: never the mean the hidden trajectory realises (v0 used that mean, and every observation leaked
      it; `tests/test_information_rule.py`). `prices="flat"` (ours) sets one price for
      all, `price_factor` × the model's population mean rate: with `speed_heterogeneity` > 0 the prices then do not show
      which machines are fast, so rate estimation can matter (preset `paper_hidden_speed`).
    - Job j arrives in slot a_j and is active in slots a_j < t ≤ d_j. It has budget B_j = q_j (d_j − a_j) and utility
      f_j(X) = v_j X^β (`utility="power"`; `"log"` = v_j log(1 + X), `"linear"` = v_j X).
    - Jobs come from `job_source`:
      - `"synthetic"`: the Google-like stand-in of spec §5.2.3;
      - `"trace"`: a CSV of `job_id,a,d` at `trace_path` (spec §5.2.2), with q_j and v_j drawn as in the paper;
      - `"common"`: the Corollary 1 instance;
      - `"list"`: explicit `jobs=((a, d, B, v), ...)`.
    - K job slots (`max_visible_jobs`) show the visible jobs. An arriving job takes the lowest free slot. If no slot is
      free it waits in a FIFO queue, which is counted in `n_waited_slots`.
    - Each step plays one slot:
      1. Machines proposed to empty slots idle (`n_invalid`).
      2. `budget_mode="hard"` runs Alg. 1's check for each job, in machine-index order: a task runs only if C_j + Σ p_i
         < B_j, strictly. The first failure exhausts the job for good, and the job leaves its slot at once.
      3. The work is realised and the rates are revealed on the machines that ran a task.
      4. Departures (d_j = t) and arrivals follow.

      `"soft"` skips the check and measures Fit instead.
    - The rates and the instance are drawn from their own seeded streams. So every policy sees the same θ_i^t and the
      same jobs for a given seed (common random numbers). The instance (jobs, prices, machine speeds) comes from the
      reset seed (`instance_seed=None`, the default) or, with an integer `instance_seed`, is the same in every episode
      (the rate trajectory still comes from the reset seed).
    - The light load (`job_keep_fraction=0.5`) keeps a seeded subset of the heavy-load jobs.

    ## Observation (Dict; Boxes are float64)

    - `time`: (2,); [t/T, (T − t)/T]
    - `price`: (M,); p_i
    - `n_obs`, `sum_obs`: (M,); number and sum of the observed rates per machine (the statistics of Eq. 12)
    - `last_rate`, `last_mask`: (M,); θ_i^{t−1} on the machines that ran in the last slot (else 0), and which ran
    - `last_occupant`: (M,) MultiDiscrete(K+1); the job slot each machine served in the last slot (0 = idle)
    - `jobs`: (K, 12); per slot: present, is_new, v_j, β, B_j, C_j, B_j − C_j, B_j/(d_j − a_j), elapsed slots, remaining
      slots, realised work W_j, d_j − a_j; zeros if the slot is empty

    The observation holds nothing hidden: no true rates, no future jobs. Job data appear when the job arrives.

    ## Action

    `MultiDiscrete([K+1] * M)`: a_i = k gives machine i to job slot k (0 = idle), so there is at most one job per
    machine (Eq. 3). A wrong shape, NaN, a fraction or an out-of-range value raises `ValueError` naming `action`, and
    the env is left unchanged.

    `cluster_envs.approx.wrappers.FractionalActionWrapper` gives a float32 `Box(0, 1, (K, M))` action (it is recorded in
    the env's spec, so `gym.make(env.spec)` rebuilds it and gymnasium's `check_env` passes):

    - It projects each machine's column exactly onto {z ≥ 0, Σz ≤ 1} (P4).
    - It then samples one occupant per machine with E[x̃] = z, using the env's `misc` stream.
    - The step's `info["fractional_action"]` is the projected z.

    `action_mode` says how the action is read; the dynamics after it are the same:

    - `"occupant"` (default): as the paper reads it. A machine sent to an empty slot idles (`info["n_invalid"]`).
    - `"work_conserving"`: a machine sent to an empty slot k goes to the first occupied slot after k, cyclically (idle
      if no slot is occupied); 0 (idle) stays a choice. A policy cannot waste machines on empty slots.
    - `"paced_priority"`: the action is a float32 `Box(-1, 1, (K + M,))`, a priority per job slot then one per machine.
      The occupied job slots, in descending priority, each take the free machines in descending machine priority while
      the job's cost in the slot stays within its paced budget (B_j − C_j)/(d_j − t) and below its remaining budget B_j
      − C_j (Alg. 1's check); the other machines idle. This is `greedy_ucb`'s pacing: a policy cannot spend a budget
      early, nor send a machine to an empty slot, and learns which jobs and machines to prefer. Priorities are only
      compared (ties by index), so any finite values are read; the space is centred on 0, where a Gaussian policy
      starts, so the clipping of its actions to the bounds ties few of them. NaN or inf raise `ValueError` naming
      `action`.

    `observation_format="flat"` gives the same observation as one float64 `Box`: `gymnasium.spaces.flatten` of the Dict
    (what `FlattenObservation` gives; `last_occupant` one-hot). `observation_format="scaled"` gives it as a float32
    `Box` in [low/high, 1]: each entry divided by its upper bound in the flat `Box` (prices by the price bound, counts
    and slots by T, budgets by the config's largest budget), bounds that the config alone fixes, so the scaling
    reveals nothing hidden (`tests/test_information_rule.py`).

    ## RL-ready id: ClusterApproxRL-v3

    `gym.make("cluster_envs:ClusterApproxRL-v3")` is this env with `action_mode="paced_priority",
    observation_format="scaled", info_level="minimal"`: one `Box` observation and a `Box(-1, 1, (K + M,))` action, so
    SB3's `PPO("MlpPolicy", "cluster_envs:ClusterApproxRL-v3")` (or any client that takes only an id,
    docs/clients.md) trains with no wrapper. The kwargs change only how the action is read, how the observation is
    laid out and which `info` keys are kept: the episodes, rewards and metrics are those of `ClusterApprox-v1`
    (`tests/test_rl_ids.py`). Its batched env is this id's, with the same kwargs.

    The work-conserving reading (`action_mode="work_conserving"`, a `MultiDiscrete` action) is available as a kwarg
    of this id.

    ## Sec. V-C mode

    Set `capacity` (an int, or one int per machine), `demand` r_j and `parallelism` u_j. In this mode:

    - the action becomes `MultiBinary((K, M))`;
    - the `jobs` rows gain r_j and u_j, and `last_occupant` becomes `last_assignment`;
    - infeasible actions are repaired deterministically: on an over-full machine the highest slots are dropped, then
      each job loses its highest machines beyond u_j. `n_repaired` counts the repairs.

    ## Reward (`reward_mode`)

    - `"true"` (default): Σ_j [f_j(W_j(t)) − f_j(W_j(t−1))]. The return is Σ_j f_j(X_j), the P1 objective and the
      utility reported in Table I.
    - `"approx"`: the increments of (t − a_j) f_j(W_j/(t − a_j)). The return is Σ_j (d_j − a_j) f_j(X_j/(d_j − a_j)),
      the utility term of Eq. 6.
    - `"sparse"`: f_j(X_j), paid in the slot of j's deadline.

    ## Episode end

    `terminated` after slot T, when every deadline has passed. The env never truncates. Reset info: `n_jobs`, `arrivals`
    (the jobs that arrive in the first slot) and, when the regret is computed, `oracle_total`.

    ## info

    - Per slot: `t`, `work` and `cost` (per job slot), `executed` (job slot per machine, 0 = idle), `observed_rates` (−1
      where not observed), `n_invalid`, `n_budget_blocked`, `n_repaired`, `exhausted`, `slot_job_ids`, `arrivals`,
      `departures`.
    - `migrations`: the share of machines whose previous occupant is still running but was moved.
    - Running totals: `utility_true`, `utility_approx`.
    - `fit`: Eq. 8 summed over the departed jobs. `fit_positive` counts only the overruns.
    - With `compute_regret=True`:
      - `oracle_total` (the offline optimum's utility; also under its former name `benchmark_total`, deprecated and
        removed in 0.3) and the cumulative `regret`, which equals Eq. 6's Reg_T at the end;
      - `oracle_kind` selects the offline optimum: `"eq6"` (default), `"p1"` or `"thm3"`;
      - the oracle is the fractional offline optimum with the true means, from scipy's SLSQP over the segment-aggregated
        program. It is meant for small instances: its memory and time are estimated at construction (instance of
        `instance_seed`, or of seed 0) and at each reset (the drawn instance), and a `ValueError` naming the keywords
        refuses it above 2 GiB or 600 s (docs/robustness.md, "Resource guards").
    - `oracle` (true θ^t and θ_i) appears only with `expose_oracle=True`, for evaluation.
    - `info_level="minimal"` keeps only `t`, `utility_true`, `utility_approx` (and `regret` with `compute_regret=True`)
      per step, plus `episode_summary` at the end; the trajectory is the same. Use it for speed (training, the bench):
      it skips the per-slot arrays.
    - At the end, `episode_summary` holds:
      - utility and utility_approx;
      - regret and oracle_total (and benchmark_total; with `compute_regret=True`);
      - fit and fit_positive;
      - mean_migrations;
      - the shares of jobs with C_j/B_j < 0.9 and with C_j/f_j(X_j) < 50;
      - counters.

    ## Batched

    `gym.make_vec("ClusterApprox-v1", num_envs=B, vectorization_mode="vector_entry_point", **kwargs)` steps B copies
    through the same compiled slot transition as the single env (Gymnasium's `NEXT_STEP` autoreset; copy i of
    `reset(seed=s)` is seeded s + i, as in `SyncVectorEnv`). It returns the observations of B single envs exactly, and
    the `info_level="minimal"` keys as (B,) arrays. The Sec. V-C mode (`capacity`) is not batched.

    ## Rendering

    `render_mode="ansi"`: a line per visible job (machines, work, spend, deadline). `"rgb_array"` (what
    stable-baselines3's `make_vec_env` asks for): a uint8 image of two panels of bars, (242, 585, 3) for the default
    preset. Top, per machine: the last slot's use (tasks run / capacity, blue), the rate θ observed there (green) and
    the empirical mean of its observed rates (grey). Bottom, per job slot: the share of the job's lifetime elapsed
    (orange) beside the share of its budget spent (red); empty slots stay empty. Bars narrow to fit 640 px, down to 1 px
    without gaps (from 92 machines); beyond 213 machines the frame grows (the `paper` preset's is 3000 px wide). Frames
    are drawn with numpy alone, have a size fixed by the configuration (so videos work) and only read the state:
    rendering draws no random numbers and leaves the trajectory unchanged.

    ## Presets

    - `default`: M 20; T 2000; K 8; machines on/off, p = 2 × mean; jobs synthetic Google-like, offered load 2, median
      lifetime 100, β = 0.5
    - `medium` / `medium_light`: M 100; T 3600; K 64; machines on/off; jobs load 3, median lifetime 200 (light keeps
      half the jobs)
    - `paper` / `paper_light`: M 1000; T 36 000; K 256; machines on/off; jobs load 3, median lifetime 600, σ = 1.5, q_j
      ~ U[2, 100], v_j ~ U[1, 5]
    - `paper_hidden_speed`: M 1000; T 36 000; K 256; machines on/off × speed s_i ~ U[0.5, 1], one price `prices="flat"`
      = 2 × the population mean rate; jobs as `paper`
    - `paper_budget_bound`: M 1000; T 36 000; K 256; machines as `paper`; jobs as `paper` at offered load 1: budgets,
      not machines, bind
    - `paper_budget_bound_hidden_speed`: M 1000; T 36 000; K 256; machines as `paper_hidden_speed`; jobs as
      `paper_budget_bound`
    - `common_deadline`: M 8; T 4000; K 3; machines i.i.d. Bernoulli, p ~ U[0.2, 1]; jobs N = 3, a_j = 0, d_j = T
      (Corollary 1), log utility, `compute_regret=True`
    - `production`: M 10 000; T 36 000; K 1000; as `paper` on ten times the machines at its load per machine (so ten
      times the jobs), K at the allocation limit (K × M ≤ 10⁷); its cost against size: `cluster-envs bench
      --scaling-only`
    """

    env_id = "ClusterApprox-v1"


class ClusterApproxSingleJobEnv(_ApproxEnvCore):
    """One approximation job over the whole horizon on M machines of unknown speed (Sec. IV, OPS).

    The single-job case of ``ClusterApprox-v1`` (same dynamics, feedback, budget check, rewards and info keys):
    N = 1, a_1 = 0, d_1 = T, budget B = ρ M T (``budget_fraction`` ρ), which must not be reached.

    ## Observation (Dict; Boxes are float64)

    - `time`, `price`, `n_obs`, `sum_obs`, `last_rate`, `last_mask`: as in `ClusterApprox-v1`.
    - `job` (12,): the job's row.
      - Columns: present, is_new, v, β, B, C, B − C, B/T, elapsed slots, remaining slots, realised work, T.
      - Once the budget is exhausted the whole row is 0 (the job is over: nothing more can be bought for it).

    ## Action

    `MultiBinary(M)`: 1 runs the job on machine i in this slot. Malformed actions raise `ValueError`.

    `action_mode="paced_priority"`: `Box(0, 1, (M,))`, a priority per machine. The machines run in descending priority
    while the slot's cost stays within the paced budget (B − C)/(T − t) and below B − C (the pacing of `greedy_ucb`): a
    policy cannot spend the budget early and leave the job idle afterwards, and what it learns is which machines to
    prefer. The dynamics after the reading are the same. `observation_format="flat"` gives the observation as one
    float64 `Box` (`gymnasium.spaces.flatten` of the Dict), `"scaled"` as a float32 `Box` divided by its public bounds
    (as in `ClusterApprox-v1`).

    ## RL-ready id: ClusterApproxSingleJobRL-v2

    `gym.make("cluster_envs:ClusterApproxSingleJobRL-v2")` is this env with the benchmark row's training kwargs:
    `reward_mode="approx"` (Eq. 6, what the headline scores), `action_mode="paced_priority",
    observation_format="scaled"` and `info_level="minimal"`: one `Box` observation and a `Box` action, so an id-only
    client (docs/clients.md) trains the benchmark's task with no wrapper (`tests/test_rl_ids.py`).

    ## Reward

    `"true"` (default) pays the increments of f(W(t)). The other modes are `"approx"` and `"sparse"`, as in
    `ClusterApprox-v1`.

    ## Episode end

    `terminated` after T slots.

    ## info

    As in `ClusterApprox-v1`, with two differences:

    - `executed` is the 0/1 vector of the machines that ran.
    - `regret` is always present in the default preset. It is measured against the closed-form oracle of Lemma 4, OPT
      = T f(θ·x*), where x* is the fractional knapsack by θ_i/p_i under the per-slot budget B/T.

    `info_level="minimal"` keeps only `t`, `utility_true`, `utility_approx` and `regret` per step (plus
    `episode_summary` at the end), as in `ClusterApprox-v1`.

    ## Batched

    `gym.make_vec("ClusterApproxSingleJob-v0", num_envs=B, vectorization_mode="vector_entry_point")` steps B copies
    through the single env's compiled slot transition, as for `ClusterApprox-v1`.

    ## Rendering

    As `ClusterApprox-v1`: `"ansi"` text, or `"rgb_array"` bars per machine (use, observed rate, empirical mean rate)
    above the one job's lifetime elapsed and budget spent; (242, 448, 3) uint8 for the default preset. Frames are drawn
    with numpy alone, have a size fixed by the configuration (so videos work) and only read the state: rendering draws
    no random numbers and leaves the trajectory unchanged.

    ## Presets

    - `default`: M = 10, T = 2000, ρ = 0.2; i.i.d. Bernoulli rates with θ_i ~ U[0.1, 0.9]; p_i ~ U[0.2, 1];
      f(X) = log(1 + X); hard budget; `compute_regret=True`
    - `soft`: the same without the budget check (Fit measured), for Theorem 2's Fit bound
    """

    single_job = True
    presets = SINGLE_PRESETS
    env_id = "ClusterApproxSingleJob-v0"
