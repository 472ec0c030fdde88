"""``ClusterBilinear-v0`` batched: B copies stepped by one compiled call (``vector_entry_point``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.bilinear import episodes, kernel
from cluster_envs.bilinear.azure import NAME as AZURE
from cluster_envs.bilinear.env import LOGIT_SCALE, MINIMAL_INFO_KEYS, ClusterBilinearEnv
from cluster_envs.bilinear.model import assignment_optima, mean_rewards, normalised, oracle_lp, sample_instance
from cluster_envs.bilinear.simulator import ARRAYS, SHARED_ARRAYS, episode_summary, logits_to_allocation
from cluster_envs.common.seeding import streams_from_entropy
from cluster_envs.common.vector import BatchedCopies

BATCHED_ACTION_MODES = ("allocation", "simplex_logits")


class ClusterBilinearVectorEnv(BatchedCopies):
    """``num_envs`` copies of ``ClusterBilinear-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own :class:`ClusterBilinearEnv` (copy i of ``reset(seed=s)`` is seeded s + i, as in
    ``SyncVectorEnv``), whose simulator arrays then become rows of batch arrays that
    :func:`~cluster_envs.bilinear.kernel.slot_batch`, the single env's compiled slot, steps in one call, so there
    is one implementation of the model. Autoreset is Gymnasium's ``NEXT_STEP``: the step after a copy's episode
    ends resets it (its action is ignored, its reward 0, its info that of ``reset``) with the draws its env's
    ``reset`` would make, compiled for all the copies resetting together (:meth:`_autoreset`); the copies' env
    objects then hold their generator and simulator (current), not their problem or oracle (those of their last
    ``reset``). Supported: ``action_mode`` ``"allocation"`` or ``"simplex_logits"`` (each copy's logits become its
    class allocation as the single env's ``logits_to_allocation`` computes it, then the kernel's class-level
    slot), every ``observation_mode``, no ``server_schedule`` and no ``include_server_counts``. ``info`` holds the
    ``info_level="minimal"`` keys as (B,) arrays with ``_key`` masks and, for copies whose episode ends,
    ``episode_summary``.
    """

    def __init__(self, num_envs: int, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(
            num_envs, lambda **kw: ClusterBilinearEnv(preset, **kw), overrides, render_mode, "ClusterBilinear-v0"
        )
        cfg = self.config
        if cfg.action_mode not in BATCHED_ACTION_MODES:
            raise ValueError(f"action_mode={cfg.action_mode!r} is not supported by the batched env; use one of "
                             f"{list(BATCHED_ACTION_MODES)}")  # fmt: skip
        # under a schedule r*(t) differs per slot; without one the server counts are constant (nothing to observe)
        self.require(
            (
                ("server_schedule", cfg.server_schedule, None),
                ("include_server_counts", cfg.include_server_counts, False),
            )
        )
        self._kind = kernel.ALLOCATION if cfg.action_mode == "allocation" else kernel.CLASSES
        n_features = (cfg.num_job_classes + cfg.num_server_classes) * cfg.feature_dim
        self._features = np.zeros((num_envs, n_features))  # u and v of each copy's episode (the "full" observation)
        self._batch: dict[str, np.ndarray] = {}
        self._r_star = np.zeros(num_envs)
        env = self.envs[0]  # the model's constants, as every copy's reset uses them
        self._rho, self._caps = env.rho, np.asarray(cfg.servers_per_class, dtype=np.float64)
        lam = env.rho * env.mu
        self._arrival_rate = float(lam.sum())
        self._cdf = (lam / self._arrival_rate).cumsum()  # as Generator.choice does with p
        self._cdf /= self._cdf[-1]
        self._streams = np.zeros((1, 2, 6), dtype=np.uint64)
        shape = (cfg.num_job_classes, cfg.num_server_classes, cfg.feature_dim)
        self._seeded_instance = None if cfg.instance_seed is None else sample_instance(
            np.random.default_rng(cfg.instance_seed), *shape)  # fmt: skip

    def _allocate(self, sim) -> None:
        """Batch arrays shaped like ``sim``'s, one row per copy."""
        for name in ARRAYS:
            value = sim.arrays[name]
            rows = 1 if name in SHARED_ARRAYS else self.num_envs  # the slot's scratch: one row for all copies
            self._batch[name] = np.zeros((rows, *value.shape[1:]), dtype=value.dtype)

    def _grow_jobs(self) -> None:
        """Double every copy's job slots (a copy had no room for an arrival), keeping the waiting jobs."""
        slots = self._batch["jobs"].shape[2]
        grown = self.envs[0].simulator.job_arrays(self.num_envs, 2 * slots)
        grown["jobs"][:, :, :slots], grown["job_stats"][:, :, :slots] = self._batch["jobs"], self._batch["job_stats"]
        self._batch.update(grown)
        for copy, env in enumerate(self.envs):
            env.simulator.bind(self._batch, copy)

    def _reset_copy(self, copy: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        env = self.envs[copy]
        _, info = env.reset(seed=seed, options=options)
        sim = env.simulator
        if not self._batch:
            self._allocate(sim)
        sim.resize_jobs(self._batch["jobs"].shape[2])
        for name in ARRAYS:
            if name not in SHARED_ARRAYS:
                self._batch[name][copy] = sim.arrays[name][0]
        sim.bind(self._batch, copy)
        self._r_star[copy] = env.r_star
        self._features[copy] = np.concatenate([env.problem.job_features.ravel(), env.problem.server_features.ravel()])
        self._needs_reset[copy] = False
        return info

    def _batch_observation(self) -> np.ndarray:
        """``ClusterBilinearEnv._observation`` of every copy: the kernel's Q, N and Σξ, then (``queues_stats``,
        ``full``) t/T, log1p of the total selections and the empirical means, then (``full``) u and v."""
        cfg, batch = self.config, self._batch
        if cfg.observation_mode == "queues":
            return batch["obs"].copy()
        counts, sums = batch["slot_stats"][:, kernel.TOTAL_COUNTS], batch["slot_stats"][:, kernel.TOTAL_SUMS]
        means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
        parts = [batch["obs"], batch["counters"][:, kernel.T] / cfg.horizon, np.log1p(counts), means]
        if cfg.observation_mode == "full":
            parts.append(self._features)
        flat = [np.asarray(p, dtype=np.float64).reshape(self.num_envs, -1) for p in parts]
        return np.concatenate(flat, axis=1).astype(np.float32)

    def _class_allocations(self, logits: np.ndarray, stepping: np.ndarray) -> np.ndarray:
        """Each stepping copy's ``simplex_logits`` action as the class allocation y (I·J, row-major) the single env
        computes from it (:func:`logits_to_allocation` over the classes with waiting jobs, on the whole batch)."""
        n_i, n_j = self.config.num_job_classes, self.config.num_server_classes
        jobs, counters = self._batch["jobs"], self._batch["counters"]
        waiting = np.arange(jobs.shape[2]) < counters[:, kernel.N_JOBS, None]
        active = np.zeros((self.num_envs, n_i), dtype=bool)
        active[np.nonzero(waiting)[0], jobs[:, 0][waiting]] = True
        logits = np.where(stepping[:, None], logits, 0.0).reshape(self.num_envs, n_j, n_i + 1)
        return logits_to_allocation(logits, active, self._caps, LOGIT_SCALE).reshape(self.num_envs, -1)

    def step(self, actions: Any):
        actions, stepping = self.finite_actions(actions)
        reset_copies = np.flatnonzero(~stepping)
        reset_info = self._autoreset(reset_copies) if reset_copies.size else None
        if self._kind == kernel.CLASSES:
            actions = self._class_allocations(actions, stepping)
        rewards = np.zeros(self.num_envs)
        status = np.full(self.num_envs, kernel.DONE, dtype=np.int64)
        pending = stepping
        while pending.any():
            self._run(actions, pending, rewards, status)
            pending = status == kernel.FULL
            if pending.any():  # some copy had no room for an arrival: grow the job arrays, step those copies
                self._grow_jobs()
                status[:] = kernel.DONE
        cfg, stats = self.config, self._batch["stats"]
        terminated = np.zeros(self.num_envs, dtype=bool)
        if cfg.queue_cap is not None:
            terminated = stepping & (stats[:, kernel.QUEUE_TOTAL_NEXT] > cfg.queue_cap)
        truncated = stepping & (self._batch["counters"][:, kernel.T] >= cfg.horizon) & ~terminated
        values = [(key, stats[:, kernel.STAT_NAMES.index(key)].copy()) for key in MINIMAL_INFO_KEYS]
        infos = self.masked([*values, ("regret", stats[:, kernel.TOTALS].copy())], stepping)
        if reset_info is not None:
            self._add_reset_info(infos, reset_copies, *reset_info)
        ended = terminated | truncated
        if ended.any():
            infos["episode_summary"] = self._summaries(ended)
            infos["_episode_summary"] = ended.copy()
        self._needs_reset = ended.copy()  # the caller may write into the returned array
        return self._batch_observation(), rewards, terminated, truncated, infos

    def _autoreset(self, copies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """New episodes in ``copies`` (autoreset: no seed, no options) with the draws their envs' ``reset`` makes,
        compiled for all of them at once (:mod:`~cluster_envs.bilinear.episodes`); their r* and oracle allocation.

        The copies' env objects keep their generator (each gives its entropy as its reset would) and their
        simulator, whose rows now hold the new episode; their problem and oracle are those of their last ``reset``.
        """
        cfg, batch = self.config, self._batch
        n_i, n_j, d = cfg.num_job_classes, cfg.num_server_classes, cfg.feature_dim
        entropies = np.array([self.envs[c].np_random.integers(2**63) for c in copies], dtype=np.int64)
        u, v, theta = np.zeros((copies.size, n_i, d)), np.zeros((copies.size, n_j, d)), np.zeros((copies.size, d * d))
        episodes.draw_episodes(copies, entropies, self._cdf, self._arrival_rate, self._streams, u, v, theta,
                               batch["rng"], batch["arrivals"])  # fmt: skip
        if cfg.arrivals == AZURE:  # a trace's window, drawn from the arrivals stream as the env's reset does
            for c, entropy in zip(copies, entropies, strict=True):
                arrivals = streams_from_entropy(entropy, self.envs[c].stream_names)["arrivals"]
                batch["arrivals"][c] = self.envs[c].draw_arrivals(arrivals)
        if self._seeded_instance is None:
            u, v, theta = normalised(u), normalised(v), normalised(theta)
        else:
            u[:], v[:], theta[:] = self._seeded_instance
        for name, drawn in (("job_features", u), ("server_features", v), ("theta", theta)):
            if getattr(cfg, name) is not None:
                drawn[:] = np.asarray(getattr(cfg, name), dtype=np.float64)
        r = batch["r"]
        for i, c in enumerate(copies):
            r[c] = mean_rewards(u[i], v[i], theta[i])
        r_star, alloc = np.zeros(copies.size), np.zeros((copies.size, n_i, n_j))
        found = np.zeros(copies.size, dtype=np.bool_)
        assignment_optima(r[copies], self._rho, self._caps, r_star, alloc, found)
        for i in np.flatnonzero(~found):
            r_star[i], alloc[i] = oracle_lp(r[copies[i]], self._rho, self._caps)
        self._r_star[copies] = r_star
        self._features[copies] = np.concatenate([u.reshape(copies.size, -1), v.reshape(copies.size, -1)], axis=1)
        episodes.start_episodes(copies, *(batch[name] for name in episodes.START_ARRAYS))
        self._needs_reset[copies] = False
        return r_star, alloc

    def _add_reset_info(self, infos: dict[str, Any], copies: np.ndarray, r_star: np.ndarray, alloc: np.ndarray):
        """The reset infos of ``copies`` added to ``infos`` as ``_add_info`` adds each copy's (t, Q, r*, the
        oracle allocation, the queue total: the single env's reset info)."""
        first = self._batch["arrivals"][copies, 0]
        queue = np.zeros((copies.size, self.config.num_job_classes), dtype=np.int64)
        queue[np.flatnonzero(first >= 0), first[first >= 0]] = 1
        values = {"t": np.zeros(copies.size, dtype=int), "Q": queue, "r_star": r_star, "oracle_allocation": alloc,
                  "queue_total": queue.sum(axis=1).astype(np.float64)}  # fmt: skip
        for key, value in values.items():
            if key not in infos:
                infos[key] = np.zeros((self.num_envs, *value.shape[1:]), dtype=value.dtype)
                infos[f"_{key}"] = np.zeros(self.num_envs, dtype=bool)
            infos[key][copies], infos[f"_{key}"][copies] = value, True

    def _summaries(self, ended: np.ndarray) -> dict[str, Any]:
        """The ``episode_summary`` of the copies that ``ended`` (``ClusterBilinearEnv._summary``, for all copies at
        once) as (B,) arrays with ``_key`` masks."""
        values = episode_summary(self._batch["stats"], self._batch["counters"], self._r_star)
        out: dict[str, Any] = {key: np.where(ended, value, 0.0) for key, value in values.items()}
        for key in values:
            out[f"_{key}"] = ended.copy()
        return out

    def _run(self, actions: np.ndarray, stepping: np.ndarray, rewards: np.ndarray, status: np.ndarray) -> None:
        record = self.envs[0].simulator.record  # every copy's simulator is bound to the batch arrays
        kernel.slot_batch(self._kind, actions, stepping, self._r_star, rewards, status, record)

    @property
    def simulators(self) -> list:
        """Privileged: each copy's simulator (its arrays are views into the batch)."""
        return [env.simulator for env in self.envs]
