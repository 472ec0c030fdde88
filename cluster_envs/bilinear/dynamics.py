"""The bilinear parallel-server queueing model of Kim & Vojnović (paper 004) as plain numpy.

I job classes, J server classes with n_j servers each. At most one job arrives per slot. Every
slot the scheduler gives an expected allocation y (I × J, column sums ≤ n_j); each server of class j
then independently selects a waiting class-i job with probability y_ij/(n_j Q_i) or idles (Alg. 1,
[L134–143]). A selection of a class-i job by a class-j server yields the reward ξ = r_ij + noise and
completes the job with probability μ_i (geometric service). Under ``service_model="paper"`` several
servers may select one job and each selection is paid and may complete it (eq. 22); under
``"exclusive"`` the servers are processed in a random order and a server whose job is already taken
idles (a collision). The env (env.py) and the fast runners step :class:`BilinearSimulator`.

Common random numbers: every slot draws a fixed number of uniforms and normals per server from its
own streams (``assign``, ``service``, ``noise``), so two policies facing one seed see the same
per-server noise and service coins; only ``choice`` (distinct-job draws of ``server_choice``) is
consumed in action-dependent amounts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cluster_envs.bilinear.instance import pair_features

SERVICE_MODELS = ("paper", "exclusive")
ACTION_MODES = ("allocation", "simplex_logits", "server_choice", "job_allocation")
OBSERVATION_MODES = ("queues", "queues_stats", "full")
NOISE_CLIP = 10.0  # reward noise is truncated at ±10σ (probability 1.5e-23) so observations have finite bounds
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "pair_features", pair_features(self.job_features, self.server_features))

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
        out, start = {}, 0
        for name, shape in self.observation_parts().items():
            size = int(np.prod(shape))
            out[name] = obs[start : start + size].reshape(shape)
            start += size
        return out


def simplex_cap(x: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of finite x ≥ 0 onto {x ≥ 0, Σx ≤ radius} (Duchi et al. 2008 when the cap binds).

    Computed on x / max(x) (the projection commutes with scaling) and around the mean of the kept entries, so
    entries up to the float maximum neither overflow nor cancel to an empty support.
    """
    with np.errstate(over="ignore"):  # a sum beyond the float max is inf, which is over any cap
        if x.sum() <= radius + 1e-9:
            return x
    if radius <= 0:
        return np.zeros_like(x)
    scale = x.max()
    z, r = x / scale, radius / scale
    s = np.sort(z)[::-1]
    ks = np.arange(1, x.size + 1)
    means = np.cumsum(s) / ks
    keep = ks[(s - means) + r / ks > 0]
    k = keep[-1] if keep.size else 1  # k = 1 always qualifies in exact arithmetic
    return scale * np.maximum((z - means[k - 1]) + r / k, 0.0)


