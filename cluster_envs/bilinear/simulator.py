"""The bilinear parallel-server queueing model of Kim & Vojnović (paper 004), without gymnasium.

I job classes, J server classes with n_j servers each. At most one job arrives per slot. Every
slot the scheduler gives an expected allocation y (I × J, column sums ≤ n_j); each server of class j
then independently selects a waiting class-i job with probability y_ij/(n_j Q_i) or idles (Alg. 1,
[L134–143]). A selection of a class-i job by a class-j server yields the reward ξ = r_ij + noise and
completes the job with probability μ_i (geometric service). Under ``service_model="paper"`` several
servers may select one job and each selection is paid and may complete it (eq. 22); under
``"exclusive"`` the servers are processed in a random order and a server whose job is already taken
idles (a collision). The env (env.py) and the batched env (vector_env.py) step the compiled slot of
kernel.py, the single env through :class:`BilinearSimulator`.

Common random numbers: every slot draws a fixed number of uniforms and normals per server from its
own streams (``assign``, ``service``, ``noise``), so two policies facing one seed see the same
per-server noise and service coins; only ``choice`` (distinct-job draws of ``server_choice``) is
consumed in action-dependent amounts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.config import REWARD_MODES
from cluster_envs.common.pcg import state_row

INITIAL_JOB_SLOTS = 64  # waiting-job capacity at reset; doubled whenever an arrival would not fit
ONE = np.ones(1, dtype=bool)  # the stepping mask of a simulator's one copy
NO_ACTION = np.zeros((1, 0))  # the kernel's action argument where the allocation is given as y
# the simulator's arrays (first axis: the copy): per copy, and the job arrays (their second axis grows)
JOB_ARRAYS = ("jobs", "job_stats", "scratch")
# the slot's scratch and results, which the kernel keeps in row 0 whatever the copy (a batch shares one row)
SHARED_ARRAYS = ("draws", "servers", "classes", "scratch", "work")
ARRAYS = ("r", "arrivals", "rng", "counters", "draws", "servers", "slot_stats", "classes", "stats", "work", "obs",
          *JOB_ARRAYS)  # fmt: skip
ASSIGNMENT_DTYPE = np.dtype(
    [
        ("job_id", np.int64),
        ("job_class", np.int64),
        ("server_class", np.int64),
        ("server_index", np.int64),
        ("reward", np.float64),
    ]
)


def simplex_cap(x: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of finite x ≥ 0 onto {x ≥ 0, Σx ≤ radius} (one column of :func:`project_allocation`)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    return project_allocation(x[:, None], np.ones(x.size), np.array([float(radius)]))[:, 0]


def project_allocation(y: np.ndarray, active: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Column-capped projection (spec §3.3): rows of empty queues to 0, each column onto Σ_i y_ij ≤ n_j
    (:func:`~.kernel.project`)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    n_rows, n_cols = y.shape
    work = np.zeros((1, kernel.work_size(n_rows, n_cols, 0)))
    work[0, :n_cols], work[0, n_cols : n_cols + n_rows] = caps, np.asarray(active, dtype=np.float64)
    kernel.project(y.reshape(1, -1), work, 0, n_rows, n_cols)
    out = n_cols + n_rows
    return work[0, out : out + n_rows * n_cols].reshape(n_rows, n_cols).copy()


def logits_to_allocation(logits: np.ndarray, active: np.ndarray, caps: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(J, I+1) logits, the last one "idle": y_ij = n_j softmax(scale·logits) over {active classes, idle} (§3.3),
    as (I, J). Leading axes are a batch (logits (..., J, I+1), active (..., I) -> (..., I, J)), computed with the
    same operations per copy. The single env computes the same operations in its step (the exponents by
    :func:`~cluster_envs.bilinear.kernel.softmax_exponents`, numpy's exponential, the rest in the slot's kernel,
    kind ``SOFTMAX``), so the batched env's allocations, made here, equal the single env's bit for bit.

    ``scale`` multiplies after the max is subtracted, so finite logits of any size cannot overflow to NaN.
    """
    logits = np.ascontiguousarray(logits, dtype=np.float64)
    lead, (n_cols, width) = logits.shape[:-2], logits.shape[-2:]
    z = kernel.shifted_logits(logits.reshape(-1, n_cols, width), np.asarray(active).reshape(-1, width - 1), scale)
    np.exp(z, out=z)  # ≤ 0 exponents: no overflow; a gap beyond the float max was -inf, exp(-inf) = 0
    y = kernel.softmax_allocation(z, z.sum(axis=-1), np.asarray(caps, dtype=np.float64))
    return y.reshape(*lead, width - 1, n_cols)


