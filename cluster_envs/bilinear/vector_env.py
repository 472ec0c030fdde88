"""``ClusterBilinear-v0`` batched: B copies stepped by one compiled call (``vector_entry_point``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.env import MINIMAL_INFO_KEYS, ClusterBilinearEnv
from cluster_envs.common.vector import BatchedCopies

# per-copy simulator arrays that become rows of batch arrays (the job arrays separately: they grow)
COPY_ARRAYS = ("r", "arrivals", "rng", "counters", "draws", "servers", "slot_stats", "classes", "stats", "obs", "work")
JOB_ARRAYS = ("jobs", "job_stats", "scratch")


class ClusterBilinearVectorEnv(BatchedCopies):
    """``num_envs`` copies of ``ClusterBilinear-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own :class:`ClusterBilinearEnv` (copy i of ``reset(seed=s)`` is seeded s + i, as in
    ``SyncVectorEnv``), whose simulator arrays then become rows of batch arrays that
    :func:`~cluster_envs.bilinear.kernel.slot_batch` steps with the single env's compiled slot
    (:func:`~cluster_envs.bilinear.kernel.slot`), so there is one implementation of the model. Autoreset is
    Gymnasium's ``NEXT_STEP``: the step after a copy's episode ends resets it (its action is ignored, its reward
    0, its info that of ``reset``). Supported: ``action_mode="allocation"``,
    ``observation_mode="queues"`` and no ``server_schedule``. ``info`` holds the ``info_level="minimal"`` keys
    as (B,) arrays with ``_key`` masks and, for copies whose episode ends, ``episode_summary``.
    """

    def __init__(self, num_envs: int, preset: str = "paper", render_mode: str | None = None, **overrides: Any):
        super().__init__(num_envs, lambda: ClusterBilinearEnv(preset, **overrides), render_mode, "ClusterBilinear-v0")
        cfg = self.config
        self.require(
            (
                ("action_mode", cfg.action_mode, "allocation"),
                ("observation_mode", cfg.observation_mode, "queues"),
                ("server_schedule", cfg.server_schedule, None),  # under a schedule r*(t) differs per copy and slot
            )
        )
        self._batch: dict[str, np.ndarray] = {}
        self._r_star = np.zeros(num_envs)

    def _allocate(self, sim) -> None:
        """Batch arrays shaped like ``sim``'s, one row per copy."""
        for name in COPY_ARRAYS + JOB_ARRAYS:
            value = getattr(sim, name)
            self._batch[name] = np.zeros((self.num_envs, *value.shape), dtype=value.dtype)

    def _grow_jobs(self) -> None:
        """Double every copy's job slots (a copy had no room for an arrival), keeping the waiting jobs."""
        for env in self.envs:
            env.simulator.resize_jobs(2 * self._batch["jobs"].shape[2])
        for name in JOB_ARRAYS:
            self._batch[name] = np.stack([getattr(env.simulator, name) for env in self.envs])
        for copy in range(self.num_envs):
            self._bind(copy)

    def _bind(self, copy: int) -> None:
        """Make copy's simulator read and write its rows of the batch arrays."""
        sim = self.envs[copy].simulator
        for name in COPY_ARRAYS + JOB_ARRAYS:
            setattr(sim, name, self._batch[name][copy])

    def _reset_copy(self, copy: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        env = self.envs[copy]
        _, info = env.reset(seed=seed, options=options)
        sim = env.simulator
        if not self._batch:
            self._allocate(sim)
        sim.resize_jobs(self._batch["jobs"].shape[2])
        for name in COPY_ARRAYS + JOB_ARRAYS:
            self._batch[name][copy] = getattr(sim, name)
        self._bind(copy)
        self._r_star[copy] = env.r_star
        self._needs_reset[copy] = False
        return info

    def _batch_observation(self) -> np.ndarray:
        return self._batch["obs"].copy()

    def step(self, actions: Any):
        actions = self.real_actions(actions)
        resetting = self._needs_reset.copy()
        stepping = ~resetting
        if not np.isfinite(actions[stepping] if resetting.any() else actions).all():
            raise ValueError("actions must be finite (no NaN or inf)")
        reset_infos = {b: self._reset_copy(b, None, None) for b in np.flatnonzero(resetting)}
        rewards = np.zeros(self.num_envs)
        status = np.full(self.num_envs, kernel.DONE)
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
        infos: dict[str, Any] = {}
        for key in MINIMAL_INFO_KEYS:  # masks are copies: _add_info below writes into them
            infos[key], infos[f"_{key}"] = stats[:, kernel.STAT_NAMES.index(key)].copy(), stepping.copy()
        infos["regret"], infos["_regret"] = stats[:, kernel.TOTALS].copy(), stepping.copy()
        for b, info in reset_infos.items():
            infos = self._add_info(infos, info, b)
        ended = terminated | truncated
        if ended.any():
            infos["episode_summary"] = self.batched_summaries(ended, lambda b: self.envs[b]._summary())
            infos["_episode_summary"] = ended.copy()
        self._needs_reset = ended.copy()  # the caller may write into the returned array
        return self._batch_observation(), rewards, terminated, truncated, infos

    def _run(self, actions: np.ndarray, stepping: np.ndarray, rewards: np.ndarray, status: np.ndarray) -> None:
        sim, batch = self.envs[0].simulator, self._batch
        kernel.slot_batch(
            actions,
            stepping,
            batch["r"],
            sim.mu,
            sim.costs,
            batch["arrivals"],
            sim.exclusive,
            sim.noise_std,
            sim.caps_nominal,
            sim.schedule,
            sim.server_class,
            sim.server_index,
            batch["rng"],
            batch["jobs"],
            batch["job_stats"],
            batch["counters"],
            batch["draws"],
            batch["servers"],
            batch["slot_stats"],
            batch["classes"],
            batch["stats"],
            batch["scratch"],
            batch["work"],
            self._r_star,
            sim.kappa,
            sim.gamma_env,
            sim.reward_mode,
            sim.max_jobs,
            batch["obs"],
            rewards,
            status,
        )

    @property
    def simulators(self) -> list:
        """Privileged: each copy's simulator (its arrays are views into the batch)."""
        return [env.simulator for env in self.envs]
