"""Approximation jobs on machines of unknown, varying speed (paper 000) as plain numpy, without gymnasium.

Machine i delivers θ_i^t ∈ [0, 1] work in slot t and costs p_i per slot of use. Job j is active in slots
a_j < t ≤ d_j, has budget B_j and utility f_j(X_j) of its total work. Each slot the scheduler gives every
machine to at most one visible job (Eq. 3); it observes θ_i^t only on machines that ran a task
(semi-bandit feedback). The env (env.py) and the test runners step :class:`ApproxSimulator`.

Slot semantics follow spec §3.3: invalid proposals idle, then the hard budget check of Alg. 1 lines 7-12
(strict C_j + Σ_{i≤k} p_i < B_j in machine-index order; the first failure exhausts the job for good),
then the work is realised, feedback recorded, rewards and metrics updated, departures and arrivals
processed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster_envs.approx.workloads import Jobs, RateProcess

UTILITIES = ("power", "log", "linear")
JOB_FIELDS = (
    "present",
    "is_new",
    "value",
    "beta",
    "budget",
    "spent",
    "remaining_budget",
    "budget_per_slot",
    "elapsed",
    "remaining_slots",
    "work",
    "lifetime",
)
GENERALIZED_FIELDS = ("demand", "parallelism")


def utility(kind: str, value: np.ndarray, beta: float, work: np.ndarray) -> np.ndarray:
    """f_j(X) = v X^β (power), v log(1 + X) (log) or v X (linear); f(0) = 0."""
    work = np.asarray(work, dtype=np.float64)
    if kind == "power":
        return value * np.power(work, beta)
    if kind == "log":
        return value * np.log1p(work)
    return value * work


def utility_derivative(kind: str, value: np.ndarray, beta: float, y: np.ndarray) -> np.ndarray:
    """f_j'(y); for the power utility the caller floors y (A11: f'(0) = ∞)."""
    y = np.asarray(y, dtype=np.float64)
    if kind == "power":
        return value * beta * np.power(y, beta - 1.0)
    if kind == "log":
        return value / (1.0 + y)
    return value * np.ones_like(y)


def perspective(kind: str, value: np.ndarray, beta: float, work: np.ndarray, length: np.ndarray) -> np.ndarray:
    """h = L·f(X/L), the time-averaged utility of Eq. 6/9 (0 where L = 0)."""
    length = np.asarray(length, dtype=np.float64)
    safe = np.where(length > 0, length, 1.0)
    return np.where(length > 0, safe * utility(kind, value, beta, work / safe), 0.0)


@dataclass(frozen=True)
class ApproxProblem:
    """The static public data a scheduler is given.

    Job data are not here: a job's a_j, d_j, B_j, v_j (and r_j, u_j) are revealed on arrival, through the
    observation's ``jobs`` rows. ``rate_prior_mean`` is the population mean rate of the machine model
    (public knowledge of the model; OPM without estimation uses it, A12).
    """

    n_machines: int
    horizon: int
    max_visible_jobs: int
    single_job: bool
    utility: str
    beta: float
    prices: tuple[float, ...]
    budget_mode: str
    rate_prior_mean: float
    capacity: tuple[int, ...] | None = None

    @property
    def price_array(self) -> np.ndarray:
        return np.asarray(self.prices, dtype=np.float64)

    @property
    def generalized(self) -> bool:
        return self.capacity is not None

    @property
    def job_fields(self) -> tuple[str, ...]:
        return JOB_FIELDS + (GENERALIZED_FIELDS if self.generalized else ())


@dataclass
class Instance:
    """The hidden part of an episode: jobs, true mean rates, the rate process (for oracles and evaluation)."""

    jobs: Jobs
    prices: np.ndarray
    rates: RateProcess
    demand: np.ndarray
    parallelism: np.ndarray
    capacity: np.ndarray

    @property
    def means(self) -> np.ndarray:
        return self.rates.means


def repair(
    assign: np.ndarray,
    slot_job: np.ndarray,
    demand: np.ndarray,
    parallelism: np.ndarray,
    capacity: np.ndarray,
) -> int:
    """Sec. V-C repair in place (spec §3.10): capacity by dropping the highest slots, then parallelism.

    Returns the number of dropped tasks.
    """
    jobs = slot_job >= 0
    r = np.where(jobs, demand[np.maximum(slot_job, 0)], 0.0)
    load = r[:, None] * assign
    over = load.sum(axis=0) > capacity + 1e-12
    dropped = 0
    for i in np.flatnonzero(over):
        for k in np.flatnonzero(assign[:, i])[::-1]:
            if load[:, i].sum() <= capacity[i] + 1e-12:
                break
            assign[k, i] = False
            load[k, i] = 0.0
            dropped += 1
    u = np.where(jobs, parallelism[np.maximum(slot_job, 0)], assign.shape[1])
    for k in np.flatnonzero(assign.sum(axis=1) > u):
        machines = np.flatnonzero(assign[k])
        assign[k, machines[u[k] :]] = False
        dropped += machines.size - int(u[k])
    return dropped


def budget_check(assign: np.ndarray, prices: np.ndarray, spent: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Alg. 1 lines 7-12 per row (A4): keep machine k iff spent + Σ_{i≤k} p_i x^i < budget."""
    cumulative = np.cumsum(assign * prices, axis=1)
    return assign & (spent[:, None] + cumulative < budget[:, None])


