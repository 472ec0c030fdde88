"""``observation_format="flat"``: a Dict observation as one Box, for RL clients that take only an id.

``observation_format`` is the observation's form, ``"dict"`` (the Dict space) or ``"flat"`` (one Box);
``observation_mode``, where a setting has one, is its content.

The flat observation is ``gymnasium.spaces.flatten(dict_space, observation)``, the vector
``gymnasium.wrappers.FlattenObservation`` gives, so a policy trained through that wrapper reads the flat mode
unchanged. :func:`flatten_batch` flattens a batched observation (the native batched envs, and SB3's adapter over
them) row for row as :func:`gymnasium.spaces.flatten` flattens one.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

OBSERVATION_FORMATS = ("dict", "flat")


def observation_space(dict_space: spaces.Dict, observation_format: str) -> gym.Space:
    """The space an env with ``observation_format`` declares: ``dict_space`` or its flattened Box."""
    return spaces.flatten_space(dict_space) if observation_format == "flat" else dict_space


class Flattener:
    """``gymnasium.spaces.flatten(space, observation)`` for a Dict of Box, MultiBinary and 1-D MultiDiscrete parts,
    with the layout worked out once: per step one fresh array filled slice by slice (gymnasium's generic flatten
    dispatches per part and concatenates, the larger share of a flat RL id's step)."""

    def __init__(self, space: spaces.Dict):
        self.size, self.dtype = spaces.flatdim(space), spaces.flatten_space(space).dtype
        self.parts: list[tuple[str, int, int, np.ndarray | None]] = []
        start = 0
        for key, sub in space.spaces.items():
            if isinstance(sub, spaces.MultiDiscrete) and sub.nvec.ndim == 1:
                offsets = start + np.concatenate([[0], np.cumsum(sub.nvec)[:-1]]) - sub.start
                self.parts.append((key, start, start + int(sub.nvec.sum()), offsets.astype(np.int64)))
            elif isinstance(sub, (spaces.Box, spaces.MultiBinary)):
                self.parts.append((key, start, start + int(np.prod(sub.shape)), None))
            else:
                raise TypeError(f"Flattener takes Box, MultiBinary and 1-D MultiDiscrete parts, not {sub}")
            start = self.parts[-1][2]

    def __call__(self, observation: dict[str, Any]) -> np.ndarray:
        out = np.zeros(self.size, dtype=self.dtype)
        for key, start, stop, offsets in self.parts:
            if offsets is None:
                out[start:stop] = np.ravel(observation[key])
            else:
                out[offsets + np.asarray(observation[key], dtype=np.int64)] = 1
        return out


def flatten_batch(space: gym.Space, batch: Any) -> np.ndarray:
    """``gym.spaces.flatten(space, x)`` of every row of ``batch`` (a batched observation of ``space``), as one
    (B, n) array: Box and MultiBinary parts reshaped, 1-D MultiDiscrete parts one-hot encoded as ``flatten`` does,
    without a per-row loop; other spaces fall back to flattening row by row."""
    if isinstance(space, spaces.Dict):
        parts = [flatten_batch(sub, batch[key]) for key, sub in space.spaces.items()]
        # flatten_space's dtype, without building its Box every step (that was most of a batched step's time)
        return np.concatenate(parts, axis=1, dtype=np.result_type(*(sub.dtype for sub in space.spaces.values())))
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        array = np.asarray(batch, dtype=space.dtype)
        return array.reshape(array.shape[0], -1)
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
        values = np.asarray(batch, dtype=np.int64) - space.start
        offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
        out = np.zeros((values.shape[0], int(space.nvec.sum())), dtype=space.dtype)
        np.put_along_axis(out, values + offsets, 1, axis=1)
        return out
    return np.stack([spaces.flatten(space, row) for row in batch])