def project_allocation(y: np.ndarray, active: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Column-capped projection (spec §3.3): rows of empty queues to 0, each column onto Σ_i y_ij ≤ n_j."""
    x = np.where(active[:, None], np.maximum(y, 0.0), 0.0)
    with np.errstate(over="ignore"):  # as in simplex_cap: an overflowing column sum is over its cap
        over = np.flatnonzero(x.sum(axis=0) > caps + 1e-9)
    for j in over:
        x[:, j] = simplex_cap(x[:, j], caps[j])
    return x


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
    """The queueing system of one episode: the job list, the pre-drawn arrivals and the per-slot draws."""

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
    ):
        self.r, self.mu, self.noise_std, self.service_model = r, mu, noise_std, service_model
        self.n_job, self.n_server_class = r.shape
        self.caps = np.asarray(caps, dtype=np.int64)
        self.server_class = np.repeat(np.arange(self.n_server_class), self.caps)
        self.server_index = np.concatenate([np.arange(c) for c in self.caps])
        self.arrivals = arrivals  # class of the arrival at the start of slot t+1 (index t), -1 for none
        self.streams = streams
        self.schedule = schedule
        self.t = 0
        self.next_id = 0
        self.job_class = np.zeros(0, dtype=np.int64)
        self.job_id = np.zeros(0, dtype=np.int64)
        self.job_counts = np.zeros((0, self.n_server_class))
        self.job_reward_sums = np.zeros((0, self.n_server_class))
        self._arrive(arrivals[0])

    @property
    def n_servers(self) -> int:
        return int(self.caps.sum())

    def caps_now(self) -> np.ndarray:
        """n_j(t) of the slot about to run (``server_schedule`` or the fixed counts)."""
        return self.caps if self.schedule is None else self.schedule[min(self.t, len(self.schedule) - 1)]

    def queue(self) -> np.ndarray:
        return np.bincount(self.job_class, minlength=self.n_job)

    def _arrive(self, cls: int) -> np.ndarray:
        a = np.zeros(self.n_job, dtype=np.int64)
        if cls >= 0:
            a[cls] = 1
            self.job_class = np.append(self.job_class, cls)
            self.job_id = np.append(self.job_id, self.next_id)
            self.job_counts = np.vstack([self.job_counts, np.zeros(self.n_server_class)])
            self.job_reward_sums = np.vstack([self.job_reward_sums, np.zeros(self.n_server_class)])
            self.next_id += 1
        return a

    def _draws(self) -> dict[str, np.ndarray]:
        n, assign = self.n_servers, self.streams["assign"]
        return {
            "select": assign.random(n),
            "pick": assign.random(n),
            "order": assign.permutation(n),
            "service": self.streams["service"].random(n),
            "noise": self.noise_std * np.clip(self.streams["noise"].standard_normal(n), -NOISE_CLIP, NOISE_CLIP),
        }

    def _available(self) -> np.ndarray:
        return self.server_index < self.caps_now()[self.server_class]

    def step_classes(self, y: np.ndarray) -> SlotResult:
        """Run one slot with a feasible class-level expected allocation y (I, J)."""
        draws, q = self._draws(), self.queue()
        caps = np.maximum(self.caps_now(), 1).astype(np.float64)
        cum = np.cumsum(y.T, axis=1) / caps[:, None]  # (J, I)
        cls = (cum[self.server_class] <= draws["select"][:, None]).sum(axis=1)
        chosen = (cls < self.n_job) & self._available()  # empty classes have y = 0, so are never chosen
        job = np.full(self.n_servers, -1)
        if chosen.any():
            cls = cls[chosen]
            by_class = np.argsort(self.job_class, kind="stable")
            starts = np.concatenate([[0], np.cumsum(q)[:-1]])
            job[chosen] = by_class[starts[cls] + np.floor(draws["pick"][chosen] * q[cls]).astype(np.int64)]
        return self._finish(job, y, draws, 0)

    def step_jobs(self, x: np.ndarray) -> SlotResult:
        """Run one slot with a feasible per-job allocation x (K, J) over the waiting jobs in FIFO order."""
        draws = self._draws()
        caps = np.maximum(self.caps_now(), 1).astype(np.float64)
        cum = np.cumsum(x.T, axis=1) / caps[:, None]  # (J, K)
        k = (cum[self.server_class] <= draws["select"][:, None]).sum(axis=1)
        job = np.where((k < len(self.job_class)) & self._available(), k, -1)
        y = np.zeros((self.n_job, self.n_server_class))
        np.add.at(y, self.job_class, x)
        return self._finish(job, y, draws, 0)

    def step_servers(self, choices: np.ndarray) -> SlotResult:
        """Run one slot where server s (class-major order) picks class ``choices[s]`` (I = idle).

        Servers choosing one class get distinct jobs, drawn uniformly without replacement; once the
        class runs out, extra servers duplicate a uniform job ("paper") or idle as collisions ("exclusive").
        """
        draws, q = self._draws(), self.queue()
        choices = np.where(self._available() & (choices < self.n_job), choices, self.n_job)
        choices = np.where(np.append(q, 0)[choices] > 0, choices, self.n_job)  # an empty class means idle
        y = np.zeros((self.n_job, self.n_server_class))
        busy = choices < self.n_job
        np.add.at(y, (choices[busy], self.server_class[busy]), 1.0)
        job = np.full(self.n_servers, -1)
        collisions = 0
        for i in np.unique(choices[busy]):
            servers = draws["order"][choices[draws["order"]] == i]
            members = np.flatnonzero(self.job_class == i)
            take = min(len(servers), len(members))
            job[servers[:take]] = self.streams["choice"].permutation(members)[:take]
            extra = servers[take:]
            if self.service_model == "paper":
                job[extra] = members[
                    np.minimum((draws["pick"][extra] * len(members)).astype(np.int64), len(members) - 1)
                ]
            else:
                collisions += len(extra)
        return self._finish(job, y, draws, collisions)

    def _finish(self, job: np.ndarray, y: np.ndarray, draws: dict[str, np.ndarray], collisions: int) -> SlotResult:
        queue = self.queue()
        duplicates = 0
        if self.service_model == "exclusive":
            seq = job[draws["order"]]
            servers = draws["order"][seq >= 0]
            _, first = np.unique(job[servers], return_index=True)
            keep = np.zeros(self.n_servers, dtype=bool)
            keep[servers[first]] = True
            collisions += int(len(servers) - len(first))
            job = np.where(keep, job, -1)
        else:
            selected = job[job >= 0]
            duplicates = int(selected.size - np.unique(selected).size)
        servers = np.flatnonzero(job >= 0)
        k = job[servers]
        cls, sc = self.job_class[k], self.server_class[servers]
        xi = self.r[cls, sc] + draws["noise"][servers]
        pair = cls * self.n_server_class + sc
        size = self.n_job * self.n_server_class
        counts = np.bincount(pair, minlength=size).reshape(self.n_job, self.n_server_class)
        sums = np.bincount(pair, weights=xi, minlength=size).reshape(self.n_job, self.n_server_class)
        assignments = np.zeros(servers.size, dtype=ASSIGNMENT_DTYPE)
        assignments["job_id"], assignments["job_class"], assignments["server_class"] = self.job_id[k], cls, sc
        assignments["server_index"], assignments["reward"] = self.server_index[servers], xi
        np.add.at(self.job_counts, (k, sc), 1.0)
        np.add.at(self.job_reward_sums, (k, sc), xi)
        done = np.zeros(len(self.job_class), dtype=bool)
        done[k[draws["service"][servers] < self.mu[cls]]] = True
        departures = np.bincount(self.job_class[done], minlength=self.n_job)
        self.job_class, self.job_id = self.job_class[~done], self.job_id[~done]
        self.job_counts, self.job_reward_sums = self.job_counts[~done], self.job_reward_sums[~done]
        self.t += 1
        arrivals = (
            self._arrive(int(self.arrivals[self.t])) if self.t < len(self.arrivals) else np.zeros(self.n_job, int)
        )
        return SlotResult(
            queue=queue,
            y=y,
            counts=counts,
            reward_sums=sums,
            departures=departures,
            arrivals=arrivals,
            assignments=assignments,
            n_duplicates=duplicates,
            n_collisions=collisions,
            reward_noisy=float(xi.sum()),
            reward_mean=float((self.r * counts).sum()),
            reward_expected=float((self.r * y).sum()),
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