class ApproxSimulator:
    """State of one episode, stepped by proposed assignments ``assign`` (K, M) bool (row k = job slot k)."""

    def __init__(self, problem: ApproxProblem, instance: Instance, *, budget_mode: str, opt_per_job: np.ndarray | None):
        self.problem = problem
        self.instance = instance
        self.budget_mode = budget_mode
        jobs = instance.jobs
        self.kind, self.beta = problem.utility, problem.beta
        self.arrival, self.deadline = jobs.arrival, jobs.deadline
        self.budget, self.value = jobs.budget, jobs.value
        self.lifetime = (jobs.deadline - jobs.arrival).astype(np.float64)
        self.prices = instance.prices
        n, m, k = jobs.count, problem.n_machines, problem.max_visible_jobs
        self.opt_per_job = opt_per_job
        self.t = 0
        self.spent = np.zeros(n)
        self.work = np.zeros(n)
        self.exhausted = np.zeros(n, dtype=bool)
        self.surrogate = np.zeros(n)  # h_j(t) of the approx reward
        self.slot_job = np.full(k, -1, dtype=np.int64)
        self.is_new = np.zeros(k, dtype=bool)
        self.waiting: list[int] = []
        self.next_arrival = 0
        self.departure_order = np.argsort(jobs.deadline, kind="stable")
        self.next_departure = 0
        self.n_obs = np.zeros(m)
        self.sum_obs = np.zeros(m)
        self.last_rate = np.zeros(m)
        self.last_mask = np.zeros(m, dtype=bool)
        self.last_assign = np.zeros((k, m), dtype=bool)
        self.last_job = np.full(m, -1, dtype=np.int64)  # global id of the executed occupant (migrations)
        self.utility_true = 0.0
        self.utility_approx = 0.0
        self.benchmark_accrued = 0.0
        self.fit_signed = 0.0
        self.fit_positive = 0.0
        self.migration_sum = 0.0
        self.total_invalid = 0
        self.total_blocked = 0
        self.total_repaired = 0
        self.max_concurrency = 0
        self.n_waited = 0
        self.scheduled = np.zeros(n, dtype=bool)
        self.step_info: dict = {}
        self._admit(0)

    @property
    def horizon(self) -> int:
        return self.problem.horizon

    @property
    def n_jobs(self) -> int:
        return self.arrival.size

    def visible_mask(self) -> np.ndarray:
        return self.slot_job >= 0

    def step(self, assign: np.ndarray) -> dict[str, float]:
        """Play slot t = self.t + 1 with the proposed assignment; return the rewards of the three modes."""
        t = self.t + 1
        occupied = self.slot_job >= 0
        n_invalid = int(assign[~occupied].sum())
        assign = assign & occupied[:, None]
        n_repaired = 0
        if self.problem.generalized:
            n_repaired = repair(
                assign, self.slot_job, self.instance.demand, self.instance.parallelism, self.instance.capacity
            )
        jobs_k = np.maximum(self.slot_job, 0)
        if self.budget_mode == "hard":
            executed = budget_check(
                assign,
                self.prices,
                np.where(occupied, self.spent[jobs_k], 0.0),
                np.where(occupied, self.budget[jobs_k], np.inf),
            )
            blocked = assign & ~executed
            newly_exhausted = blocked.any(axis=1)
        else:
            executed = assign
            blocked = np.zeros_like(assign)
            newly_exhausted = np.zeros(assign.shape[0], dtype=bool)
        rates = self.instance.rates.rates(t)
        slot_work = executed @ rates
        slot_cost = executed @ self.prices
        ran = executed.any(axis=0)
        exhausted_before = self.exhausted.copy()
        old_work = self.work.copy()
        ids = self.slot_job[occupied]
        self.work[ids] += slot_work[occupied]
        self.spent[ids] += slot_cost[occupied]
        self.exhausted[self.slot_job[newly_exhausted]] = True
        self.scheduled[self.slot_job[executed.any(axis=1)]] = True

        self.n_obs += ran
        self.sum_obs += np.where(ran, rates, 0.0)
        self.last_rate = np.where(ran, rates, 0.0)
        self.last_mask = ran
        self.last_assign = executed

        job_now = np.full(ran.size, -1, dtype=np.int64)
        machine_slot, machine = np.nonzero(executed)
        job_now[machine] = self.slot_job[machine_slot]  # base model: one occupant per machine
        prev = self.last_job
        prev_ok = prev >= 0
        prev_ids = np.maximum(prev, 0)
        still = prev_ok & (self.arrival[prev_ids] < t) & (t <= self.deadline[prev_ids]) & ~exhausted_before[prev_ids]
        migrations = float((still & (job_now != prev)).sum()) / ran.size
        if t >= 2:
            self.migration_sum += migrations
        self.last_job = job_now

        changed = np.flatnonzero(self.work != old_work)
        true_reward = float(
            (
                utility(self.kind, self.value[changed], self.beta, self.work[changed])
                - utility(self.kind, self.value[changed], self.beta, old_work[changed])
            ).sum()
        )
        self.utility_true += true_reward
        active = np.flatnonzero((self.arrival < t) & (t <= self.deadline))
        new_surrogate = perspective(
            self.kind, self.value[active], self.beta, self.work[active], t - self.arrival[active]
        )
        approx_reward = float((new_surrogate - self.surrogate[active]).sum())
        self.surrogate[active] = new_surrogate
        self.utility_approx += approx_reward
        if self.opt_per_job is not None:
            self.benchmark_accrued += float((self.opt_per_job[active] / self.lifetime[active]).sum())

        departures = self._depart(t)
        sparse_reward = float(utility(self.kind, self.value[departures], self.beta, self.work[departures]).sum())
        exhausted_slots = newly_exhausted.copy()
        for k in np.flatnonzero(occupied):
            if self.deadline[self.slot_job[k]] <= t or self.exhausted[self.slot_job[k]]:
                self.slot_job[k] = -1
        self.is_new[:] = False
        arrivals = self._admit(t)
        self.t = t
        self.total_invalid += n_invalid
        self.total_blocked += int(blocked.sum())
        self.total_repaired += n_repaired
        self.step_info = {
            "slot_work": slot_work,
            "slot_cost": slot_cost,
            "executed": executed,
            "rates": rates,
            "ran": ran,
            "n_invalid": n_invalid,
            "n_budget_blocked": int(blocked.sum()),
            "n_repaired": n_repaired,
            "exhausted_slots": exhausted_slots,
            "migrations": migrations,
            "arrivals": arrivals,
            "departures": [int(j) for j in departures],
        }
        return {"true": true_reward, "approx": approx_reward, "sparse": sparse_reward}

    def _depart(self, t: int) -> np.ndarray:
        start = self.next_departure
        order = self.departure_order
        while self.next_departure < order.size and self.deadline[order[self.next_departure]] <= t:
            self.next_departure += 1
        leaving = order[start : self.next_departure]
        overrun = self.spent[leaving] - self.budget[leaving]
        self.fit_signed += float(overrun.sum())
        self.fit_positive += float(np.maximum(overrun, 0.0).sum())
        return leaving

    def _admit(self, t: int) -> list[int]:
        """Jobs with a_j = t join the FIFO queue; queued jobs take the lowest free slots (spec §3.3)."""
        arrivals = []
        while self.next_arrival < self.n_jobs and self.arrival[self.next_arrival] <= t:
            arrivals.append(self.next_arrival)
            self.next_arrival += 1
        self.waiting.extend(arrivals)
        self.waiting = [j for j in self.waiting if self.deadline[j] > t]
        free = np.flatnonzero(self.slot_job < 0)
        placed = min(free.size, len(self.waiting))
        if len(self.waiting) > placed:
            self.n_waited += len(self.waiting) - placed
        for k, j in zip(free[:placed], self.waiting[:placed], strict=True):
            self.slot_job[k] = j
            self.is_new[k] = True
        self.waiting = self.waiting[placed:]
        self.max_concurrency = max(self.max_concurrency, int((self.slot_job >= 0).sum()) + len(self.waiting))
        return arrivals

    def job_rows(self) -> np.ndarray:
        """The observation's ``jobs`` matrix (K, F): one row per visible job slot, zeros for an empty slot."""
        k = self.slot_job.size
        rows = np.zeros((k, len(self.problem.job_fields)))
        occupied = self.slot_job >= 0
        j = self.slot_job[occupied]
        t = self.t
        rows[occupied] = np.column_stack(
            [
                np.ones(j.size),
                self.is_new[occupied],
                self.value[j],
                np.full(j.size, self.beta),
                self.budget[j],
                self.spent[j],
                self.budget[j] - self.spent[j],
                self.budget[j] / self.lifetime[j],
                t - self.arrival[j],
                self.deadline[j] - t,
                self.work[j],
                self.lifetime[j],
            ]
            + ([self.instance.demand[j], self.instance.parallelism[j]] if self.problem.generalized else [])
        )
        return rows

    def summary(self) -> dict[str, float]:
        """Episode metrics (spec §5.3) over every job of the instance."""
        f = utility(self.kind, self.value, self.beta, self.work)
        ratio = np.where(f > 0, self.spent / np.where(f > 0, f, 1.0), np.inf)
        consumed = self.spent / self.budget
        out = {
            "utility": float(f.sum()),
            "utility_approx": self.utility_approx,
            "total_work": float(self.work.sum()),
            "total_cost": float(self.spent.sum()),
            "fit": self.fit_signed,
            "fit_positive": self.fit_positive,
            "mean_migrations": self.migration_sum / max(self.t - 1, 1),
            "n_jobs": float(self.n_jobs),
            "n_exhausted": float(self.exhausted.sum()),
            "n_never_scheduled": float((~self.scheduled).sum()),
            "mean_consumed_budget": float(consumed.mean()),
            "frac_consumed_below_0.9": float((consumed < 0.9).mean()),
            "frac_cost_utility_below_50": float((ratio < 50).mean()),
            "n_invalid": float(self.total_invalid),
            "n_budget_blocked": float(self.total_blocked),
            "n_repaired": float(self.total_repaired),
            "max_concurrency": float(self.max_concurrency),
            "n_waited_slots": float(self.n_waited),
        }
        if self.opt_per_job is not None:
            out["benchmark_total"] = float(self.opt_per_job.sum())
            out["regret"] = self.benchmark_accrued - self.utility_approx
        return out
