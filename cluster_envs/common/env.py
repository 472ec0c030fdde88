"""The skeleton every single env of the suite subclasses, in the style of HighwayEnv's ``AbstractEnv``.

:class:`ClusterEnv` owns, once for every setting, the order of operations of ``reset`` and ``step``; a setting's
env fills in the hooks that are its model. ``reset(seed=..., options=...)``:

1. ``options`` are checked against ``reset_options`` (:func:`~cluster_envs.common.config.check_reset_options`), then
   :meth:`~ClusterEnv._check_reset` checks everything else that can be checked before the episode exists and
   returns the episode's plan: a refused reset changes nothing;
2. the env's generator is seeded (``gymnasium.Env.reset``) and one stream per ``stream_names`` entry is spawned from
   it (:func:`~cluster_envs.common.seeding.episode_streams`; common random numbers);
3. :meth:`~ClusterEnv._new_episode` builds the episode (its simulator in ``self._sim``) and returns the reset
   info; if it refuses the episode (a ``ValueError`` of a resource guard, say), the generator is put back as it was;
4. the observation: :meth:`~ClusterEnv.emit` of :meth:`~ClusterEnv._observe`.

``step(action)``, after the guards (a ``RuntimeError`` before ``reset`` and after the episode's end):

1. :meth:`~ClusterEnv._read_action`: the action checked and read (a ``ValueError`` from :func:`invalid_action`
   leaves the env unchanged);
2. :meth:`~ClusterEnv._advance`: the kernel call that plays the step;
3. :meth:`~ClusterEnv._episode_end`: ``(terminated, truncated)``;
4. the info at the config's ``info_level``: :meth:`~ClusterEnv._minimal_info` or :meth:`~ClusterEnv._full_info`;
5. the reward, :meth:`~ClusterEnv._reward` (it may read the info: a callable reward mode);
6. at the episode's end, ``info["episode_summary"]`` (:meth:`~ClusterEnv._episode_summary`);
7. the observation, as at reset.

``render()`` dispatches to ``_render_ansi()`` or ``_render_rgb()`` by ``render_mode``. The class attributes are
``env_id`` (the registered id, for messages), ``config_class`` and ``presets``, ``reset_options`` and
``stream_names``. An env with ``observation_format`` (``"dict"`` or ``"flat"``, :mod:`cluster_envs.common.flat`)
declares its Dict space with :meth:`ClusterEnv.set_observation_space`; ``emit`` then flattens.

Actions are read with :func:`as_real_array` and rejected with :func:`invalid_action`: one ``ValueError`` form,
naming the argument and what is allowed, for every env and its batched form.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from cluster_envs.common.config import build_config, check_reset_options
from cluster_envs.common.flat import Flattener, observation_space
from cluster_envs.common.render import check_render_mode, render_metadata
from cluster_envs.common.seeding import episode_streams

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


def kernel_floats(value: np.ndarray) -> np.ndarray:
    """A real array (:func:`as_real_array`) as a compiled action reader takes it: float32 and float64 arrays as
    they are (the reader reads their entries as float64), any other dtype converted to float64 (numba has no
    float16 or long double, and each further dtype would be one more compilation)."""
    return value if value.dtype == np.float32 or value.dtype == np.float64 else value.astype(np.float64)


def invalid_action(detail: str, name: str = "action") -> ValueError:
    """The one form of a rejected action: ``ValueError("<name> <detail>")``, ``detail`` saying what is allowed
    (callers ``raise invalid_action(...)``)."""
    return ValueError(f"{name} {detail}")


class ClusterEnv(gym.Env):
    """The skeleton of ``reset`` and ``step`` (module docstring) and the guards of ``step``, ``simulator`` and
    ``render``; the hooks raise ``NotImplementedError`` until a setting's env fills them in."""

    metadata = render_metadata()
    env_id: ClassVar[str]
    config_class: ClassVar[type]
    presets: ClassVar[dict[str, dict[str, Any]]]
    reset_options: ClassVar[tuple[str, ...]] = ()
    stream_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, preset: str, render_mode: str | None, overrides: dict[str, Any]):
        self.config = build_config(self.config_class, self.presets, preset, overrides)
        check_render_mode(render_mode)
        self.preset = preset
        self.render_mode = render_mode
        self._sim: Any = None
        self._ended = False
        self._info_is_minimal = self.config.info_level == "minimal"
        self._flatten: Flattener | None = None

    @property
    def simulator(self) -> Any:
        """The episode's simulator (privileged: it holds the hidden state); a ``RuntimeError`` before ``reset``."""
        if self._sim is None:
            raise RuntimeError(f"{self.env_id}: call reset() before using the env")
        return self._sim

    def set_observation_space(self, dict_space: gym.spaces.Dict, writes_box: bool = False) -> None:
        """Declare the Dict observation (``dict_observation_space``) and the space ``observation_format`` shows.
        ``writes_box``: in ``observation_format="flat"`` the env's ``_observe`` returns the flat Box itself, written
        from the state in the layout of ``self._flatten`` (no Dict built per step: the RL ids' step rate), and
        :meth:`emit` passes it on."""
        self.dict_observation_space = dict_space
        self.observation_space = observation_space(dict_space, self.config.observation_format)
        self._flatten = Flattener(dict_space) if self.config.observation_format == "flat" else None
        self._writes_box = writes_box

    def emit(self, observation: Any) -> Any:
        """``observation`` as the env gives it: as is, or, with ``observation_format="flat"``, a Dict of
        ``dict_observation_space`` flattened into one array (``gymnasium.spaces.flatten``), unless the env writes
        the Box itself (``set_observation_space(..., writes_box=True)``). It is kept in ``last_observation`` (what a
        policy saw: the action modes that read it, and the batched envs, use it)."""
        self.last_observation = observation
        return observation if self._flatten is None or self._writes_box else self._flatten(observation)

    # -- the skeleton -----------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        plan = self._check_reset(check_reset_options(options, self.reset_options))
        generator = self._np_random
        state = None if generator is None else generator.bit_generator.state
        seeded = self._np_random_seed
        super().reset(seed=seed)
        try:
            info = self._new_episode(episode_streams(self.np_random, self.stream_names), plan)
        except Exception:  # a refused episode leaves the generator where it was
            self._np_random, self._np_random_seed = generator, seeded
            if generator is not None:
                generator.bit_generator.state = state
            raise
        self._ended = False
        return self.emit(self._observe()), info

    def step(self, action: Any):
        if self._sim is None:
            raise RuntimeError(f"{self.env_id}: call reset() before step()")
        if self._ended:
            raise RuntimeError(f"{self.env_id}: the episode ended at t = {self._sim.t}; call reset()")
        read = self._read_action(action)
        self._advance(read)
        terminated, truncated = self._episode_end()
        info = self._minimal_info() if self._info_is_minimal else self._full_info(read)
        reward = self._reward(info)
        if terminated or truncated:
            info["episode_summary"] = self._episode_summary()
            self._ended = True
        return self.emit(self._observe()), reward, terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        self.simulator  # noqa: B018  (the guard: a RuntimeError before reset)
        return self._render_rgb() if self.render_mode == "rgb_array" else self._render_ansi()

    # -- hooks ------------------------------------------------------------------------------------------

    def _check_reset(self, options: dict[str, Any]) -> Any:
        """Check what can be checked before the episode exists (``options`` are known names); the plan that
        :meth:`_new_episode` receives. Must not change the env."""
        return options

    def _new_episode(self, streams: dict[str, np.random.Generator], plan: Any) -> dict[str, Any]:
        """Build the episode from its ``streams`` (one per ``stream_names`` entry) and ``plan``: set ``self._sim``;
        the reset info. A refusal must come before the env changes."""
        raise NotImplementedError

    def _observe(self) -> Any:
        """The observation of the current state (before :meth:`emit`)."""
        raise NotImplementedError

    def _read_action(self, action: Any) -> Any:
        """``action`` checked and read for :meth:`_advance`; a ``ValueError`` (:func:`invalid_action`) changes
        nothing."""
        raise NotImplementedError

    def _advance(self, action: Any) -> None:
        """Play the step with the read ``action`` (the kernel call)."""
        raise NotImplementedError

    def _episode_end(self) -> tuple[bool, bool]:
        """``(terminated, truncated)`` after the step."""
        raise NotImplementedError

    def _minimal_info(self) -> dict[str, Any]:
        """The step's info at ``info_level="minimal"``."""
        raise NotImplementedError

    def _full_info(self, action: Any) -> dict[str, Any]:
        """The step's info at ``info_level="full"`` (``action``: as read)."""
        raise NotImplementedError

    def _episode_summary(self) -> dict[str, Any]:
        """``info["episode_summary"]`` at the episode's end."""
        raise NotImplementedError

    def _reward(self, info: dict[str, Any]) -> float:
        """The step's reward (``info``: the step's, for a reward computed from it)."""
        raise NotImplementedError

    def _render_ansi(self) -> str:
        raise NotImplementedError

    def _render_rgb(self) -> np.ndarray:
        raise NotImplementedError
