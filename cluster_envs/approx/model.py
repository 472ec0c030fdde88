"""The approximation-job model (paper 000) without the step: the public problem (:class:`ApproxProblem`), the
hidden instance and its generators (machine-rate processes and job sources, spec §2.1, §5.2), the utilities,
and the offline optimum of Eq. 7 (spec §4.6).

Machines: i.i.d. rates (Assumption 1) or the paper's Gamma on/off availability model (L677, L691).
Rates are generated lazily in fixed-size chunks from their own stream, so the matrix θ[t, i] is a
function of that stream alone (common random numbers) and a paper-sized horizon never sits in memory.

Jobs: the synthetic Google-like stand-in of spec §5.2.3, the Corollary-1 common-deadline instance,
the single job of Sec. IV, or an explicit list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from cluster_envs.common.guards import Estimate
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.traces import read_table

# Paper's on/off model (L677, L691): period lengths ~ Gamma(shape, scale), rates uniform per period type.
AP_SHAPE, AP_SCALE = 0.34, 94.35
UP_SHAPE, UP_SCALE = 0.19, 39.92
AP_RATE = (0.7, 1.0)
UP_RATE = (0.0, 0.1)
AP_MEAN_LENGTH = AP_SHAPE * AP_SCALE
UP_MEAN_LENGTH = UP_SHAPE * UP_SCALE
STATIONARY_AP = AP_MEAN_LENGTH / (AP_MEAN_LENGTH + UP_MEAN_LENGTH)
AP_RATE_MEAN = sum(AP_RATE) / 2
UP_RATE_MEAN = sum(UP_RATE) / 2
ONOFF_MEAN_RATE = STATIONARY_AP * AP_RATE_MEAN + (1 - STATIONARY_AP) * UP_RATE_MEAN

CHUNK = 512
BETA_CONCENTRATION = 10.0


def onoff_periods(rng: np.random.Generator, n_machines: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Alternating AP/UP renewal processes on [0, horizon] for every machine.

    Returns ``ends`` (M, P), the cumulative end time of each period, and ``is_ap`` (M, P). The first period
    is AP with the stationary probability (spec §5.2.1); each length is a fresh Gamma draw.
    """
    pairs = int(np.ceil(2 * horizon / (AP_MEAN_LENGTH + UP_MEAN_LENGTH))) + 16
    start_ap = rng.random(n_machines) < STATIONARY_AP
    while True:
        ap = rng.gamma(AP_SHAPE, AP_SCALE, size=(n_machines, pairs))
        up = rng.gamma(UP_SHAPE, UP_SCALE, size=(n_machines, pairs))
        first = np.where(start_ap[:, None], ap, up)
        second = np.where(start_ap[:, None], up, ap)
        lengths = np.stack([first, second], axis=2).reshape(n_machines, 2 * pairs)
        ends = np.cumsum(lengths, axis=1)
        if (ends[:, -1] > horizon).all():
            break
        pairs *= 2  # rare: redraw with more periods (the stream stays a function of the seed)
    is_ap = np.zeros((n_machines, 2 * pairs), dtype=bool)
    is_ap[:, 0::2] = start_ap[:, None]
    is_ap[:, 1::2] = ~start_ap[:, None]
    return ends, is_ap


@cached_njit
def ap_time(ends: np.ndarray, is_ap: np.ndarray, times: np.ndarray) -> np.ndarray:
    """A_i(t): the AP time of machine i in [0, t), for every machine and every t in ``times`` -> (len, M).

    Bit for bit the vectorized formulation it replaced: period ends clipped to max(times) + 1 and shifted by
    (max(times) + 2)·i per machine (one sorted array for ``np.searchsorted``), the period holding t found by
    comparing those rounded values, ``cumsum`` of the AP lengths in order. A walk over the periods instead of a
    binary search (``times`` come sorted; an earlier t restarts the walk).
    """
    n_machines, n_periods = ends.shape
    cap = times.max() + 1.0
    out = np.empty((times.size, n_machines))
    ap_before = np.empty(n_periods)  # AP time before period p: cumsum of (length * is_ap) up to p - 1
    for i in range(n_machines):
        offset = (cap + 1.0) * i
        ap_before[0] = 0.0
        total = 0.0
        for p in range(n_periods - 1):
            length = ends[i, p] - (ends[i, p - 1] if p else 0.0)
            total = length * is_ap[i, p] if p == 0 else total + length * is_ap[i, p]
            ap_before[p + 1] = total
        period = 0
        last = -np.inf
        for q in range(times.size):
            query = times[q] + offset
            if query < last:
                period = 0
            last = query
            while period < n_periods and min(ends[i, period], cap) + offset <= query:
                period += 1
            start = ends[i, period - 1] if period else 0.0
            out[q, i] = ap_before[period] + (times[q] - start) * is_ap[i, period]
    return out


