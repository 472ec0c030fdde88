"""``observation_mode="flat"``: a Dict observation as one Box, for RL clients that take only an id.

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

OBSERVATION_MODES = ("dict", "flat")


def observation_space(dict_space: spaces.Dict, mode: str) -> gym.Space:
    """The space an env with ``observation_mode=mode`` declares: ``dict_space`` or its flattened Box."""
    return spaces.flatten_space(dict_space) if mode == "flat" else dict_space


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
