"""``ClusterApprox-v1`` / ``ClusterApproxSingleJob-v0`` batched: B copies stepped by compiled loops over the batch
(``gym.make_vec(..., vectorization_mode="vector_entry_point")``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_envs.approx import kernel
from cluster_envs.approx.actions import read_actions
from cluster_envs.approx.env import ClusterApproxEnv, ClusterApproxSingleJobEnv, kernel_array
from cluster_envs.approx.model import CHUNK
from cluster_envs.approx.simulator import ApproxSimulator
from cluster_envs.common.flat import flatten_batch
from cluster_envs.common.record import HoldsRecord
from cluster_envs.common.vector import BatchedCopies

# Simulator arrays whose last axis is the job axis (padded to a common width in the batch) and the fixed-size ones.
JOB_ARRAYS = {"jf": (kernel.JF_ROWS, np.float64), "ji": (kernel.JI_ROWS, np.int64)}
FIXED_ARRAYS = ("mf", "mi", "si", "sf", "c", "f", "assign", "executed")


class ClusterApproxVectorEnv(HoldsRecord, BatchedCopies):
    """``num_envs`` copies of ``ClusterApprox-v1`` with the same keyword arguments, stepped together.

    Each copy is reset by its own single env (copy i of ``reset(seed=s)`` is seeded s + i, as in
    ``SyncVectorEnv``); its simulator's arrays then become slices of batch arrays (job arrays padded to the
    widest instance), which :func:`~cluster_envs.approx.kernel.batch_begin` and
    :func:`~cluster_envs.approx.kernel.batch_end` step in one compiled loop each; the single env runs the same
    two functions on a batch of one, so there is one implementation of the dynamics. ``batch_end`` writes the
    observation straight into fresh batch arrays. Autoreset is Gymnasium's ``NEXT_STEP``: the step after a copy's
    termination resets it (its action is ignored, its reward 0). Not supported: the Sec. V-C mode
    (``capacity``). ``info`` holds the ``info_level="minimal"`` keys as (B,) arrays with ``_key`` masks,
    for copies that end ``episode_summary``, and for copies that reset their reset info (as ``SyncVectorEnv``).
    """

    env_class: type[ClusterApproxEnv] | type[ClusterApproxSingleJobEnv] = ClusterApproxEnv

    def __init__(self, num_envs: int, preset: str = "default", render_mode: str | None = None, **overrides: Any):
        super().__init__(
            num_envs, lambda **kw: self.env_class(preset, **kw), overrides, render_mode, self.env_class.env_id
        )
        first, cfg = self.envs[0], self.config
        self.require((("capacity", cfg.capacity, None),))  # the Sec. V-C mode
        self._action_shape = (num_envs, *first.action_space.shape)
        self._mode, self._reward_entry = first.decode_mode, first.reward_entry
        m, k, b = cfg.n_machines, cfg.max_visible_jobs, num_envs
        self._batch: dict[str, np.ndarray] = {
            "mf": np.zeros((b, kernel.MF_ROWS, m)),
            "mi": np.zeros((b, kernel.MI_ROWS, m), dtype=np.int64),
            "si": np.zeros((b, kernel.SI_ROWS, k), dtype=np.int64),
            "sf": np.zeros((b, kernel.SF_ROWS, k)),
            "c": np.zeros((b, kernel.C_SIZE), dtype=np.int64),
            "f": np.zeros((b, kernel.F_SIZE)),
            "assign": np.zeros((b, k, m), dtype=bool),
            "executed": np.zeros((b, k, m), dtype=np.uint8),
        }
        self._dict_space = first.dict_observation_space
        self._n_fields = self._dict_space["job" if first.single_job else "jobs"].shape[-1]
        self._seen: dict[str, np.ndarray] = {}  # the last batch observation, as a Dict (the action modes read it)
        self._width = 0  # padded job-axis width (the record is made when the job arrays are)
        self.record = None
        self._rates = np.zeros((CHUNK, b, m))  # slot-major: copies in step read one contiguous block
        self._chunk_end = np.zeros(b, dtype=np.int64)
        self._offsets = np.zeros(b + 1, dtype=np.int64)
        self._p = np.zeros(kernel.P_SIZE, dtype=np.int64)
        self._attached = np.zeros(b, dtype=bool)  # the copies whose simulator reads the batch arrays

    # ------------------------------------------------------------------ copies and their arrays
    @property
    def simulators(self) -> list[ApproxSimulator]:
        """Privileged: each copy's simulator (its arrays are views into the batch)."""
        return [env.simulator for env in self.envs]

    def make_record(self) -> kernel.Batch | None:
        """The kernels' record of the batch arrays (None before the first reset makes the job arrays)."""
        return kernel.batch_record(**self._batch, p=self._p) if self._width else None

    def _widen(self, width: int) -> None:
        """Pad the job axis to ``width`` and re-point every live simulator at the new arrays."""
        old = self._width
        for name, (n_rows, dtype) in JOB_ARRAYS.items():
            grown = np.zeros((self.num_envs, n_rows, width), dtype=dtype)
            if old:
                grown[..., :old] = self._batch[name]
            self._batch[name] = grown
        self._power_in = np.zeros(self.num_envs * (self.config.max_visible_jobs + width))
        self._power_out = np.zeros_like(self._power_in)
        self._width = width
        self.record = self.make_record()
        for b in np.flatnonzero(self._attached):
            self._attach(b, self.envs[b].simulator)

    def _attach(self, b: int, sim: ApproxSimulator, values: dict[str, np.ndarray] | None = None) -> None:
        """Point copy b's simulator at its slices of the batch (first filled with ``values`` if given)."""
        n = sim.n_jobs
        for name in (*JOB_ARRAYS, *FIXED_ARRAYS):
            view = self._batch[name][b, :, :n] if name in JOB_ARRAYS else self._batch[name][b]
            if values is not None:
                view[...] = values[name]
            setattr(sim, name, view)  # the simulator now reads and writes its slice of the batch
        sim.record = sim.make_record()
        self._attached[b] = True

    def _reset_copy(self, b: int, seed: int | None, options: dict[str, Any] | None = None) -> dict[str, Any]:
        env = self.envs[b]
        _, info = env.reset(seed=seed, options=options)
        sim = env.simulator
        fresh = {name: getattr(sim, name) for name in (*JOB_ARRAYS, *FIXED_ARRAYS)}
        if sim.n_jobs > self._width:
            self._widen(max(sim.n_jobs, 2 * self._width))
        self._batch["jf"][b] = 0.0
        self._batch["ji"][b] = 0
        self._attach(b, sim, fresh)
        self._p[:] = sim.p
        self._chunk_end[b] = 0
        self._needs_reset[b] = False
        return info

    # ------------------------------------------------------------------ stepping
    def _actions(self, actions: Any, stepping: np.ndarray) -> np.ndarray:
        """The stepping copies' actions read as ``action_mode`` (the others' are ignored: zeros), flat per copy."""
        actions = kernel_array(actions, self._action_shape, "actions")
        if self.config.action_mode in ("work_conserving", "paced_priority"):
            actions = read_actions(self.config.action_mode, np.where(self._expand(stepping), actions, 0), self._seen,
                                   "actions")  # fmt: skip
        return np.ascontiguousarray(actions).reshape(self.num_envs, -1)

    def read_actions(self, actions: Any) -> np.ndarray:
        """The paper's actions (B, M) that ``step(actions)`` would run on the observation last returned: the
        ``action_mode``'s reading (occupant per machine on ClusterApprox-v1, run/idle on ClusterApproxSingleJob-v0);
        reads only what the policy saw."""
        return self._actions(actions, np.ones(self.num_envs, dtype=bool))

    def _expand(self, mask: np.ndarray) -> np.ndarray:
        return mask.reshape(-1, *(1,) * (len(self._action_shape) - 1))

    def _refill_rates(self, stepping: np.ndarray) -> None:
        """Copy b's rate chunk holding slot t_b + 1 into the batch (drawn by its own rate process, in order)."""
        upcoming = self._batch["c"][:, kernel.T] + 1
        for b in np.flatnonzero(stepping & (upcoming >= self._chunk_end)):
            process = self.envs[b].simulator.instance.rates
            process.rates(int(upcoming[b]))
            size = len(process.chunk)
            self._rates[:size, b] = process.chunk
            self._batch["c"][b, kernel.RATES_FROM] = process.chunk_start
            self._chunk_end[b] = process.chunk_start + size

    def step(self, actions: Any):
        resetting = self._needs_reset.copy()
        stepping = ~resetting
        actions = self._actions(actions, stepping)
        bad, code = kernel.batch_validate(actions, self._mode, self.config.max_visible_jobs, stepping)
        if bad >= 0:
            if code == kernel.BAD_VALUE:
                raise ValueError(f"actions[{bad}] must hold finite integer values (no NaN, inf or fractions)")
            high = self.config.max_visible_jobs if self._mode == kernel.DECODE_OCCUPANT else 1
            raise ValueError(f"actions[{bad}] values must lie in [0, {high}], got {actions[bad].tolist()}")
        reset_infos = {b: self._reset_copy(b, None) for b in np.flatnonzero(resetting)}
        self._refill_rates(stepping)
        a = self._batch
        count = kernel.batch_begin(actions, self._mode, self._rates, stepping, self.record, self._power_in,
                                   self._offsets)  # fmt: skip
        values, out = self._power_in[:count], self._power_out[:count]
        if self.config.utility == "power":
            np.power(values, self.config.beta, out=out)
        elif self.config.utility == "log":
            np.log1p(values, out=out)
        else:
            out[:] = values
        observation = self._end(stepping)
        rewards = np.where(stepping, a["f"][:, self._reward_entry], 0.0)
        terminated = stepping & (a["c"][:, kernel.T] == self.config.horizon)
        infos = self._infos(stepping, terminated)
        for b, info in reset_infos.items():  # as SyncVectorEnv: a copy's autoreset step carries its reset info
            infos = self._add_info(infos, info, b)
        self._needs_reset = terminated.copy()  # the caller may write into the returned array
        return observation, rewards, terminated, np.zeros(self.num_envs, dtype=bool), infos

    # ------------------------------------------------------------------ outputs
    def _batch_observation(self) -> dict[str, np.ndarray]:
        return self._end(np.zeros(self.num_envs, dtype=bool))

    def _end(self, stepping: np.ndarray) -> dict[str, np.ndarray]:
        """Finish the slot of the ``stepping`` copies; every copy's observation, written by the kernel straight into
        fresh arrays (the single env's ``observation_from``, key for key), flattened with ``observation_format="flat"``
        (and scaled with ``"scaled"``)."""
        b, m = self.num_envs, self.config.n_machines
        single = self.env_class.single_job
        obs = {"time": np.empty((b, 2))}
        for key in ("price", "n_obs", "sum_obs", "last_rate"):
            obs[key] = np.empty((b, m))
        obs["last_mask"] = np.empty((b, m), dtype=np.int8)
        jobs = np.empty((b, self.config.max_visible_jobs, self._n_fields))
        occupant = np.empty((b, 0 if single else m), dtype=np.int64)
        kernel.batch_end(self._power_out, self._offsets, stepping, self.record, float(self.config.beta),
                         self.config.horizon, (*obs.values(), jobs, occupant))  # fmt: skip
        if single:
            obs["job"] = jobs.reshape(b, self._n_fields)
        else:
            obs["jobs"], obs["last_occupant"] = jobs, occupant
        self._seen = obs
        if self.config.observation_format == "dict":
            return obs
        flat = flatten_batch(self._dict_space, obs)
        # "scaled": the single env's division by the public bounds, then float32
        return flat if self.config.observation_format == "flat" else (flat / self.envs[0].flat_scale).astype(np.float32)

    def _infos(self, stepping: np.ndarray, ended: np.ndarray) -> dict[str, Any]:
        f = self._batch["f"]
        values = [
            ("t", self._batch["c"][:, kernel.T].copy()),
            ("utility_true", f[:, kernel.UTILITY_TRUE].copy()),
            ("utility_approx", f[:, kernel.UTILITY_APPROX].copy()),
        ]
        if self._p[kernel.P_HAS_OPT]:
            values.append(("regret", f[:, kernel.ORACLE_ACCRUED] - f[:, kernel.UTILITY_APPROX]))
        infos = self.masked(values, stepping)
        if ended.any():
            summaries = self.batched_summaries(ended, lambda b: self.envs[b].simulator.summary())
            infos["episode_summary"], infos["_episode_summary"] = summaries, ended.copy()
        return infos


class ClusterApproxSingleJobVectorEnv(ClusterApproxVectorEnv):
    """``num_envs`` copies of ``ClusterApproxSingleJob-v0``, stepped together (see :class:`ClusterApproxVectorEnv`)."""

    env_class = ClusterApproxSingleJobEnv
