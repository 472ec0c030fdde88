"""The shell every single env of the suite subclasses, in the style of HighwayEnv's ``AbstractEnv``.

:class:`ClusterEnv` does, once for every setting, what is not the model: it builds and validates the config
(a preset plus keyword overrides), checks ``render_mode``, guards ``step`` and the episode's state before
``reset`` and after the episode's end, and dispatches ``render``. A setting's env supplies the hooks:

- ``config_class`` and ``presets`` (class attributes), and ``env_id``, the registered id (for messages);
- ``_episode_over()`` (True once ``step`` must not be called again) and ``_step(action)``;
- ``_render_ansi()`` and ``_render_rgb()``;
- it sets ``self._sim`` at ``reset``; ``simulator`` then returns it;
- an env with ``observation_mode`` (``"dict"`` or ``"flat"``, :mod:`cluster_envs.common.flat`) declares its Dict
  space with :meth:`ClusterEnv.set_observation_space` and returns :meth:`ClusterEnv.emit` of its Dict observation.

Actions are read with :func:`as_real_array` and rejected with :func:`invalid_action`: one ``ValueError`` form,
naming the argument and what is allowed, for every env and its batched form.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from cluster_envs.common.config import build_config
from cluster_envs.common.flat import Flattener, observation_space
from cluster_envs.common.render import check_render_mode, render_metadata

INFO_LEVELS = ("minimal", "full")


def as_real_array(value: Any, shape: tuple[int, ...] | None = None, name: str = "action") -> np.ndarray:
    """``value`` as a numeric numpy array (bool, integer or float dtype, kept as given; no copy for an array), of
    ``shape`` if one is given; otherwise a ``ValueError`` naming ``name``. Complex values (which would lose their
    imaginary part), strings (which numpy would parse as numbers) and objects are refused."""
    if type(value) is not np.ndarray:
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as err:
            raise invalid_action(f"must be an array of real numbers, got {type(value).__name__}: {err}", name) from None
    if value.dtype.kind not in "biuf":
        raise invalid_action(f"must hold real numbers (bool, integer or float), got dtype {value.dtype}", name)
    if shape is not None and value.shape != shape:
        raise invalid_action(f"must have shape {shape}, got {value.shape}", name)
    return value


def invalid_action(detail: str, name: str = "action") -> ValueError:
    """The one form of a rejected action: ``ValueError("<name> <detail>")``, ``detail`` saying what is allowed
    (callers ``raise invalid_action(...)``)."""
    return ValueError(f"{name} {detail}")


class ClusterEnv(gym.Env):
    """The common shell: config, render mode, and the guards of ``step``, ``simulator`` and ``render``."""

    metadata = render_metadata()
    env_id: ClassVar[str]
    config_class: ClassVar[type]
    presets: ClassVar[dict[str, dict[str, Any]]]

    def __init__(self, preset: str, render_mode: str | None, overrides: dict[str, Any]):
        self.config = build_config(self.config_class, self.presets, preset, overrides)
        check_render_mode(render_mode)
        self.preset = preset
        self.render_mode = render_mode
        self._sim: Any = None

    @property
    def simulator(self) -> Any:
        """The episode's simulator (privileged: it holds the hidden state); a ``RuntimeError`` before ``reset``."""
        if self._sim is None:
            raise RuntimeError(f"{self.env_id}: call reset() before using the env")
        return self._sim

    def set_observation_space(self, dict_space: gym.spaces.Dict) -> None:
        """Declare the Dict observation (``dict_observation_space``) and the space ``observation_mode`` shows."""
        self.dict_observation_space = dict_space
        self.observation_space = observation_space(dict_space, self.config.observation_mode)
        self._flatten = Flattener(dict_space) if self.config.observation_mode == "flat" else None

    def emit(self, observation: dict[str, np.ndarray]) -> Any:
        """``observation`` (a Dict of ``dict_observation_space``) as ``observation_mode`` gives it: as is, or
        flattened into one array (``gymnasium.spaces.flatten``). The Dict is kept in ``last_observation``
        (what a policy saw: the action modes that read it, and the batched envs, use it)."""
        self.last_observation = observation
        return observation if self._flatten is None else self._flatten(observation)

    def step(self, action: Any):
        if self._sim is None:
            raise RuntimeError(f"{self.env_id}: call reset() before step()")
        if self._episode_over():
            raise RuntimeError(f"{self.env_id}: the episode ended at t = {self._sim.t}; call reset()")
        return self._step(action)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        self.simulator  # noqa: B018  (the guard: a RuntimeError before reset)
        return self._render_rgb() if self.render_mode == "rgb_array" else self._render_ansi()

    # -- hooks ------------------------------------------------------------------------------------------

    def _episode_over(self) -> bool:
        raise NotImplementedError

    def _step(self, action: Any):
        raise NotImplementedError

    def _render_ansi(self) -> str:
        raise NotImplementedError

    def _render_rgb(self) -> np.ndarray:
        raise NotImplementedError
