"""What every native batched env shares: B single envs as the copies, their seeds, and batched summaries.

Each setting's ``vector_env.py`` subclasses :class:`BatchedCopies`: the copies are reset by their own single env
(so resets, seeding and validation are the single env's), their simulators' arrays then become rows of batch
arrays, and the setting's compiled kernel steps every row with the single env's step code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cluster_envs.common.config import check_number


class BatchedCopies(VectorEnv):
    """``num_envs`` copies of one single env with the same keyword arguments; NEXT_STEP autoreset; the
    ``info_level="minimal"`` info keys (``"full"`` is refused: use ``SyncVectorEnv`` for the evaluation keys)."""

    # Gymnasium's metadata key, and the attribute its SyncVectorEnv also has (TorchRL reads the attribute)
    autoreset_mode = AutoresetMode.NEXT_STEP
    metadata = {"autoreset_mode": autoreset_mode, "render_modes": []}

    def __init__(self, num_envs: int, make_copy: Callable[..., gym.Env], overrides: dict[str, Any],
                 render_mode: str | None, env_id: str):  # fmt: skip
        """``make_copy(**kwargs)`` builds one copy from the user's ``overrides``, to which the batch adds
        ``info_level="minimal"``: the batch returns only the minimal info keys, so it rejects ``"full"`` rather
        than return less than it was asked for."""
        check_number("num_envs", num_envs, low=1, integer=True)
        if render_mode is not None:
            raise ValueError(f"render_mode must be None for the batched {env_id}, got {render_mode!r}")
        self.require((("info_level", overrides.get("info_level", "minimal"), "minimal"),))
        copy_kwargs = {**overrides, "info_level": "minimal"}
        self.envs = [make_copy(**copy_kwargs) for _ in range(num_envs)]
        self.config = self.envs[0].config
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._needs_reset = np.ones(num_envs, dtype=bool)

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every copy through its own env (which checks ``options``); the batch's observation and the copies'
        reset infos, as ``SyncVectorEnv`` returns them. ``options["reset_mask"]`` (a bool array of shape
        (num_envs,)) resets only those copies, as Gymnasium's ``SyncVectorEnv`` does: SB3's same-step autoreset
        (``cluster_envs/sb3.py``) resets the copies that ended without stepping the others."""
        mask = None
        if isinstance(options, dict) and "reset_mask" in options:  # other options go to the copies, which check them
            mask = options["reset_mask"]
            options = {key: value for key, value in options.items() if key != "reset_mask"} or None
        mask = self._reset_mask(mask)
        seeds = self.copy_seeds(seed)
        infos: dict[str, Any] = {}
        for b in np.flatnonzero(mask):
            infos = self._add_info(infos, self._reset_copy(int(b), seeds[b], options), int(b))
        return self._batch_observation(), infos

    def _reset_mask(self, mask: Any) -> np.ndarray:
        """The copies a reset resets: all without a mask, else the mask (checked as ``SyncVectorEnv`` checks it)."""
        if mask is None:
            return np.ones(self.num_envs, dtype=bool)
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), got {mask!r}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one copy")
        return mask

    def _reset_copy(self, b: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """Reset copy b through its own env and move its state into row b of the batch; its reset info."""
        raise NotImplementedError

    def _batch_observation(self) -> Any:
        """The batch's observation (a fresh array or dict of arrays: the caller may keep it)."""
        raise NotImplementedError

    @staticmethod
    def require(settings: Iterable[tuple[str, Any, Any]]) -> None:
        """``ValueError`` for the first (name, value, supported value) whose value the batched env cannot run."""
        for name, value, supported in settings:
            if supported is None and value is not None:  # e.g. an array: say what is set, not its contents
                raise ValueError(f"{name} is not supported by the batched env; use {name}=None")
            if supported is not None and value != supported:
                raise ValueError(f"{name}={value!r} is not supported by the batched env; use {supported!r}")

    def real_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as a C-contiguous float64 array of shape (num_envs, *single action shape); a ``ValueError``
        naming ``actions`` for anything else (complex values would lose their imaginary part, strings be parsed)."""
        try:
            raw = np.asarray(actions)
        except (TypeError, ValueError) as err:
            raise ValueError(f"actions could not be read as an array: {err}") from None
        if raw.dtype.kind not in "biuf":
            raise ValueError(f"actions must be real numbers, got dtype {raw.dtype}")
        expected = (self.num_envs, *self.single_action_space.shape)
        if raw.shape != expected:
            raise ValueError(f"actions must have shape (num_envs, *action shape) = {expected}, got {raw.shape}")
        return np.ascontiguousarray(raw, dtype=np.float64)

    def finite_actions(self, actions: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`real_actions` and the mask of copies that step (not autoresetting); a ``ValueError`` before any
        copy changes if a stepping copy's action is not finite (an autoresetting copy's action is ignored)."""
        actions = self.real_actions(actions)
        stepping = ~self._needs_reset
        if not np.isfinite(actions[stepping]).all():
            raise ValueError("actions must be finite (no NaN or inf)")
        return actions, stepping

    @staticmethod
    def masked(values: Iterable[tuple[str, Any]], mask: np.ndarray) -> dict[str, Any]:
        """``values`` (key, (B, ...) array) as info entries, each with its own ``_key`` mask (``_add_info`` writes
        into masks); none when no copy has them, as ``SyncVectorEnv`` adds a key only for copies that have it."""
        if not mask.any():
            return {}
        infos: dict[str, Any] = {}
        for key, value in values:
            infos[key], infos[f"_{key}"] = value, mask.copy()
        return infos

    def copy_seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        """Copy i of ``reset(seed=s)`` is seeded s + i, as in ``SyncVectorEnv``; a list gives one seed per copy."""
        if seed is None or isinstance(seed, (int, np.integer)):
            return [None if seed is None else int(seed) + b for b in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed has {len(seeds)} entries but num_envs={self.num_envs}")
        return seeds

    def batched_summaries(self, ended: np.ndarray, summary_of: Callable[[int], dict[str, float]]) -> dict[str, Any]:
        """The ``episode_summary`` of the copies that ``ended``, as (B,) arrays with ``_key`` masks."""
        out: dict[str, Any] = {}
        for b in np.flatnonzero(ended):
            for key, value in summary_of(int(b)).items():
                out.setdefault(key, np.zeros(self.num_envs))[b] = value
        for key in list(out):
            out[f"_{key}"] = ended.copy()
        return out
