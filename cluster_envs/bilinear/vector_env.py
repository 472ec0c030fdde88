"""``ClusterBilinear-v0`` batched: B copies stepped by one compiled call (``vector_entry_point``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.dynamics import ARRAYS
from cluster_envs.bilinear.env import MINIMAL_INFO_KEYS, ClusterBilinearEnv
from cluster_envs.common.vector import BatchedCopies


class ClusterBilinearVectorEnv(BatchedCopies):
    """``num_envs`` copies of ``ClusterBilinear-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own :class:`ClusterBilinearEnv` (copy i of ``reset(seed=s)`` is seeded s + i, as in
    ``SyncVectorEnv``), whose simulator arrays then become rows of batch arrays that
    :func:`~cluster_envs.bilinear.kernel.slot_batch`, the single env's compiled slot, steps in one call, so there
    is one implementation of the model. Autoreset is
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
        for name in ARRAYS:
            value = sim.arrays[name]
            self._batch[name] = np.zeros((self.num_envs, *value.shape[1:]), dtype=value.dtype)

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
            self._batch[name][copy] = sim.arrays[name][0]
        sim.bind(self._batch, copy)
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
        args = self.envs[0].simulator.kernel_args  # every copy's simulator is bound to the batch arrays
        kernel.slot_batch(kernel.ALLOCATION, actions, stepping, self._r_star, rewards, status, *args)

    @property
    def simulators(self) -> list:
        """Privileged: each copy's simulator (its arrays are views into the batch)."""
        return [env.simulator for env in self.envs]
