"""One episode of the approximation-job model (paper 000) as :class:`ApproxSimulator`, without gymnasium.

Machine i delivers θ_i^t ∈ [0, 1] work in slot t and costs p_i per slot of use. Job j is active in slots
a_j < t ≤ d_j, has budget B_j and utility f_j(X_j) of its total work. Each slot the scheduler gives every
machine to at most one visible job (Eq. 3); it observes θ_i^t only on machines that ran a task
(semi-bandit feedback). The env (env.py) and the test runners step :class:`ApproxSimulator`, whose slot
runs in the compiled :mod:`~cluster_envs.approx.kernel`.

Slot semantics follow spec §3.3: invalid proposals idle, then the hard budget check of Alg. 1 lines 7-12
(strict C_j + Σ_{i≤k} p_i < B_j in machine-index order; the first failure exhausts the job for good),
then the work is realised, feedback recorded, rewards and metrics updated, departures and arrivals
processed.
"""

from __future__ import annotations

import numpy as np

from cluster_envs.approx import kernel
from cluster_envs.approx.model import ApproxProblem, Instance, utility
from cluster_envs.common.record import HoldsRecord


def budget_check(assign: np.ndarray, prices: np.ndarray, spent: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Alg. 1 lines 7-12 per row (A4): keep machine k iff spent + Σ_{i≤k} p_i x^i < budget."""
    out = np.empty(assign.shape, dtype=bool)
    kernel.budget_check_into(np.ascontiguousarray(assign, dtype=bool), prices, spent, budget, out)
    return out


class ApproxSimulator(HoldsRecord):
    """State of one episode, stepped by proposed assignments ``assign`` (K, M) bool (row k = job slot k).

    The state lives in the flat arrays of :mod:`cluster_envs.approx.kernel` (``jf``, ``ji``, ``mf``, ``mi``,
    ``si``, ``sf``, ``c``, ``f``); the attributes below are read-only views of them.
    """

    def __init__(self, problem: ApproxProblem, instance: Instance, *, budget_mode: str, opt_per_job: np.ndarray | None):
        self.problem = problem
        self.instance = instance
        self.budget_mode = budget_mode
        jobs = instance.jobs
        if (np.diff(jobs.arrival) < 0).any():
            raise ValueError("jobs must be sorted by arrival (the active-job list relies on it)")
        self.kind, self.beta = problem.utility, problem.beta
        n, m, k = jobs.count, problem.n_machines, problem.max_visible_jobs
        self.opt_per_job = opt_per_job
        self.jf = np.zeros((kernel.JF_ROWS, n))
        self.jf[kernel.BUDGET] = jobs.budget
        self.jf[kernel.VALUE] = jobs.value
        self.jf[kernel.LIFETIME] = (jobs.deadline - jobs.arrival).astype(np.float64)
        if opt_per_job is not None:
            self.jf[kernel.OPT_RATE] = opt_per_job / self.jf[kernel.LIFETIME]
        self.jf[kernel.DEMAND] = instance.demand
        self.ji = np.zeros((kernel.JI_ROWS, n), dtype=np.int64)
        self.ji[kernel.ARRIVAL] = jobs.arrival
        self.ji[kernel.DEADLINE] = jobs.deadline
        self.ji[kernel.PARALLELISM] = instance.parallelism
        self.ji[kernel.DEPARTURE_ORDER] = np.argsort(jobs.deadline, kind="stable")
        self.mf = np.zeros((kernel.MF_ROWS, m))
        self.mf[kernel.PRICE] = instance.prices
        self.mf[kernel.CAPACITY] = instance.capacity
        self.mi = np.zeros((kernel.MI_ROWS, m), dtype=np.int64)
        self.mi[kernel.LAST_JOB] = -1  # global id of the executed occupant (migrations)
        self.si = np.zeros((kernel.SI_ROWS, k), dtype=np.int64)
        self.si[kernel.SLOT_JOB] = -1
        self.sf = np.zeros((kernel.SF_ROWS, k))
        self.c = np.zeros(kernel.C_SIZE, dtype=np.int64)
        self.c[kernel.N_JOBS] = n
        self.f = np.zeros(kernel.F_SIZE)
        self.p = np.zeros(kernel.P_SIZE, dtype=np.int64)
        self.p[kernel.P_HARD] = budget_mode == "hard"
        self.p[kernel.P_GENERALIZED] = problem.generalized
        self.p[kernel.P_HAS_OPT] = opt_per_job is not None
        self.p[kernel.P_HORIZON] = problem.horizon
        self.assign = np.zeros((k, m), dtype=bool)
        self.executed = np.zeros((k, m), dtype=np.uint8)  # 0/1: 8x less memory than floats in the batch
        self.power_in = np.zeros(k + n)
        self.power_out = np.zeros(k + n)
        self.rows = np.zeros((k, len(problem.job_fields)))
        self.rates_now = np.zeros(m)
        self.step_info: dict = {}
        kernel.admit(0, self.ji, self.si, self.c)
        self.record = self.make_record()

    def make_record(self) -> kernel.Batch:
        """The kernels' record of the state arrays, with a leading axis of 1 (their batch layout; made again after
        the arrays are re-pointed: by the batched env, and on unpickling or copying)."""
        return kernel.batch_record(**{name: getattr(self, name)[None] for name in kernel.BATCH_FIELDS[:-1]}, p=self.p)

    # ------------------------------------------------------------------ views of the state
    horizon = property(lambda self: self.problem.horizon)
    n_jobs = property(lambda self: self.ji.shape[1])
    t = property(lambda self: int(self.c[kernel.T]))
    arrival = property(lambda self: self.ji[kernel.ARRIVAL])
    deadline = property(lambda self: self.ji[kernel.DEADLINE])
    budget = property(lambda self: self.jf[kernel.BUDGET])
    value = property(lambda self: self.jf[kernel.VALUE])
    lifetime = property(lambda self: self.jf[kernel.LIFETIME])
    spent = property(lambda self: self.jf[kernel.SPENT])
    work = property(lambda self: self.jf[kernel.WORK])
    exhausted = property(lambda self: self.ji[kernel.EXHAUSTED].astype(bool))
    scheduled = property(lambda self: self.ji[kernel.SCHEDULED].astype(bool))
    prices = property(lambda self: self.mf[kernel.PRICE])
    n_obs = property(lambda self: self.mf[kernel.N_OBS])
    sum_obs = property(lambda self: self.mf[kernel.SUM_OBS])
    last_rate = property(lambda self: self.mf[kernel.LAST_RATE])
    last_mask = property(lambda self: self.mi[kernel.LAST_MASK].astype(bool))
    last_assign = property(lambda self: self.executed > 0)
    slot_job = property(lambda self: self.si[kernel.SLOT_JOB])
    is_new = property(lambda self: self.si[kernel.IS_NEW].astype(bool))
    waiting = property(lambda self: self.ji[kernel.WAITING, : self.c[kernel.N_WAITING]].tolist())
    utility_true = property(lambda self: float(self.f[kernel.UTILITY_TRUE]))
    utility_approx = property(lambda self: float(self.f[kernel.UTILITY_APPROX]))
    oracle_accrued = property(lambda self: float(self.f[kernel.ORACLE_ACCRUED]))
    fit_signed = property(lambda self: float(self.f[kernel.FIT_SIGNED]))
    fit_positive = property(lambda self: float(self.f[kernel.FIT_POSITIVE]))
    total_repaired = property(lambda self: int(self.c[kernel.TOTAL_REPAIRED]))
    n_waited = property(lambda self: int(self.c[kernel.N_WAITED]))

    # ------------------------------------------------------------------ stepping
    def step(self, assign: np.ndarray) -> dict[str, float]:
        """Play slot t = self.t + 1 with the proposed (K, M) assignment; return the rewards of the three modes."""
        self.step_action(np.ascontiguousarray(assign, dtype=np.uint8).reshape(-1), kernel.DECODE_MATRIX)
        self.step_info = self.slot_details()
        f = self.f
        rewards = f[[kernel.REWARD_TRUE, kernel.REWARD_APPROX, kernel.REWARD_SPARSE]].tolist()
        return dict(zip(("true", "approx", "sparse"), rewards, strict=True))

    def step_action(self, action: np.ndarray, mode: int) -> None:
        """Play the next slot with a flat action read as ``mode`` (kernel.DECODE_*); rewards land in ``f``.

        Raises ``ValueError`` (and changes nothing) if the action holds NaN, inf, fractions or values out of range.
        """
        rates = self.rates_now = self.instance.rates.rates(self.t + 1)
        count = kernel.step_begin(action, mode, rates, self.record, self.power_in)
        if count < 0:
            if count == kernel.BAD_VALUE:
                raise ValueError("action must hold finite integer values (no NaN, inf or fractions)")
            high = self.si.shape[1] if mode == kernel.DECODE_OCCUPANT else 1
            raise ValueError(f"action values must lie in [0, {high}], got min {action.min()} and max {action.max()}")
        if self.kind == "power":
            np.power(self.power_in[:count], self.beta, out=self.power_out[:count])
        elif self.kind == "log":
            np.log1p(self.power_in[:count], out=self.power_out[:count])
        else:
            self.power_out[:count] = self.power_in[:count]
        kernel.step_end(self.power_out, self.record)

    def occupants(self) -> np.ndarray:
        """(M,) the job slot 1..K each machine ran in the last slot (0: idle) of a one-slot-per-machine step: read
        from the kernel's per-machine record where it kept one, in O(M), else summed from ``executed``."""
        if self.c[kernel.EXEC_SPARSE]:
            return self.mi[kernel.EXEC_SLOT] + 1
        return kernel.occupants(self.executed)

    def slot_details(self) -> dict:
        """Per-slot detail of the last step (the env's full ``info``; the executed tasks are ``executed``)."""
        c = self.c
        ran = self.mi[kernel.LAST_MASK].astype(bool)
        return {
            "slot_work": self.sf[kernel.SLOT_WORK].copy(),
            "slot_cost": self.sf[kernel.SLOT_COST].copy(),
            "rates": self.rates_now,
            "ran": ran,
            "n_invalid": int(c[kernel.N_INVALID]),
            "n_budget_blocked": int(c[kernel.N_BLOCKED]),
            "n_repaired": int(c[kernel.N_REPAIRED]),
            "exhausted_slots": self.si[kernel.EXHAUSTED_NOW].astype(bool),
            "migrations": float(self.f[kernel.MIGRATIONS]),
            "arrivals": list(range(c[kernel.ARRIVALS_FROM], c[kernel.NEXT_ARRIVAL])),
            "departures": self.ji[
                kernel.DEPARTURE_ORDER, c[kernel.DEPARTURES_FROM] : c[kernel.NEXT_DEPARTURE]
            ].tolist(),
        }

    def job_rows(self) -> np.ndarray:
        """The observation's ``jobs`` matrix (K, F): one row per visible job slot, zeros for an empty slot."""
        kernel.write_job_rows(self.rows, self.beta, self.problem.generalized, self.record, self.c[0])
        return self.rows

    def summary(self) -> dict[str, float]:
        """Episode metrics (spec §5.3) over every job of the instance."""
        f = utility(self.kind, self.value, self.beta, self.work)
        with np.errstate(over="ignore"):  # a utility near 0 (e.g. 1e-310) gives an infinite cost/utility: not < 50
            ratio = np.where(f > 0, self.spent / np.where(f > 0, f, 1.0), np.inf)
        consumed = self.spent / self.budget
        c = self.c
        out = {
            "utility": float(f.sum()),
            "utility_approx": self.utility_approx,
            "total_work": float(self.work.sum()),
            "total_cost": float(self.spent.sum()),
            "fit": self.fit_signed,
            "fit_positive": self.fit_positive,
            "mean_migrations": float(self.f[kernel.MIGRATION_SUM]) / max(self.t - 1, 1),
            "n_jobs": float(self.n_jobs),
            "n_exhausted": float(self.exhausted.sum()),
            "n_never_scheduled": float((~self.scheduled).sum()),
            "mean_consumed_budget": float(consumed.mean()),
            "frac_consumed_below_0.9": float((consumed < 0.9).mean()),
            "frac_cost_utility_below_50": float((ratio < 50).mean()),
            "n_invalid": float(c[kernel.TOTAL_INVALID]),
            "n_budget_blocked": float(c[kernel.TOTAL_BLOCKED]),
            "n_repaired": float(c[kernel.TOTAL_REPAIRED]),
            "max_concurrency": float(c[kernel.MAX_CONCURRENCY]),
            "n_waited_slots": float(c[kernel.N_WAITED]),
        }
        if self.opt_per_job is not None:
            out["oracle_total"] = out["benchmark_total"] = float(self.opt_per_job.sum())  # deprecated alias
            out["regret"] = self.oracle_accrued - self.utility_approx
        return out