@cached_njit
def onoff_rates(ap: np.ndarray, high: np.ndarray, low: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """speed · (f · high + (1 − f) · low) with f the AP share of each slot, ``np.diff(ap, axis=0)`` (numpy's
    operations in numpy's order, fused into one pass)."""
    out = np.empty(high.shape)
    for t in range(high.shape[0]):
        for i in range(high.shape[1]):
            frac = ap[t + 1, i] - ap[t, i]
            out[t, i] = speed[i] * (frac * high[t, i] + (1.0 - frac) * low[t, i])
    return out


@dataclass
class RateProcess:
    """θ_i^t for slots t = 1..T, drawn chunk by chunk from the ``rates`` stream in a fixed order.

    ``means`` are the machines' true mean rates θ_i (the oracle's and the prices' "mean service rate").
    For the on/off model it is the horizon average of the expected rate given the availability periods,
    0.05 + 0.8·A_i(T)/T (ours, spec A15).
    """

    kind: str
    horizon: int
    means: np.ndarray
    speed: np.ndarray
    rng: np.random.Generator
    ends: np.ndarray | None = None
    is_ap: np.ndarray | None = None
    chunk_start: int = 1
    chunk: np.ndarray | None = None

    def rates(self, t: int) -> np.ndarray:
        """θ^t (M,) of slot t (1-based); slots must be requested in increasing order."""
        if self.chunk is None or t >= self.chunk_start + len(self.chunk):
            self.chunk_start = t if self.chunk is None else self.chunk_start + len(self.chunk)
            self.chunk = self._draw(self.chunk_start, min(CHUNK, self.horizon - self.chunk_start + 1))
        return self.chunk[t - self.chunk_start]

    def _draw(self, first: int, count: int) -> np.ndarray:
        m = self.means.size
        if self.kind == "onoff_gamma":
            grid = np.arange(first - 1, first + count, dtype=np.float64)
            ap = ap_time(self.ends, self.is_ap, grid)
            high = self.rng.uniform(*AP_RATE, size=(count, m))
            low = self.rng.uniform(*UP_RATE, size=(count, m))
            return onoff_rates(ap, high, low, self.speed)
        base = self.means / self.speed
        if self.kind == "iid_bernoulli":
            draws = (self.rng.random((count, m)) < base).astype(np.float64)
        elif self.kind == "iid_uniform":
            width = np.minimum(base, 1.0 - base)
            draws = self.rng.uniform(base - width, base + width, size=(count, m))
        else:
            draws = self.rng.beta(base * BETA_CONCENTRATION, (1 - base) * BETA_CONCENTRATION, size=(count, m))
        return self.speed * draws


def make_rate_process(
    kind: str,
    instance_rng: np.random.Generator,
    rates_rng: np.random.Generator,
    n_machines: int,
    horizon: int,
    iid_mean_range: tuple[float, float],
    speed_heterogeneity: float,
) -> RateProcess:
    speed = instance_rng.uniform(1.0 - speed_heterogeneity, 1.0, size=n_machines)
    if kind == "onoff_gamma":
        ends, is_ap = onoff_periods(instance_rng, n_machines, horizon)
        total_ap = ap_time(ends, is_ap, np.array([float(horizon)]))[0]
        means = speed * (UP_RATE_MEAN + (AP_RATE_MEAN - UP_RATE_MEAN) * total_ap / horizon)
        return RateProcess(kind, horizon, means, speed, rates_rng, ends, is_ap)
    means = speed * instance_rng.uniform(*iid_mean_range, size=n_machines)
    return RateProcess(kind, horizon, means, speed, rates_rng)


def model_mean_rate(kind: str, iid_mean_range: tuple[float, float]) -> float:
    """E[θ_i^t / s_i] under the model, before any draw: the on/off model's stationary mean rate, or the middle of
    the i.i.d. mean range (public knowledge of the model)."""
    return ONOFF_MEAN_RATE if kind == "onoff_gamma" else sum(iid_mean_range) / 2


def prior_mean_rate(kind: str, iid_mean_range: tuple[float, float], speed_heterogeneity: float) -> float:
    """The population mean of θ_i implied by the model (public: used by OPM without estimation, A12)."""
    return model_mean_rate(kind, iid_mean_range) * (1.0 - speed_heterogeneity / 2)


@dataclass(frozen=True)
class Jobs:
    """Job data, one entry per job, sorted by (arrival, id): a_j, d_j, B_j, v_j."""

    arrival: np.ndarray
    deadline: np.ndarray
    budget: np.ndarray
    value: np.ndarray

    @property
    def count(self) -> int:
        return self.arrival.size


def synthetic_jobs(
    rng: np.random.Generator,
    *,
    horizon: int,
    n_machines: int,
    mean_price: float,
    load: float,
    lifetime_median: float,
    lifetime_sigma: float,
    q_range: tuple[float, float],
    v_range: tuple[float, float],
    keep_fraction: float,
) -> Jobs:
    """Google-like stand-in (spec §5.2.3): uniform arrivals, log-normal lifetimes, B_j = q_j (d_j − a_j).

    The job count meets the offered load ρ = E[#active]·E[q]/(p̄·M); light load keeps each job with
    probability ``keep_fraction`` (coins drawn for every job, so light instances are subsets of heavy ones).
    """
    pilot_a = rng.integers(0, horizon, size=4096)
    pilot_life = np.maximum(1, np.round(rng.lognormal(np.log(lifetime_median), lifetime_sigma, size=4096)))
    mean_life = float(np.minimum(pilot_a + pilot_life, horizon).mean() - pilot_a.mean())
    mean_q = sum(q_range) / 2
    n_jobs = max(1, int(round(load * n_machines * mean_price * horizon / (mean_q * mean_life))))
    arrival = np.sort(rng.integers(0, horizon, size=n_jobs))
    life = np.maximum(1, np.round(rng.lognormal(np.log(lifetime_median), lifetime_sigma, size=n_jobs)))
    deadline = np.minimum(arrival + np.minimum(life, horizon).astype(np.int64), horizon)  # no int64 overflow
    # then q_j, v_j and the light-load coin flips, drawn as for a trace's windows
    return trace_jobs(rng, arrival=arrival, deadline=deadline, q_range=q_range, v_range=v_range,
                      keep_fraction=keep_fraction)  # fmt: skip


def common_deadline_jobs(
    rng: np.random.Generator,
    *,
    horizon: int,
    n_jobs: int,
    b_range: tuple[float, float],
    v_range: tuple[float, float],
) -> Jobs:
    """Corollary 1 (L641): every job has a_j = 0 and d_j = T, with per-slot budget b_j ~ U[b_range]."""
    b = rng.uniform(*b_range, size=n_jobs)
    value = rng.uniform(*v_range, size=n_jobs)
    return Jobs(np.zeros(n_jobs, dtype=np.int64), np.full(n_jobs, horizon, dtype=np.int64), b * horizon, value)


def single_job(*, horizon: int, n_machines: int, budget_fraction: float) -> Jobs:
    """Sec. IV: one job over the whole horizon, B = ρ·M·T, v = 1."""
    return Jobs(
        np.zeros(1, dtype=np.int64),
        np.full(1, horizon, dtype=np.int64),
        np.array([budget_fraction * n_machines * horizon]),
        np.ones(1),
    )


def read_job_trace(path: str, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Arrival and deadline slots from a CSV ``job_id,a,d`` (spec §5.2.2), header optional.

    Jobs arriving at or after the horizon are dropped; d_j is clipped to the horizon and raised to a_j + 1.
    """
    data = read_table(path, "trace_path", "CSV of job_id,a,d", header=True)
    if data.shape[1] != 3:
        raise ValueError(f"trace_path={path!r} must hold rows job_id,a,d; got shape {data.shape}")
    arrival, deadline = data[:, 1], data[:, 2]
    if not np.isfinite(data).all():
        raise ValueError(f"trace_path={path!r} has NaN or infinite entries")
    if (data[:, 1:] != np.floor(data[:, 1:])).any():  # as for `jobs=` lists: truncating would move the job
        raise ValueError(f"trace_path={path!r}: arrivals and deadlines must be whole slots (a fractional a or d)")
    if (arrival < 0).any() or (deadline < arrival).any():
        raise ValueError(f"trace_path={path!r}: every job needs 0 <= a <= d (a deadline precedes an arrival)")
    keep = arrival < horizon
    if not keep.any():
        raise ValueError(f"trace_path={path!r}: no job arrives before the horizon {horizon}")
    a = arrival[keep].astype(np.int64)
    d = np.maximum(np.minimum(deadline[keep], horizon).astype(np.int64), a + 1)  # clip first: d may exceed int64
    order = np.argsort(a, kind="stable")
    return a[order], d[order]


def trace_jobs(
    rng: np.random.Generator,
    *,
    arrival: np.ndarray,
    deadline: np.ndarray,
    q_range: tuple[float, float],
    v_range: tuple[float, float],
    keep_fraction: float,
) -> Jobs:
    """Trace arrivals and deadlines with q_j, v_j drawn as in the paper (L675) and the light-load coin flips."""
    n = arrival.size
    q = rng.uniform(*q_range, size=n)
    value = rng.uniform(*v_range, size=n)
    keep = rng.random(n) < keep_fraction
    if not keep.any():
        keep[0] = True
    return Jobs(arrival[keep], deadline[keep], (q * (deadline - arrival))[keep], value[keep])


def listed_jobs(jobs: tuple[tuple[float, float, float, float], ...]) -> Jobs:
    """An explicit job list of (a_j, d_j, B_j, v_j), validated by the env config."""
    data = np.asarray(jobs, dtype=np.float64)
    order = np.lexsort((np.arange(len(data)), data[:, 0]))
    data = data[order]
    return Jobs(data[:, 0].astype(np.int64), data[:, 1].astype(np.int64), data[:, 2].copy(), data[:, 3].copy())


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


# The offline oracle of Eq. 7 (spec §4.6): true mean rates, all jobs known, fractional relaxation.
#
# One job (Lemma 4): the optimum is constant in time, the fractional knapsack x* = argmax θ·x s.t. p·x ≤ B/T.
# Many jobs: the segment-aggregated concave program, solved with scipy's SLSQP (exact for the relaxation;
# intended for small instances). ``opt_per_job`` returns OPT_j, the oracle's per-job term of Eq. 6, which
# the env accrues at OPT_j/(d_j − a_j) per active slot so that the cumulative regret ends at Reg_T.
WORK_FLOOR = 1e-9


def fractional_knapsack(means: np.ndarray, prices: np.ndarray, per_slot_budget: float) -> np.ndarray:
    """x* ∈ [0,1]^M maximizing θ·x s.t. p·x ≤ b: machines by θ_i/p_i, the last one fractional."""
    order = np.argsort(-means / prices, kind="stable")
    x = np.zeros_like(means)
    cumulative = np.cumsum(prices[order])
    full = cumulative <= per_slot_budget
    x[order[full]] = 1.0
    n_full = int(full.sum())
    if n_full < means.size:
        spent = cumulative[n_full - 1] if n_full else 0.0
        x[order[n_full]] = (per_slot_budget - spent) / prices[order[n_full]]
    return x


def single_job_opt(kind: str, value: float, beta: float, means, prices, budget: float, horizon: int) -> float:
    """OPT = T f(θ·x*) of one job with a_1 = 0, d_1 = T (Lemma 4; every oracle kind gives the same x*)."""
    x = fractional_knapsack(means, prices, budget / horizon)
    per_slot = float(means @ x)
    return float(horizon * utility(kind, np.array([value]), beta, np.array([per_slot]))[0])


def segments(jobs: Jobs, horizon: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Segment lengths L_s and active sets J_s between consecutive distinct arrival/deadline times."""
    edges = np.unique(np.concatenate([[0, horizon], jobs.arrival, jobs.deadline]))
    lengths, members = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        active = np.flatnonzero((jobs.arrival <= lo) & (jobs.deadline >= hi))
        if active.size:
            lengths.append(hi - lo)
            members.append(active)
    return np.asarray(lengths, dtype=np.float64), members


def multi_job_opt(
    kind: str, beta: float, jobs: Jobs, means: np.ndarray, prices: np.ndarray, horizon: int, oracle_kind: str
) -> np.ndarray:
    """OPT_j for every job: the optimum of the segment-aggregated program scored as in Eq. 6 (or L517)."""
    lengths, members = segments(jobs, horizon)
    m = means.size
    # Variable z[v, i] ∈ [0, 1]: the fraction of machine i's L_s slots given to job j in segment s.
    owner = np.concatenate(members)
    seg_of = np.repeat(np.arange(len(members)), [len(a) for a in members])
    n_var = owner.size
    weight = lengths[seg_of][:, None] * means[None, :]  # work per unit of z
    cost = lengths[seg_of][:, None] * prices[None, :]
    life = (jobs.deadline - jobs.arrival).astype(np.float64)
    value = jobs.value

    def job_work(z):
        return np.bincount(owner, weights=(weight * z).sum(axis=1), minlength=jobs.count)

    def objective(flat):
        z = flat.reshape(n_var, m)
        if oracle_kind == "thm3":
            seg_work = np.maximum((weight * z).sum(axis=1), WORK_FLOOR)
            val = perspective(kind, value[owner], beta, seg_work, lengths[seg_of])
            slope = utility_derivative(kind, value[owner], beta, seg_work / lengths[seg_of])
            return -val.sum(), -(slope[:, None] * weight).ravel()
        x = np.maximum(job_work(z), WORK_FLOOR)
        scale = life if oracle_kind == "eq6" else np.ones_like(life)
        val = perspective(kind, value, beta, x, scale)
        slope = utility_derivative(kind, value, beta, x / scale)
        return -val.sum(), -(slope[owner][:, None] * weight).ravel()

    capacity_rows = np.zeros((len(members) * m, n_var * m))
    for v in range(n_var):
        capacity_rows[seg_of[v] * m + np.arange(m), v * m + np.arange(m)] = 1.0
    budget_rows = np.zeros((jobs.count, n_var * m))
    for v in range(n_var):
        budget_rows[owner[v], v * m : (v + 1) * m] = cost[v]
    a_ub = np.vstack([capacity_rows, budget_rows])
    b_ub = np.concatenate([np.ones(len(members) * m), jobs.budget])
    counts = np.array([len(a) for a in members], dtype=np.float64)
    start = np.minimum(1.0 / counts[seg_of], 1.0)[:, None] * np.ones((1, m))
    spend = np.bincount(owner, weights=(cost * start).sum(axis=1), minlength=jobs.count)
    start *= np.minimum(1.0, 0.5 * jobs.budget / np.maximum(spend, 1e-300))[owner][:, None]
    scale = abs(objective(start.ravel())[0]) + 1.0  # SLSQP's ftol is absolute: solve at unit scale

    def scaled(flat):
        value, grad = objective(flat)
        return value / scale, grad / scale

    result = minimize(
        scaled,
        start.ravel(),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * (n_var * m),
        constraints=[{"type": "ineq", "fun": lambda f: b_ub - a_ub @ f, "jac": lambda f: -a_ub}],
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    z = np.clip(result.x.reshape(n_var, m), 0.0, 1.0)
    if oracle_kind == "thm3":
        seg_val = perspective(kind, value[owner], beta, (weight * z).sum(axis=1), lengths[seg_of])
        return np.bincount(owner, weights=seg_val, minlength=jobs.count)
    return perspective(kind, value, beta, job_work(z), life)


def _closed_form(jobs: Jobs, horizon: int) -> bool:
    """One job spanning the horizon: Lemma 4's closed form, no program."""
    return jobs.count == 1 and jobs.arrival[0] == 0 and jobs.deadline[0] == horizon


# Seconds per SLSQP iteration and squared variable, and the iterations assumed (measured: 27 to 342, maxiter
# 1000), fitted on the benchmark of instances of 24 to 1660 variables on a loaded 2-core machine
# (docs/robustness.md, estimated vs measured).
SLSQP_SECONDS_PER_SQUARED_VARIABLE = 2e-6
SLSQP_ITERATIONS = 100


def oracle_estimate(jobs: Jobs, horizon: int, n_machines: int) -> Estimate:
    """The peak allocation and run time of :func:`opt_per_job` on ``jobs``, without solving.

    Memory, in float64: the dense constraint matrix (built from two blocks, then its negated copy as SLSQP's
    Jacobian and SLSQP's own copy: four m x n arrays) and SLSQP's work buffer (scipy's formula, about 8.5 n² +
    3 m n); time: a fitted cost per iteration and squared variable (the solver's dense updates), times a typical
    iteration count."""
    if _closed_form(jobs, horizon):
        return Estimate(0.0, 0.0, "one job over the horizon: closed form")
    lengths, members = segments(jobs, horizon)
    n = float(sum(len(a) for a in members) * n_machines)
    m = float(len(members) * n_machines + jobs.count)
    buffer = n * (n + 1) / 2 + 3 * m * n + 9 * m + 8 * n * n + 35 * n + 28
    memory = 8.0 * (buffer + 4 * m * n)
    seconds = SLSQP_SECONDS_PER_SQUARED_VARIABLE * SLSQP_ITERATIONS * n * n
    return Estimate(memory, seconds, f"{int(n)} variables (job-segment pairs x machines), {int(m)} constraints")


def opt_per_job(
    kind: str, beta: float, jobs: Jobs, means: np.ndarray, prices: np.ndarray, horizon: int, oracle_kind: str
) -> np.ndarray:
    """OPT_j of every job (closed form for one job spanning the horizon, else the convex program)."""
    if _closed_form(jobs, horizon):
        return np.array([single_job_opt(kind, jobs.value[0], beta, means, prices, jobs.budget[0], horizon)])
    return multi_job_opt(kind, beta, jobs, means, prices, horizon, oracle_kind)
