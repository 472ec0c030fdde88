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

from dataclasses import dataclass, field

import numpy as np

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.instance import pair_features
from cluster_envs.bilinear.rng import pcg_state

SERVICE_MODELS = ("paper", "exclusive")
ACTION_MODES = ("allocation", "simplex_logits", "server_choice", "job_allocation")
OBSERVATION_MODES = ("queues", "queues_stats", "full")
INITIAL_JOB_SLOTS = 64  # waiting-job capacity at reset; doubled whenever an arrival would not fit
NO_ACTION = np.zeros(0)  # the kernel's action argument where the allocation is given as y
ASSIGNMENT_DTYPE = np.dtype(
    [
        ("job_id", np.int64),
        ("job_class", np.int64),
        ("server_class", np.int64),
        ("server_index", np.int64),
        ("reward", np.float64),
    ]
)


@dataclass(frozen=True, eq=False)
class BilinearProblem:
    """Static public data: classes, server counts, features, horizon, holding costs and the env's modes.

    Never θ, r, arrival or service rates. ``split(observation)`` names the observation's parts.
    """

    servers_per_class: tuple[int, ...]
    job_features: np.ndarray
    server_features: np.ndarray
    horizon: int
    holding_costs: tuple[float, ...]
    service_model: str
    action_mode: str
    observation_mode: str
    max_jobs: int
    pair_features: np.ndarray = field(init=False, repr=False)
    part_slices: tuple[tuple[str, slice, tuple[int, ...]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pair_features", pair_features(self.job_features, self.server_features))
        slices, start = [], 0
        for name, shape in self.observation_parts().items():  # agents split every observation: compute once
            size = int(np.prod(shape))
            slices.append((name, slice(start, start + size), shape))
            start += size
        object.__setattr__(self, "part_slices", tuple(slices))

    @property
    def n_job_classes(self) -> int:
        return self.job_features.shape[0]

    @property
    def n_server_classes(self) -> int:
        return self.server_features.shape[0]

    @property
    def feature_dim(self) -> int:
        return self.job_features.shape[1]

    @property
    def n_servers(self) -> int:
        return int(sum(self.servers_per_class))

    @property
    def caps(self) -> np.ndarray:
        return np.asarray(self.servers_per_class, dtype=np.float64)

    @property
    def holding_cost_array(self) -> np.ndarray:
        return np.asarray(self.holding_costs, dtype=np.float64)

    def observation_parts(self) -> dict[str, tuple[int, ...]]:
        """Name -> shape of each part of the flat observation, in order."""
        n_i, n_j, d, k = self.n_job_classes, self.n_server_classes, self.feature_dim, self.max_jobs
        parts: dict[str, tuple[int, ...]] = {
            "queues": (n_i,),
            "counts": (n_i, n_j),
            "reward_sums": (n_i, n_j),
        }
        if self.observation_mode in ("queues_stats", "full"):
            parts.update(time=(1,), log_total_counts=(n_i, n_j), mean_rewards=(n_i, n_j))
        if self.observation_mode == "full":
            parts.update(job_features=(n_i, d), server_features=(n_j, d))
        if self.action_mode == "job_allocation":
            parts.update(job_class=(k,), job_counts=(k, n_j), job_reward_sums=(k, n_j))
        return parts

    def split(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """The named parts of a flat observation as float64 arrays of their shapes."""
        obs = np.asarray(observation, dtype=np.float64)
        return {name: obs[part].reshape(shape) for name, part, shape in self.part_slices}


def simplex_cap(x: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of finite x ≥ 0 onto {x ≥ 0, Σx ≤ radius} (:func:`~.kernel.simplex_cap_into`)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    kernel.simplex_cap_into(x, float(radius), out, np.empty(2 * x.size))
    return out


def project_allocation(y: np.ndarray, active: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Column-capped projection (spec §3.3): rows of empty queues to 0, each column onto Σ_i y_ij ≤ n_j."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    out = np.empty(y.shape)
    kernel.project_into(y.reshape(-1), np.asarray(active, dtype=np.int64), np.asarray(caps, dtype=np.float64), out,
                        np.empty(4 * len(y)))  # fmt: skip
    return out


def logits_to_allocation(logits: np.ndarray, active: np.ndarray, caps: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(J, I+1) logits, the last one "idle": y_ij = n_j softmax(scale·logits) over {active classes, idle} (§3.3).

    ``scale`` multiplies after the max is subtracted, so finite logits of any size cannot overflow to NaN.
    """
    mask = np.append(active, True)
    z = np.where(mask[None, :], logits, -np.inf)
    with np.errstate(over="ignore"):  # a gap beyond the float max is exp(-inf) = 0, as it should be
        z = np.exp(scale * (z - z.max(axis=1, keepdims=True)))
    pi = z / z.sum(axis=1, keepdims=True)
    return (pi[:, :-1] * caps[:, None]).T


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


class BilinearSimulator:
    """The queueing system of one episode, stepped by the compiled :func:`~cluster_envs.bilinear.kernel.slot`.

    Holds the waiting jobs, the pre-drawn arrivals, the streams' PCG64 states and the last slot's results in
    the flat arrays :mod:`cluster_envs.bilinear.kernel` describes (the batched env makes them views into its
    batch arrays). ``costs``, ``kappa``, ``gamma_env``, ``reward_mode`` and ``max_jobs`` (-1: no per-job
    view) only shape the per-slot statistics and the reward in ``stats``.
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
        max_jobs: int = -1,
    ):
        self.r, self.mu, self.noise_std, self.service_model = r, mu, noise_std, service_model
        self.n_job, self.n_server_class = r.shape
        self.caps = np.asarray(caps, dtype=np.int64)
        self.caps_nominal = self.caps.astype(np.float64)
        self.server_class = np.repeat(np.arange(self.n_server_class), self.caps)
        self.server_index = np.concatenate([np.arange(c) for c in self.caps])
        self.arrivals = np.asarray(arrivals, dtype=np.int64)  # class arriving at the start of slot t (-1: none)
        self.streams = streams  # "choice" is drawn here (server_choice); the others by the kernel from ``rng``
        self.schedule = np.asarray(self.caps[None, :] if schedule is None else schedule, dtype=np.int64)
        self.costs = np.zeros(self.n_job) if costs is None else np.asarray(costs, dtype=np.float64)
        self.exclusive = service_model == "exclusive"
        self.kappa, self.gamma_env, self.max_jobs = float(kappa), float(gamma_env), int(max_jobs)
        self.reward_mode = kernel.REWARD_MODES.index(reward_mode)
        n, n_i, n_j = self.n_servers, self.n_job, self.n_server_class
        self.rng = np.stack([pcg_state(streams[name]) for name in ("assign", "service", "noise")])
        self.counters = np.zeros(kernel.COUNTERS, dtype=np.int64)
        self.draws = np.zeros((kernel.DRAW_ROWS, n))
        self.servers = np.zeros((kernel.SERVER_ROWS, n), dtype=np.int64)
        self.slot_stats = np.zeros((kernel.SLOT_ROWS, n_i, n_j))
        self.classes = np.zeros((kernel.CLASS_ROWS, n_i), dtype=np.int64)
        self.stats = np.zeros(kernel.STATS)
        self.obs = np.zeros(n_i * (1 + 2 * n_j), dtype=np.float32)
        self.work = np.zeros(n_j + 4 * n_i + n_i * n_j)  # the kernel's float scratch
        self.resize_jobs(min(len(self.arrivals), INITIAL_JOB_SLOTS))
        self.set_jobs(self.arrivals[:1][self.arrivals[:1] >= 0])  # Q(1) = A(1)
        kernel.write_observation(self.jobs, self.counters, self.slot_stats, self.obs)

    def resize_jobs(self, slots: int) -> None:
        """Reallocate the job arrays for ``slots`` waiting jobs (at least the current count), keeping them."""
        old = getattr(self, "jobs", None)
        jobs = np.zeros((2, slots), dtype=np.int64)
        job_stats = np.zeros((2, slots, self.n_server_class))
        if old is not None:
            count = self.counters[kernel.N_JOBS]
            jobs[:, :count], job_stats[:, :count] = self.jobs[:, :count], self.job_stats[:, :count]
        self.jobs, self.job_stats = jobs, job_stats
        self.scratch = np.zeros((2, slots + self.n_job), dtype=np.int64)

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
        while True:
            status = kernel.slot(kind, action, self.r, self.mu, self.costs, self.arrivals, self.exclusive,
                                 self.noise_std, self.caps_nominal, self.schedule, self.server_class,
                                 self.server_index, self.rng, self.jobs, self.job_stats, self.counters,
                                 self.draws, self.servers, self.slot_stats, self.classes, self.stats,
                                 self.scratch, self.work, r_star, self.kappa, self.gamma_env, self.reward_mode,
                                 self.max_jobs, self.obs)  # fmt: skip
            if status != kernel.FULL:
                return status == kernel.DONE
            self.reserve()

    def step_fractions(self, fractions: np.ndarray, r_star: float = 0.0) -> bool:
        """Run one slot with allocation fractions a_ij = y_ij/n_j (flat, row-major), projected onto the feasible
        set (spec §3.3). Returns False, changing nothing, if a fraction is not finite."""
        return self._run(kernel.ALLOCATION, fractions, r_star)

    def step_classes(self, y: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot with a feasible class-level expected allocation y (I, J)."""
        self.slot_stats[kernel.Y] = y
        self._run(kernel.CLASSES, NO_ACTION, r_star)
        return self.result()

    def step_jobs(self, x: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot with a feasible per-job allocation x (K, J) over the waiting jobs in FIFO order."""
        self._run(kernel.JOBS, np.ascontiguousarray(x, dtype=np.float64).ravel(), r_star)
        return self.result()

    def step_servers(self, choices: np.ndarray, r_star: float = 0.0) -> SlotResult:
        """Run one slot where server s (class-major order) picks class ``choices[s]`` (I = idle).

        Servers choosing one class get distinct jobs, drawn uniformly without replacement; once the
        class runs out, extra servers duplicate a uniform job ("paper") or idle as collisions ("exclusive").
        """
        self.reserve()
        kernel.begin_slot(self.rng, self.noise_std, self.jobs, self.counters, self.draws, self.servers, self.classes)
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
        kernel.finish(
            self.r, self.mu, self.costs, self.arrivals, self.exclusive, self.server_class, self.caps_now(), self.jobs,
            self.job_stats, self.counters, self.draws, self.servers, self.slot_stats, self.classes, self.stats,
            self.scratch, self.work, r_star, self.kappa, self.gamma_env, self.reward_mode, self.max_jobs,
        )  # fmt: skip
        kernel.write_observation(self.jobs, self.counters, self.slot_stats, self.obs)
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
        )


def sample_arrivals(rng: np.random.Generator, lam: np.ndarray, slots: int) -> np.ndarray:
    """Classes of the arrivals of ``slots`` slots: one job w.p. λ = Σλ_i, class i w.p. λ_i/λ; -1: none."""
    total = float(lam.sum())
    coin = rng.random(slots)
    cls = rng.choice(lam.size, size=slots, p=lam / total)
    return np.where(coin < total, cls, -1)


def departure_mean(queue: np.ndarray, y: np.ndarray, caps: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """E[D_i | Q, y] = Q_i (1 − Π_j (1 − μ_i y_ij/(n_j Q_i))^{n_j}) (eq. 22); 0 for empty classes."""
    q = np.maximum(queue, 1).astype(np.float64)
    survive = np.prod((1.0 - mu[:, None] * y / (caps[None, :] * q[:, None])) ** caps[None, :], axis=1)
    return np.where(queue > 0, queue * (1.0 - survive), 0.0)
