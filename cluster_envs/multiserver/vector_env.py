"""``ClusterMultiServer-v0`` and ``ClusterGang-v0`` batched: B copies stepped by one compiled call
(``gym.make_vec(..., vectorization_mode="vector_entry_point")``)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from cluster_envs.common import pcg
from cluster_envs.common.env import invalid_action
from cluster_envs.common.flat import flatten_batch
from cluster_envs.common.record import HoldsRecord
from cluster_envs.common.vector import BatchedCopies
from cluster_envs.multiserver import kernel
from cluster_envs.multiserver.entity import padded_mask
from cluster_envs.multiserver.env import ClusterMultiServerEnv
from cluster_envs.multiserver.gang import gang_workspace
from cluster_envs.multiserver.gang_env import ClusterGangEnv

MAX_PORTS = 20  # the oracle's values are kept per arrival pattern: 2^|L| entries
INFO_KEYS = {"utility": kernel.UTILITY, "raw_utility": kernel.RAW_UTILITY}
COUNT_KEYS = {"n_dropped_arrival": kernel.DROPPED_ARRIVAL, "n_dropped_capacity": kernel.DROPPED_CAPACITY}
REGRET_KEYS = {"expected_utility": kernel.EXPECTED, "oracle_utility": kernel.ORACLE, "slot_regret": kernel.SLOT_REGRET,
               "realized_regret": kernel.REALIZED_REGRET, "regret": kernel.REGRET}  # fmt: skip


class ClusterMultiServerVectorEnv(HoldsRecord, BatchedCopies):
    """``num_envs`` copies of ``ClusterMultiServer-v0`` with the same keyword arguments, stepped together.

    Each copy is reset by its own env (copy i of ``reset(seed=s)`` is seeded s + i, as in ``SyncVectorEnv``;
    ``reset(seed=[...])`` takes one seed per copy), whose utility and arrival streams the batch then continues
    from their ``PCG64`` states (:mod:`~cluster_envs.common.pcg`; the copies' own generators are not
    advanced). :func:`~cluster_envs.multiserver.kernel.step_batch` runs the single env's compiled repair and
    utility kernels for every copy, so there is one implementation of the dynamics. Autoreset is Gymnasium's
    ``NEXT_STEP``: the step after a copy's truncation resets it (its action is ignored, its reward 0). ``info``
    holds the ``info_level="minimal"`` keys as (B,) arrays with ``_key`` masks, the single env's reset info
    (``t`` = 1, ``arrivals``) for copies just reset and, for copies that end, ``episode_summary``. Not
    supported (use ``SyncVectorEnv``): ``obs_static=True``, ``binary_repair_order="random"``, more than 20
    ports with ``compute_regret``, a trace workload (its arrivals are replayed, not drawn).
    """

    env_class = ClusterMultiServerEnv

    def __init__(self, num_envs: int, preset: str | None = None, render_mode: str | None = None, **overrides: Any):
        made: list = []

        def make_copy(**kwargs):  # the first copy draws the instance; the others share it (and its oracle's cache)
            made.append(copy.copy(made[0]) if made else self.env_class(**kwargs))
            return made[-1]

        overrides = {**({} if preset is None else {"preset": preset}), **overrides}
        super().__init__(num_envs, make_copy, overrides, render_mode, self.env_class.env_id)
        cfg = self.config
        # the kernel draws Bernoulli arrivals: a trace workload's replayed ones need SyncVectorEnv
        self.require(
            [("obs_static", getattr(cfg, "obs_static", False), False), ("workload", cfg.workload, "synthetic")]
        )
        if cfg.action_mode == "binary" and cfg.invalid_action == "repair":
            self.require([("binary_repair_order", cfg.binary_repair_order, "index")])
        inst = self.instance = self.envs[0].instance
        if cfg.compute_regret and inst.n_ports > MAX_PORTS:
            raise ValueError(f"n_ports={inst.n_ports} > {MAX_PORTS} with compute_regret=True is not supported by "
                             "the batched env; use SyncVectorEnv")  # fmt: skip
        self._dict_space = self.envs[0].dict_observation_space
        self._obs = {  # each copy's current observation (its reset's until it steps), as a Dict
            key: np.zeros((num_envs, *space.shape), space.dtype) for key, space in self._dict_space.items()
        }
        self._arrivals = np.zeros((num_envs, inst.n_ports), np.int8)  # of the slot about to be decided
        self._pattern = np.zeros(num_envs, np.int64)
        self._t = np.ones(num_envs, np.int64)
        self._sums = np.zeros((kernel.SUMS, num_envs))
        self._missing = np.zeros(num_envs, dtype=bool)
        self._oracle_values = np.full(2**inst.n_ports if cfg.compute_regret else 1, np.nan)
        self._entity = self.envs[0].entity  # observation_mode="entity": the padded edge rows, and their statistics
        self._counts = np.zeros((num_envs, inst.n_edges))
        self._utility_sums = np.zeros((num_envs, inst.n_edges))
        self._states = np.zeros((2 * num_envs, pcg.WORDS), np.uint64)  # copy b's utility, arrival streams: 2b, 2b+1
        self.record = self.make_record()

    def make_record(self) -> kernel.Batch:
        """The kernel's record of this batch: its configuration, instance, copies' state and scratch."""
        cfg, static = self.config, self._static_arrays()
        return kernel.batch_record(
            **static, binary=cfg.action_mode == "binary", scores=cfg.action_mode == "scores",
            raise_mode=cfg.invalid_action == "raise", regret=bool(cfg.compute_regret),
            penalty=float(cfg.infeasible_penalty), horizon=int(cfg.horizon), t=self._t, arrivals=self._arrivals,
            pattern=self._pattern, states=self._states, sums=self._sums, oracle_values=self._oracle_values,
            missing=self._missing, used=np.empty(static["A"].shape[0], np.int64),
            wanted=np.empty(self.instance.n_edges, np.int64), gang_work=self._gang_workspace(),
        )  # fmt: skip

    def _static_arrays(self) -> dict[str, Any]:
        """The kernel's instance arrays; the gang structure's are unused placeholders here."""
        unused = np.zeros((1, 1), np.int64)
        return {**self._utility_arrays(), "gang": False, "A": self.instance.A, "c": self.instance.c, "arms": unused,
                "task_req": unused, "server_cap": unused, "min_tasks": np.zeros(1, np.int64)}  # fmt: skip

    def _gang_workspace(self) -> tuple[np.ndarray, ...]:
        return (np.empty((1, 1), np.int64), np.empty(1, np.bool_), *(np.empty(1, np.int64) for _ in range(5)))

    def _utility_arrays(self) -> dict[str, Any]:
        inst, u = self.instance, self.instance.utility
        return {"port_of_edge": np.ascontiguousarray(inst.port_of_edge), "rho": inst.rho, "mu": u.mu,
                "sigma": u.sigma, "cost": u.cost, "clips": u.clips, "lo": u.lo, "width": u.width,
                "v_tilde": u.v_tilde}  # fmt: skip

    # -- copies -------------------------------------------------------------------------------------------

    def _reset_copy(self, b: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        env = self.envs[b]
        _, info = env.reset(seed=seed, options=options)
        obs = env._dict_observation()  # the Dict of the state, whatever observation_mode the env shows
        for key in kernel.OBS_KEYS:
            self._obs[key][b] = obs[key]
        self._arrivals[b] = obs["arrivals"]
        self._t[b] = 1
        self._sums[:, b] = 0.0
        self._counts[b] = 0.0
        self._utility_sums[b] = 0.0
        self._needs_reset[b] = False
        sim = env.simulator
        self._states[2 * b], self._states[2 * b + 1] = pcg.state_row(sim.rng_utility), pcg.state_row(sim.rng_arrivals)
        if self.config.compute_regret:
            self._pattern[b] = kernel.pattern_of(self._arrivals[b])
            self._fill_oracle(b)
        return info

    def _fill_oracle(self, b: int) -> None:
        pattern = self._pattern[b]
        if np.isnan(self._oracle_values[pattern]):
            self._oracle_values[pattern] = self.envs[b].oracle.lookup(self._arrivals[b])[1]

    # -- gymnasium API ------------------------------------------------------------------------------------

    def step(self, actions: Any):
        actions = self.real_actions(actions)
        if self._entity is not None:
            actions = np.ascontiguousarray(self._entity.padded_action(actions))
        cfg, n = self.config, self.num_envs
        resetting = self._needs_reset.copy()
        stepping = ~resetting
        code, copy_index = kernel.check_actions(actions, stepping, self.record)
        if code:
            self._raise(code, copy_index, actions[copy_index])
        reset_infos = {int(b): self._reset_copy(int(b), None, None) for b in np.flatnonzero(resetting)}
        obs = {key: np.empty_like(value) for key, value in self._obs.items()}
        rewards, values, counts = np.zeros(n), np.empty((kernel.VALUES, n)), np.empty((kernel.COUNTS, n), np.int64)
        out = (*(obs[key] for key in kernel.OBS_KEYS), rewards, values, counts)
        missing = kernel.step_batch(actions, stepping, self.record, out)
        if missing:
            for b in np.flatnonzero(self._missing):
                self._fill_oracle(int(b))
        for key, value in obs.items():
            if reset_infos:  # as SyncVectorEnv: a copy just reset shows its reset observation
                value[resetting] = self._obs[key][resetting]
            self._obs[key][:] = value  # kept: a masked reset returns the other copies' observations as they are
        self._counts += obs["last_action"]  # a copy just reset shows zeros
        self._utility_sums += obs["last_utility"]
        truncated = stepping & (self._t > cfg.horizon)
        infos = self._infos(stepping, truncated, values, counts)
        for b, info in reset_infos.items():  # as SyncVectorEnv: a copy's autoreset step carries its reset info
            infos = self._add_info(infos, info, b)
        self._needs_reset = truncated.copy()  # the caller may write into the returned array
        return self._emit(obs), rewards, np.zeros(n, dtype=bool), truncated, infos

    def action_masks(self) -> np.ndarray:
        """Every copy's MaskablePPO mask at once, bool (B, 2·|E|): row b is copy b's single env
        ``action_masks()`` for the slot about to be decided (its current observation's ``edge_mask``), so that
        MaskablePPO trains on the batched env."""
        allow_one = self._obs["edge_mask"].astype(bool) & self.env_class._fits_alone(self.instance)
        mask = np.stack([np.ones_like(allow_one), allow_one], axis=2)
        return mask.reshape(self.num_envs, -1) if self._entity is None else padded_mask(mask, self.config.max_edges)

    def _raise(self, code: int, b: int, action: np.ndarray) -> None:
        name = f"actions[{b}]"
        if code == 1:
            raise invalid_action("must be finite (no NaN or inf)", name)
        if code == 2:
            raise invalid_action("must be binary (0/1 per edge) in action_mode='binary'", name)
        # the batch holds this slot's arrivals (the copies' simulators are not stepped: theirs are those of slot 1)
        problem = self.envs[b].violation((action > 0.5).astype(np.int8), self._arrivals[b])
        raise invalid_action(f"is infeasible (invalid_action='raise'): it violates {problem}", name)

    def _batch_observation(self) -> Any:
        return self._emit({key: value.copy() for key, value in self._obs.items()})

    def _emit(self, obs: dict[str, np.ndarray]) -> Any:
        """The batch's Dict observation as ``observation_format`` gives it (flattened row by row in ``"flat"``), or
        the padded edge rows of ``observation_mode="entity"``."""
        if self._entity is not None:
            return self._entity.rows(obs["edge_mask"], obs["last_action"], self._counts, self._utility_sums,
                                     obs["time"])  # fmt: skip
        return flatten_batch(self._dict_space, obs) if self.config.observation_format == "flat" else obs

    def _infos(self, stepping: np.ndarray, truncated: np.ndarray, values: np.ndarray, counts: np.ndarray):
        """The step's info: rows of the kernel's fresh outputs, each with its own mask."""
        keys = [("t", counts[kernel.SLOT])]
        keys += [(key, values[row]) for key, row in INFO_KEYS.items()]
        keys += [(key, counts[row]) for key, row in COUNT_KEYS.items()]
        if self.config.compute_regret:
            keys += [(key, values[row]) for key, row in REGRET_KEYS.items()]
        infos = self.masked(keys, stepping)
        if truncated.any():
            infos["episode_summary"] = self.batched_summaries(truncated, self._summary)
            infos["_episode_summary"] = truncated.copy()
        return infos

    def _summary(self, b: int) -> dict[str, float]:
        """Copy b's episode summary, by its own env from the batch's running sums."""
        env, run = self.envs[b], self._sums[:, b]
        return env.summary_from({"aou": run[kernel.AOU], "expected": run[kernel.EXPECTED_AOU],
                                 "oracle": run[kernel.ORACLE_AOU], "regret": run[kernel.RUN_REGRET],
                                 "dropped": run[kernel.DROPPED]})  # fmt: skip

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
