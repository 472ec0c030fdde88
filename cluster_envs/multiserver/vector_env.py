"""``ClusterMultiServer-v0`` and ``ClusterGang-v0`` batched: B copies stepped by one compiled call
(``gym.make_vec(..., vectorization_mode="vector_entry_point")``)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from cluster_envs.common.vector import BatchedCopies
from cluster_envs.multiserver import batch
from cluster_envs.multiserver.env import ClusterMultiServerEnv
from cluster_envs.multiserver.gang import gang_workspace
from cluster_envs.multiserver.gang_env import ClusterGangEnv

BLOCK = 256  # slots of exogenous draws taken per copy at a time (a numba call per copy and block costs ≈35 µs)
MAX_PORTS = 20  # the oracle's values are kept per arrival pattern: 2^|L| entries
INFO_KEYS = {"utility": batch.UTILITY, "raw_utility": batch.RAW_UTILITY, "n_dropped_arrival": batch.DROPPED_ARRIVAL,
             "n_dropped_capacity": batch.DROPPED_CAPACITY}  # fmt: skip
REGRET_KEYS = {"expected_utility": batch.EXPECTED, "oracle_utility": batch.ORACLE, "slot_regret": batch.SLOT_REGRET,
               "realized_regret": batch.REALIZED_REGRET}  # fmt: skip
OBS_KEYS = ("arrivals", "edge_mask", "time", "last_action", "last_utility")


class ClusterMultiServerVectorEnv(BatchedCopies):
    """``num_envs`` copies of ``ClusterMultiServer-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own env (copy i of ``reset(seed=s)`` is seeded s + i, as in ``SyncVectorEnv``;
    ``reset(seed=[...])`` takes one seed per copy). Its utility and arrival generators then fill blocks of
    upcoming draws, and :func:`~cluster_envs.multiserver.batch.step_batch` runs the single env's compiled
    repair and utility kernels for every copy, so there is one implementation of the dynamics. Autoreset is
    Gymnasium's ``NEXT_STEP``: the step after a copy's truncation resets it (its action is ignored, its
    reward 0). ``info`` holds the ``info_level="minimal"`` keys as (B,) arrays with ``_key`` masks, the single
    env's reset info (``t`` = 1, ``arrivals``) for copies just reset and, for copies that end,
    ``episode_summary``. Not supported (use ``SyncVectorEnv``): ``obs_static=True``,
    ``binary_repair_order="random"``, more than 20 ports with ``compute_regret``.
    """

    env_class = ClusterMultiServerEnv

    def __init__(self, num_envs: int, preset: str | None = None, render_mode: str | None = None, **overrides: Any):
        kwargs = {**({} if preset is None else {"preset": preset}), **overrides}
        made: list = []

        def make_copy():  # the first copy draws the instance; the others share it (and its oracle's cache)
            made.append(copy.copy(made[0]) if made else self.env_class(**kwargs))
            return made[-1]

        super().__init__(num_envs, make_copy, render_mode, self.env_class.env_name)
        cfg = self.config
        self.require([("obs_static", getattr(cfg, "obs_static", False), False)])
        if cfg.action_mode == "binary" and cfg.invalid_action == "repair":
            self.require([("binary_repair_order", cfg.binary_repair_order, "index")])
        inst = self.instance = self.envs[0].instance
        if cfg.compute_regret and inst.n_ports > MAX_PORTS:
            raise ValueError(f"n_ports={inst.n_ports} > {MAX_PORTS} with compute_regret=True is not supported by "
                             "the batched env; use SyncVectorEnv")  # fmt: skip
        n_e, n_l = inst.n_edges, inst.n_ports
        self._obs = {
            "arrivals": np.zeros((num_envs, n_l), np.int8),
            "edge_mask": np.zeros((num_envs, n_e), np.int8),
            "time": np.zeros((num_envs, 1), np.float32),
            "last_action": np.zeros((num_envs, n_e), np.int8),
            "last_utility": np.zeros((num_envs, n_e), np.float32),
        }
        self._normals = np.zeros((BLOCK, num_envs, n_e))
        self._uniforms = np.zeros((BLOCK, num_envs, n_l))
        self._position = np.zeros(num_envs, np.int64)
        self._t = np.ones(num_envs, np.int64)
        self._scalars = np.zeros((num_envs, batch.SCALARS))
        self._sums = np.zeros((num_envs, batch.SUMS))
        self._missing = np.zeros(num_envs, dtype=bool)
        self._oracle_values = np.full(2**n_l if cfg.compute_regret else 1, np.nan)
        self._static = self._static_arrays()
        self._work = (np.empty(self._static["A"].shape[0], np.int64), *self._gang_workspace())

    def _static_arrays(self) -> dict[str, Any]:
        """The kernel's instance arrays; the gang structure's are unused placeholders here."""
        unused = np.zeros((1, 1), np.int64)
        return {**self._utility_arrays(), "gang": False, "A": self.instance.A, "c": self.instance.c, "arms": unused,
                "task_req": unused, "server_cap": unused, "min_tasks": np.zeros(1, np.int64)}  # fmt: skip

    def _gang_workspace(self) -> tuple[np.ndarray, ...]:
        return (np.empty((1, 1), np.int64), np.empty(1, np.bool_), np.empty(1, np.bool_), np.empty(1, np.int64),
                np.empty(1, np.int64))  # fmt: skip

    def _utility_arrays(self) -> dict[str, Any]:
        inst, u = self.instance, self.instance.utility
        return {"port_of_edge": np.ascontiguousarray(inst.port_of_edge), "rho": inst.rho, "mu": u.mu,
                "sigma": u.sigma, "cost": u.cost, "clips": u.clips, "lo": u.lo, "width": u.width,
                "v_tilde": u.v_tilde}  # fmt: skip

    # -- copies -------------------------------------------------------------------------------------------

    def _reset_copy(self, b: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        env = self.envs[b]
        obs, info = env.reset(seed=seed, options=options)
        for key in OBS_KEYS:
            self._obs[key][b] = obs[key]
        self._t[b] = 1
        self._sums[b] = 0.0
        self._needs_reset[b] = False
        self._draw(b)
        self._fill_oracle(b)
        return info

    def _draw(self, b: int) -> None:
        sim = self.envs[b].simulator
        batch.draw_block(sim.rng_utility, sim.rng_arrivals, self._normals, self._uniforms, b)
        self._position[b] = 0

    def _fill_oracle(self, b: int) -> None:
        if self.config.compute_regret:
            arrivals = self._obs["arrivals"][b]
            pattern = batch.pattern_of(arrivals)
            if np.isnan(self._oracle_values[pattern]):
                self._oracle_values[pattern] = self.envs[b].oracle.lookup(arrivals)[1]

    # -- gymnasium API ------------------------------------------------------------------------------------

    def step(self, actions: Any):
        actions = self.real_actions(actions)
        cfg, static = self.config, self._static
        resetting = self._needs_reset.copy()
        stepping = ~resetting
        raise_mode = cfg.invalid_action == "raise"
        code, copy_index = batch.check_actions(
            actions, stepping, cfg.action_mode == "binary", raise_mode, static["gang"], self._obs["edge_mask"],
            static["A"], static["c"], static["arms"], static["task_req"], static["server_cap"], static["min_tasks"],
        )  # fmt: skip
        if code:
            self._raise(code, copy_index, actions[copy_index])
        reset_infos = {int(b): self._reset_copy(int(b), None, None) for b in np.flatnonzero(resetting)}
        for b in np.flatnonzero(stepping & (self._position == BLOCK)):
            self._draw(int(b))
        rewards = np.zeros(self.num_envs)
        missing = batch.step_batch(
            actions, stepping, cfg.action_mode == "scores", raise_mode, static["gang"], self._t, self._position,
            self._obs["arrivals"], self._obs["edge_mask"], self._normals, self._uniforms, static["port_of_edge"],
            static["rho"], static["A"], static["c"], static["arms"], static["task_req"], static["server_cap"],
            static["min_tasks"], static["mu"], static["sigma"], static["cost"], static["clips"], static["lo"],
            static["width"], static["v_tilde"], cfg.compute_regret, self._oracle_values, self._missing,
            cfg.infeasible_penalty, cfg.horizon, self._obs["last_action"], self._obs["last_utility"],
            self._obs["time"], rewards, self._scalars, self._sums, *self._work,
        )  # fmt: skip
        if missing:
            for b in np.flatnonzero(self._missing):
                self._fill_oracle(int(b))
        truncated = stepping & (self._t > cfg.horizon)
        infos = self._infos(stepping, truncated)
        for b, info in reset_infos.items():  # as SyncVectorEnv: a copy's autoreset step carries its reset info
            infos = self._add_info(infos, info, b)
        self._needs_reset = truncated.copy()  # the caller may write into the returned array
        return self._batch_observation(), rewards, np.zeros(self.num_envs, dtype=bool), truncated, infos

    def _raise(self, code: int, b: int, action: np.ndarray) -> None:
        if code == 1:
            raise ValueError(f"actions[{b}] must be finite (no NaN or inf)")
        if code == 2:
            raise ValueError(f"actions[{b}] must be binary (0/1 per edge) in action_mode='binary'")
        # the batch holds this slot's arrivals (the copies' simulators draw theirs in blocks, ahead of it)
        problem = self.envs[b]._violation((action > 0.5).astype(np.int8), self._obs["arrivals"][b])
        raise ValueError(f"actions[{b}]: infeasible action (invalid_action='raise') violates {problem}")

    def _batch_observation(self) -> dict[str, np.ndarray]:
        return {key: value.copy() for key, value in self._obs.items()}

    def _infos(self, stepping: np.ndarray, truncated: np.ndarray) -> dict[str, Any]:
        infos: dict[str, Any] = {"t": self._t - 1, "_t": stepping.copy()}
        keys = {**INFO_KEYS, **(REGRET_KEYS if self.config.compute_regret else {})}
        for key, column in keys.items():
            value = self._scalars[:, column]
            infos[key] = value.astype(np.int64) if key.startswith("n_dropped") else value.copy()
            infos[f"_{key}"] = stepping.copy()  # own masks: _add_info writes into them
        if self.config.compute_regret:
            infos["regret"], infos["_regret"] = self._sums[:, batch.REGRET].copy(), stepping.copy()
        if truncated.any():
            infos["episode_summary"] = self.batched_summaries(truncated, self._summary)
            infos["_episode_summary"] = truncated.copy()
        return infos

    def _summary(self, b: int) -> dict[str, float]:
        """Copy b's episode summary, by its own env from the batch's running sums."""
        env, run = self.envs[b], self._sums[b]
        env._cum = {"aou": run[batch.AOU], "expected": run[batch.EXPECTED_AOU], "oracle": run[batch.ORACLE_AOU],
                    "regret": run[batch.REGRET], "dropped": run[batch.DROPPED]}  # fmt: skip
        return env._summary()

    @property
    def step_counts(self) -> np.ndarray:
        """Slots each copy has played in its current episode."""
        return self._t - 1


class ClusterGangVectorEnv(ClusterMultiServerVectorEnv):
    """``num_envs`` copies of ``ClusterGang-v0`` (see :class:`ClusterMultiServerVectorEnv`), repaired by the
    single env's compiled gang repair."""

    env_class = ClusterGangEnv

    def _gang_workspace(self) -> tuple[np.ndarray, ...]:
        return gang_workspace(self.instance)

    def _static_arrays(self) -> dict[str, Any]:
        inst = self.instance
        return {**self._utility_arrays(), "gang": True, "A": np.zeros((1, 1), np.int64), "c": np.zeros(1, np.int64),
                "arms": inst.arms, "task_req": inst.task_req, "server_cap": inst.server_cap,
                "min_tasks": np.asarray(inst.min_tasks, np.int64)}  # fmt: skip
