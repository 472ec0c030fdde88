"""``ClusterSLA-v1`` batched: B copies stepped by one compiled call (``gym.make_vec(..., "vector_entry_point")``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.common.record import HoldsRecord
from cluster_envs.common.vector import BatchedCopies
from cluster_envs.sla.config import ACTION_MODES, REWARD_MODES
from cluster_envs.sla.env import ClusterSLAEnv
from cluster_envs.sla.kernel import (
    ACTIVE,
    ALLOC,
    DEFICIT,
    LOAD,
    QUEUE,
    STATE_ROWS,
    WORK,
    Batch,
    batch_record,
    step_copies,
)
from cluster_envs.sla.simulator import feedback_vector

MINIMAL_INFO_ROWS = np.array([WORK, QUEUE, DEFICIT])


class ClusterSLAVectorEnv(HoldsRecord, BatchedCopies):
    """``num_envs`` copies of ``ClusterSLA-v1`` with the same keyword arguments, stepped together.

    Each copy is reset by its own :class:`ClusterSLAEnv` (copy i of ``reset(seed=s)`` is seeded s + i, as
    in ``SyncVectorEnv``), whose simulator arrays then become slices of batch arrays that
    the single env's compiled step (:func:`~cluster_envs.sla.kernel.step_copies`, which the single env
    calls with a batch of one) steps all at once, so there is one implementation of the dynamics. Autoreset is
    Gymnasium's ``NEXT_STEP``: the step after a copy's truncation resets it (its action is ignored, its
    reward 0). Supported: every observation (the paper's, written by the kernel, or the ablations'
    ``observation_mode``, ``observation_format`` and ``include_time``, assembled from the batch's state as
    :meth:`ClusterSLAEnv._observation` does per copy) and the built-in reward modes. ``info`` holds the
    ``info_level="minimal"`` keys as (B, N) arrays with ``_key`` masks and, for copies that end,
    ``episode_summary``.
    """

    def __init__(self, num_envs: int, preset: str = "default", render_mode: str | None = None,
                 **overrides: Any):  # fmt: skip
        super().__init__(num_envs, lambda **kw: ClusterSLAEnv(preset, **kw), overrides, render_mode, "ClusterSLA-v1")
        cfg = self.config
        self._paper_observation = (cfg.observation_mode, cfg.observation_format, cfg.include_time) == (
            "binary",
            "flat",
            False,
        )
        if callable(cfg.reward_mode):
            raise ValueError("reward_mode must be a built-in mode for the batched env, not a callable")
        n, horizon = cfg.n_users, cfg.horizon
        self._states = np.zeros((num_envs, STATE_ROWS, n))
        self._stats = np.zeros((num_envs, 4))
        # Time-major, so that a step reads one contiguous slice of each series (see step_copies).
        self._series = np.zeros((horizon, num_envs, 3, n))
        self._opt_cum = np.zeros((horizon, num_envs))
        self._sla_bar = np.zeros((num_envs, n))
        self._ts = np.zeros(num_envs, dtype=np.int64)
        self._obs = np.zeros((num_envs, 3 * n), dtype=np.float32)
        self.record = self.make_record()

    def make_record(self) -> Batch:
        """:func:`~cluster_envs.sla.kernel.step_copies`' record of the batch arrays."""
        cfg = self.config
        return batch_record(
            states=self._states, stats=self._stats, series=self._series, opt_cum=self._opt_cum, ts=self._ts,
            sla_bar=self._sla_bar, mode=ACTION_MODES.index(cfg.action_mode),
            reward_mode=REWARD_MODES.index(cfg.reward_mode), kappa=cfg.reward_kappa, empty_tol=cfg.empty_tol,
            sla_tol=cfg.sla_tol,
        )  # fmt: skip

    def _reset_copy(self, b: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        env = self.envs[b]
        obs, info = env.reset(seed=seed, options=options)
        sim = env.simulator
        rows = slice(b, b + 1)
        batch = (self._states[rows], self._stats[rows], self._series[:, rows], self._opt_cum[:, rows])
        for view, own in zip(batch, (sim.states, sim.statistics, sim.series, sim.opt_series), strict=True):
            view[...] = own
        sim.bind(*batch)  # the simulator, a batch of one, now reads and writes its slice of the batch
        self._sla_bar[b] = env.problem.static_share
        self._obs[b] = obs if self._paper_observation else feedback_vector(sim.active, sim.alloc, self._sla_bar[b])
        self._ts[b] = 0
        self._needs_reset[b] = False
        return info

    def _batch_observation(self) -> np.ndarray | dict[str, np.ndarray]:
        """The paper's feedback (the kernel's), or every copy's ``ClusterSLAEnv._observation`` from the batch."""
        if self._paper_observation:
            return self._obs.copy()
        cfg, states, t = self.config, self._states, self._ts
        parts = {"active": states[:, ACTIVE], "alloc": states[:, ALLOC], "sla": self._sla_bar}
        if cfg.observation_mode == "binary+sla":
            parts["sla_flag"] = (states[:, DEFICIT] > cfg.sla_tol).astype(np.float64)
        if cfg.observation_mode == "full":
            last_load = self._series[np.maximum(t - 1, 0), np.arange(self.num_envs), LOAD]
            last_load[t == 0] = 0.0
            deficit = states[:, DEFICIT]
            parts["log_queue"] = np.log1p(states[:, QUEUE])
            parts["log_load"] = np.log1p(last_load)
            parts["signed_log_deficit"] = np.sign(deficit) * np.log1p(np.abs(deficit))
        if cfg.include_time:
            parts["time"] = (t / cfg.horizon)[:, None]
        if cfg.observation_format == "dict":
            parts["active"] = states[:, ACTIVE].astype(np.int8)
            return {key: parts[key].astype(space.dtype) for key, space in self.single_observation_space.items()}
        return np.concatenate(list(parts.values()), axis=1).astype(np.float32)

    def step(self, actions: Any):
        actions, stepping = self.finite_actions(actions)
        reset_infos = {b: self._reset_copy(b, None, None) for b in np.flatnonzero(~stepping)}
        cfg = self.config
        rewards = np.zeros(self.num_envs)
        step_copies(self.record, actions, stepping, self._obs, rewards)
        truncated = stepping & (self._ts == cfg.horizon)
        work, queue, deficit = self._states.take(MINIMAL_INFO_ROWS, axis=1).transpose(1, 0, 2)  # one copy
        infos = self.masked((("work", work), ("active", queue > 0.0), ("queue", queue), ("sla_deficit", deficit)),
                            stepping)  # fmt: skip
        if truncated.any():
            infos["episode_summary"] = self.batched_summaries(truncated, self._summary)
            infos["_episode_summary"] = truncated.copy()
        for b, info in reset_infos.items():  # as SyncVectorEnv: a copy's autoreset step carries its reset info
            infos = self._add_info(infos, info, b)
        self._needs_reset = truncated.copy()  # the caller may write into the returned array
        return self._batch_observation(), rewards, np.zeros(self.num_envs, dtype=bool), truncated, infos

    def _summary(self, b: int) -> dict[str, float]:
        sim = self.envs[b].simulator
        sim.t = int(self._ts[b])
        return sim.summary()

    @property
    def simulators(self) -> list:
        """Privileged: each copy's simulator. Its arrays are views into the batch; its ``t`` is brought up to
        date only at the episode's end (the batch counts steps in :attr:`step_counts`)."""
        return [env.simulator for env in self.envs]

    @property
    def step_counts(self) -> np.ndarray:
        """Steps each copy has taken in its current episode."""
        return self._ts.copy()