@dataclass
class SlotResult:
    """What happened in one slot (expected allocation, realised selections, rewards, departures)."""

    queue: np.ndarray  # Q(t), pre-decision
    y: np.ndarray  # expected allocation used (I, J)
    counts: np.ndarray  # N_ij realised selections (I, J)
    reward_sums: np.ndarray  # Σ ξ per (i, j)
    departures: np.ndarray  # D(t) per class
    arrivals: np.ndarray  # A(t+1) per class
    assignments: np.ndarray  # one row per paid selection (ASSIGNMENT_DTYPE)
    n_duplicates: int
    n_collisions: int
    reward_noisy: float
    reward_mean: float
    reward_expected: float
    reward_served: float  # Σ r_ij E[N_ij | Q, y]: eq. 1's reward on the served allocation (served.py)


class BilinearSimulator:
    """The queueing system of one episode, stepped by the compiled :func:`~cluster_envs.bilinear.kernel.slot_batch`.

    Holds the waiting jobs, the pre-drawn arrivals, the streams' PCG64 states and the last slot's results in
    the arrays :mod:`cluster_envs.bilinear.kernel` describes: ``arrays`` maps each name in ``ARRAYS`` to an
    array whose first axis is the copy, and this simulator is copy ``row`` (its own arrays hold one copy; the
    batched env :meth:`bind` s every copy's simulator to the rows of its batch arrays). The attributes of the same
    names are the copy's rows. ``costs``, ``kappa``, ``gamma_env``, ``reward_mode`` and ``max_visible_jobs`` (-1: no
    per-job view) only shape the per-slot statistics and the reward in ``stats``.
    """

    def __init__(
        self,
        r: np.ndarray,
        mu: np.ndarray,
        caps: np.ndarray,
        noise_std: float,
        service_model: str,
        arrivals: np.ndarray,
        streams: dict[str, np.random.Generator],
        schedule: np.ndarray | None = None,
        *,
        costs: np.ndarray | None = None,
        kappa: float = 0.0,
        gamma_env: float = 0.0,
        reward_mode: str = "noisy",
        max_visible_jobs: int = -1,
    ):
        self.mu, self.noise_std, self.service_model = mu, noise_std, service_model
        self.n_job, self.n_server_class = r.shape
        self.caps = np.asarray(caps, dtype=np.int64)
        self.caps_nominal = self.caps.astype(np.float64)
        # per server (class-major): its class and its index within the class
        self.server_ids = np.stack([np.repeat(np.arange(self.n_server_class), self.caps),
                                    np.concatenate([np.arange(c) for c in self.caps])])  # fmt: skip
        self.server_class, self.server_index = self.server_ids
        self.streams = streams  # "choice" is drawn here (server_choice); the others by the kernel from ``rng``
        self.schedule = np.asarray(self.caps[None, :] if schedule is None else schedule, dtype=np.int64)
        self.costs = np.zeros(self.n_job) if costs is None else np.asarray(costs, dtype=np.float64)
        self.exclusive = service_model == "exclusive"
        self.kappa, self.gamma_env, self.max_visible_jobs = float(kappa), float(gamma_env), int(max_visible_jobs)
        self.reward_mode = REWARD_MODES.index(reward_mode)
        self._r_star, self._reward, self._status = np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64)
        n, n_i, n_j = self.n_servers, self.n_job, self.n_server_class
        arrivals = np.asarray(arrivals, dtype=np.int64)  # class arriving at the start of slot t (-1: none)
        slots = min(len(arrivals), INITIAL_JOB_SLOTS)
        arrays = {
            "r": np.asarray(r, dtype=np.float64)[None],
            "arrivals": arrivals[None],
            "rng": np.stack([state_row(streams[name]) for name in ("assign", "service", "noise")])[None],
            "counters": np.zeros((1, kernel.COUNTERS), dtype=np.int64),
            "draws": np.zeros((1, kernel.DRAW_ROWS, n)),
            "servers": np.zeros((1, kernel.SERVER_ROWS, n), dtype=np.int64),
            "slot_stats": np.zeros((1, kernel.SLOT_ROWS, n_i, n_j)),
            "classes": np.zeros((1, kernel.CLASS_ROWS, n_i), dtype=np.int64),
            "stats": np.zeros((1, kernel.STATS)),
            "work": np.zeros((1, kernel.work_size(n_i, n_j, n))),
            "obs": np.zeros((1, n_i * (1 + 2 * n_j)), dtype=np.float32),
            **self.job_arrays(1, slots),
        }
        self.bind(arrays, 0)
        self.stats_obs: np.ndarray | None = None  # the queues_stats / full observation, once observe_stats is called
        self._stats_args: tuple = ()
        self.set_jobs(self.arrivals[:1][self.arrivals[:1] >= 0])  # Q(1) = A(1)

    def _write_stats(self) -> None:
        log_table, features, horizon = self._stats_args
        kernel.write_stats_observation(self.record, self.stats_obs, log_table, horizon, features)

    def observe_stats(self, log_table: np.ndarray, horizon: int, features: np.ndarray) -> None:
        """From now on write the ``queues_stats`` (empty ``features``) or ``full`` observation (u and v as
        ``features``) into ``stats_obs`` (float32) at every slot, in the slot's compiled call; ``log_table``: numpy's
        ``log1p`` of 0, 1, ... up to the largest count N_ij the episode can reach
        (:func:`~cluster_envs.bilinear.kernel.write_stats_observation`)."""
        size = self.obs.size + 1 + 2 * self.n_job * self.n_server_class + features.size
        self.stats_obs = np.empty(size, dtype=np.float32)
        self._stats_args = (log_table, np.ascontiguousarray(features, dtype=np.float64), int(horizon))
        self._write_stats()

    def job_arrays(self, copies: int, slots: int) -> dict[str, np.ndarray]:
        """Empty job arrays (``JOB_ARRAYS``) of ``copies`` copies with room for ``slots`` waiting jobs."""
        return {
            "jobs": np.zeros((copies, 2, slots), dtype=np.int64),
            "job_stats": np.zeros((copies, 2, slots, self.n_server_class)),
            "scratch": np.zeros((1, 2, slots + self.n_job), dtype=np.int64),  # shared (SHARED_ARRAYS)
        }

    def bind(self, arrays: dict[str, np.ndarray], row: int) -> None:
        """Make this simulator copy ``row`` of ``arrays`` (name -> array whose first axis is the copy)."""
        self.arrays, self.row = arrays, row
        for name in ARRAYS:
            setattr(self, name, arrays[name][0 if name in SHARED_ARRAYS else row])
        # the kernel's record: the batch arrays, and this simulator's model constants
        fields = {name: arrays[name] if name in arrays else getattr(self, name) for name in kernel.BATCH_FIELDS}
        self.record = kernel.batch_record(**fields)

    def __getstate__(self) -> dict:
        """Without the rows (views, which pickle and deepcopy would turn into copies): :meth:`__setstate__` binds
        them again."""
        state = self.__dict__.copy()
        for name in (*ARRAYS, "record"):
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.bind(self.arrays, self.row)

    def resize_jobs(self, slots: int) -> None:
        """Reallocate this copy's job arrays for ``slots`` waiting jobs (at least the current count), keeping them
        (a simulator of its own arrays; the batched env grows its batch arrays itself)."""
        count = self.counters[kernel.N_JOBS]
        grown = self.job_arrays(1, slots)
        grown["jobs"][0, :, :count], grown["job_stats"][0, :, :count] = self.jobs[:, :count], self.job_stats[:, :count]
        self.bind({**self.arrays, **grown}, 0)

    def reserve(self) -> None:
        """Make room for one more waiting job (the arrival of the next slot)."""
        if self.counters[kernel.N_JOBS] >= self.jobs.shape[1]:
            self.resize_jobs(2 * self.jobs.shape[1])

    def set_jobs(self, classes: np.ndarray) -> None:
        """Replace the waiting jobs by fresh ones of the given classes (ids 0, 1, ...; for tests and reset)."""
        classes = np.asarray(classes, dtype=np.int64)
        if classes.size > self.jobs.shape[1]:
            self.resize_jobs(classes.size)
        self.jobs[0, : classes.size], self.jobs[1, : classes.size] = classes, np.arange(classes.size)
        self.job_stats[:, : classes.size] = 0.0
        self.counters[kernel.N_JOBS] = self.counters[kernel.NEXT_ID] = classes.size
        # the observation's Q (which the simplex_logits softmax reads) follows the jobs
        arrays = self.arrays
        kernel.write_observation(arrays["jobs"], arrays["counters"], arrays["slot_stats"], arrays["obs"], self.row)
        if self.stats_obs is not None:
            self._write_stats()

    @property
    def t(self) -> int:
        return int(self.counters[kernel.T])

    @property
    def n_servers(self) -> int:
        return int(self.caps.sum())

    @property
    def job_class(self) -> np.ndarray:
        return self.jobs[0, : self.counters[kernel.N_JOBS]]

    @property
    def job_id(self) -> np.ndarray:
        return self.jobs[1, : self.counters[kernel.N_JOBS]]

    @property
    def job_counts(self) -> np.ndarray:
        return self.job_stats[0, : self.counters[kernel.N_JOBS]]

    @property
    def job_reward_sums(self) -> np.ndarray:
        return self.job_stats[1, : self.counters[kernel.N_JOBS]]

    def caps_now(self) -> np.ndarray:
        """n_j(t) of the slot about to run (``server_schedule`` or the fixed counts)."""
        return self.schedule[min(self.t, len(self.schedule) - 1)]

    def queue(self) -> np.ndarray:
        return np.bincount(self.job_class, minlength=self.n_job)

    def _run(self, kind: int, action: np.ndarray, r_star: float) -> bool:
        """One slot; ``action``: the kernel's action, one row (a simulator of its own arrays: a batch steps the
        simulators bound to it)."""
        if self.stats_obs is not None:
            while (status := kernel.slot_observed(kind, action, r_star, self.record, self.stats_obs,
                                                  *self._stats_args)) == kernel.FULL:  # fmt: skip
                self.reserve()
            return status == kernel.DONE
        self._r_star[0] = r_star
        while True:
            kernel.slot_batch(kind, action, ONE, self._r_star, self._reward, self._status, self.record)
            if self._status[0] != kernel.FULL:
                return self._status[0] == kernel.DONE
            self.reserve()

    def step_fractions(self, fractions: np.ndarray, r_star: float = 0.0) -> bool:
        """Run one slot with allocation fractions a_ij = y_ij/n_j (flat, row-major), projected onto the feasible
        set (spec §3.3). Returns False, changing nothing, if a fraction is not finite."""
        return self._run(kernel.ALLOCATION, fractions.reshape(1, -1), r_star)

    def step_classes(self, y: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot with a feasible class-level expected allocation y (I, J)."""
        self.run_classes(y, r_star)
        return self.result()

    def run_classes(self, y: np.ndarray, r_star: float = 0.0) -> None:
        """:meth:`step_classes` without building its :class:`SlotResult` (the env's step reads the arrays)."""
        self.slot_stats[kernel.Y] = y
        self._run(kernel.CLASSES, NO_ACTION, r_star)

    def step_softmax(self, weights: np.ndarray, r_star: float = 0.0) -> None:
        """Run one slot with y_ij = n_j(t) w_ji / Σ_i' w_ji' from the (1, J·(I + 1)) exponentials ``weights`` of a
        ``simplex_logits`` softmax (:func:`~cluster_envs.bilinear.kernel.softmax_exponents`, then ``np.exp``; the
        idle entry of each server class last): :func:`logits_to_allocation` and :meth:`run_classes` in one call."""
        self._run(kernel.SOFTMAX, weights, r_star)

    def step_jobs(self, x: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot with a feasible per-job allocation x (K, J) over the waiting jobs in FIFO order."""
        self._run(kernel.JOBS, np.ascontiguousarray(x, dtype=np.float64).reshape(1, -1), r_star)
        return self.result()

    def step_servers(self, choices: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot where server s (class-major order) picks class ``choices[s]`` (I = idle).

        Servers choosing one class get distinct jobs, drawn uniformly without replacement; once the
        class runs out, extra servers duplicate a uniform job ("paper") or idle as collisions ("exclusive").
        """
        self.reserve()
        kernel.begin_slot(NO_ACTION, self.record, self.row)
        q, order, pick = self.classes[kernel.QUEUE], self.servers[kernel.ORDER], self.draws[kernel.PICK]
        available = self.server_index < self.caps_now()[self.server_class]
        choices = np.where(available & (choices < self.n_job), choices, self.n_job)
        choices = np.where(np.append(q, 0)[choices] > 0, choices, self.n_job)  # an empty class means idle
        y = self.slot_stats[kernel.Y]
        y[:] = 0.0
        busy = choices < self.n_job
        np.add.at(y, (choices[busy], self.server_class[busy]), 1.0)
        job = self.servers[kernel.JOB]
        job[:] = -1
        collisions = 0
        for i in np.unique(choices[busy]):
            servers = order[choices[order] == i]
            members = np.flatnonzero(self.job_class == i)
            take = min(len(servers), len(members))
            job[servers[:take]] = self.streams["choice"].permutation(members)[:take]
            extra = servers[take:]
            if self.service_model == "paper":
                job[extra] = members[np.minimum((pick[extra] * len(members)).astype(np.int64), len(members) - 1)]
            else:
                collisions += len(extra)
        self.counters[kernel.COLLISIONS] = collisions
        # eq. 1's served allocation: under "exclusive" a uniform random `take` of the servers on a class serve
        served = y * np.minimum(1.0, q / np.maximum(y.sum(axis=1), 1.0))[:, None] if self.exclusive else y
        self.stats[kernel.REWARD_SERVED] = float((self.r * served).sum())
        kernel.end_slot(self.record, r_star, self.row)
        if self.stats_obs is not None:
            self._write_stats()
        return self.result()

    def result(self) -> SlotResult:
        """The last slot's results as arrays (copies)."""
        paid = self.servers[kernel.PAID_ID] >= 0
        assignments = np.zeros(int(paid.sum()), dtype=ASSIGNMENT_DTYPE)
        assignments["job_id"] = self.servers[kernel.PAID_ID, paid]
        assignments["job_class"] = self.servers[kernel.PAID_CLASS, paid]
        assignments["server_class"], assignments["server_index"] = self.server_class[paid], self.server_index[paid]
        assignments["reward"] = self.draws[kernel.XI, : len(assignments)]
        stats, slot = self.stats, self.slot_stats
        return SlotResult(
            queue=self.classes[kernel.QUEUE].copy(),
            y=slot[kernel.Y].copy(),
            counts=slot[kernel.COUNTS].astype(np.int64),
            reward_sums=slot[kernel.SUMS].copy(),
            departures=self.classes[kernel.DEPARTURES].copy(),
            arrivals=self.classes[kernel.ARRIVALS].copy(),
            assignments=assignments,
            n_duplicates=int(stats[kernel.N_DUPLICATES]),
            n_collisions=int(stats[kernel.N_COLLISIONS]),
            reward_noisy=float(stats[kernel.REWARD_NOISY]),
            reward_mean=float(stats[kernel.REWARD_MEAN]),
            reward_expected=float(stats[kernel.REWARD_EXPECTED]),
            reward_served=float(stats[kernel.REWARD_SERVED]),
        )


def episode_summary(stats: np.ndarray, counters: np.ndarray, r_star: Any) -> dict[str, Any]:
    """The episode summary from a copy's statistics row and counters (floats), or from a batch's rows ((B,) arrays)."""
    total = dict(zip(kernel.STAT_NAMES[kernel.TOTALS :], np.moveaxis(stats[..., kernel.TOTALS :], -1, 0), strict=True))
    steps = np.maximum(counters[..., kernel.T], 1)
    return {
        "regret": total["total_regret"],
        "regret_realized": total["total_regret_realized"],
        "regret_served": total["total_regret_served"],
        "reward_noisy": total["total_reward_noisy"],
        "reward_mean": total["total_reward_mean"],
        "reward_expected": total["total_reward_expected"],
        "reward_served": total["total_reward_served"],
        "r_star": r_star,
        "mean_holding_cost": total["total_holding_cost"] / steps,
        "mean_queue_total": total["total_queue_total"] / steps,
        "final_queue_total": counters[..., kernel.N_JOBS].astype(np.float64),
        "utilization": total["total_utilization"] / steps,
        "duplicates": total["total_duplicates"],
        "collisions": total["total_collisions"],
        "max_hidden_jobs": total["total_hidden_jobs"],
    }


def departure_mean(queue: np.ndarray, y: np.ndarray, caps: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """E[D_i | Q, y] = Q_i (1 − Π_j (1 − μ_i y_ij/(n_j Q_i))^{n_j}) (eq. 22); 0 for empty classes."""
    q = np.maximum(queue, 1).astype(np.float64)
    survive = np.prod((1.0 - mu[:, None] * y / (caps[None, :] * q[:, None])) ** caps[None, :], axis=1)
    return np.where(queue > 0, queue * (1.0 - survive), 0.0)
