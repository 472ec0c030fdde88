"""``ClusterSLA-v0`` batched: B copies stepped by one compiled call (``gym.make_vec(..., "vector_entry_point")``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.common.vector import BatchedCopies
from cluster_envs.sla.env import ClusterSLAEnv
from cluster_envs.sla.kernel import (
    ACTION_MODES,
    DEFICIT,
    QUEUE,
    REWARD_MODES,
    STATE_ROWS,
    WORK,
    step_copies,
)

MINIMAL_INFO_ROWS = np.array([WORK, QUEUE, DEFICIT])


class ClusterSLAVectorEnv(BatchedCopies):
    """``num_envs`` copies of ``ClusterSLA-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own :class:`ClusterSLAEnv` (copy i of ``reset(seed=s)`` is seeded s + i, as
    in ``SyncVectorEnv``), whose simulator arrays then become slices of batch arrays that
    the single env's compiled step (:func:`~cluster_envs.sla.kernel.step_copies`, which the single env
    calls with a batch of one) steps all at once, so there is one implementation of the dynamics. Autoreset is
    Gymnasium's ``NEXT_STEP``: the step after a copy's truncation resets it (its action is ignored, its
    reward 0). Supported: the paper's observation (``observation_mode="binary"``, ``obs_format="box"``, no time)
    and the built-in reward modes. ``info`` holds the ``info_level="minimal"`` keys as (B, N) arrays with
    ``_key`` masks and, for copies that end, ``episode_summary``.
    """

    def __init__(self, num_envs: int, preset: str = "paper_synthetic_small", render_mode: str | None = None,
                 **overrides: Any):  # fmt: skip
        super().__init__(num_envs, lambda **kw: ClusterSLAEnv(preset, **kw), overrides, render_mode, "ClusterSLA-v0")
        cfg = self.config
        self.require((("observation_mode", cfg.observation_mode, "binary"), ("obs_format", cfg.obs_format, "box"),
                      ("include_time", cfg.include_time, False)))  # fmt: skip
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
        self._action_mode, self._reward_mode = ACTION_MODES.index(cfg.action_mode), REWARD_MODES.index(cfg.reward_mode)

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
        self._obs[b] = obs
        self._ts[b] = 0
        self._needs_reset[b] = False
        return info

    def _batch_observation(self) -> np.ndarray:
        return self._obs.copy()

    def step(self, actions: Any):
        actions, stepping = self.finite_actions(actions)
        reset_infos = {b: self._reset_copy(b, None, None) for b in np.flatnonzero(~stepping)}
        cfg = self.config
        rewards = np.zeros(self.num_envs)
        step_copies(self._states, self._stats, self._series, self._opt_cum, actions, self._ts, stepping,
                    self._action_mode, self._reward_mode, cfg.reward_kappa, cfg.empty_tol, cfg.sla_tol,
                    self._sla_bar, self._obs, rewards)  # fmt: skip
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
