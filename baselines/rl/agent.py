"""A trained run as an ``Agent``: ``SB3Agent`` (the model behind the harness's agent interface) and ``SavedPolicy``
/ ``load_agent`` (a run folder loaded as one).

torch, stable-baselines3 and sb3-contrib are imported only when a function here needs them (extra ``rl``).
"""

from __future__ import annotations

import functools
import importlib
import io
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents.base import BaseAgent
from baselines.eval.protocol import FLATTEN, rl_setting
from baselines.rl import manifest
from baselines.rl.config import MASKED, algo_class, observation_mapper
from baselines.rl.manifest import DamagedRunError
from baselines.rl.runs import read_meta
from cluster_envs import register_envs
from cluster_envs.common.flat import flatten_batch


class SB3Agent(BaseAgent):
    """A trained SB3 model as an ``Agent``: it sees the observation only, mapped by the run's observation
    ``wrappers`` (names, applied in order) and normalized with the run's VecNormalize statistics, and acts
    deterministically (``deterministic=False``: it samples from the policy, with torch's generator). Recurrent
    policies keep their state within an episode; a masked policy (``action_mask``: (problem, raw observation) ->
    mask) gets the mask computed from the static problem and the observation. ``observation_space`` is the raw
    space the model's observations come from (before ``wrappers``; default the model's own) and ``trained_with``
    the training env's kwargs: ``check_spaces`` names them when an env does not fit.

    ``reset_batch(problems)`` and ``act_batch(observations)`` play a native batched env, one copy per problem, all
    at once (the harness's ``batched=True``): the same policy on every row, with per-row recurrent state and masks."""

    def __init__(
        self,
        model: Any,
        obs_normalizer: Any = None,
        name: str = "rl",
        env_kwargs=None,
        wrappers: Sequence[str] = (),
        action_mask=None,
        observation_space: gym.Space | None = None,
        trained_with: Mapping[str, Any] | None = None,
        deterministic: bool = True,
    ):
        self.model = model
        self.obs_normalizer = obs_normalizer
        self.wrappers = tuple(wrappers)
        self.observation_space = model.observation_space if observation_space is None else observation_space
        if self.wrappers and observation_space is None:
            raise ValueError(f"wrappers={list(self.wrappers)} need the raw observation_space they map from")
        self._map = observation_mapper(self.wrappers, self.observation_space)
        self.trained_with = trained_with
        self.action_mask = action_mask
        self.deterministic = bool(deterministic)
        self._problems: list[Any] = []
        self.name = name
        self.env_kwargs = dict(env_kwargs or {})
        self._state = None
        self._episode_start = np.ones(1, dtype=bool)

    def reset(self, problem: Any, seed: int | None = None) -> None:
        self._problems = [problem]
        self._state = None
        self._episode_start = np.ones(1, dtype=bool)

    def reset_batch(self, problems: Sequence[Any], seeds: Sequence[int] | None = None) -> None:
        """Start one episode per problem (row i of the batch plays ``problems[i]``)."""
        if self.wrappers not in ((), (FLATTEN,)):
            raise ValueError(f"a batch is mapped by {FLATTEN} only, not by wrappers={list(self.wrappers)}")
        self._problems = list(problems)
        self._state = None
        self._episode_start = np.ones(len(self._problems), dtype=bool)

    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Refuse an env whose spaces differ from the training env's (the harness calls this before ``reset``):
        SB3 would fail later with only a shape, e.g. "Unexpected observation shape (108,) ... use (35,)"."""
        differences = _space_differences("observation", observation_space, self.observation_space)
        differences += _space_differences("action", action_space, self.model.action_space)
        if differences:
            trained = "" if self.trained_with is None else f" trained with env_kwargs {dict(self.trained_with)}"
            raise ValueError(
                f"agent {self.name!r}{trained} does not fit this env: {'; '.join(differences)}. "
                "Make the env with the training kwargs that set these sizes (rollout(..., env_kwargs=...))"
            )

    def act(self, observation: Any) -> np.ndarray:
        masks = {}
        if self.action_mask is not None:
            masks["action_masks"] = self.action_mask(self._problems[0], observation)
        if self._map is not None:
            observation = self._map(observation)
        return self._predict(observation, masks)

    def act_batch(self, observations: Any) -> np.ndarray:
        """The actions of every row of the batch ``observations`` (as ``act`` on each row)."""
        masks = {}
        if self.action_mask is not None:
            masks["action_masks"] = np.stack(
                [self.action_mask(problem, _row(observations, i)) for i, problem in enumerate(self._problems)]
            )
        if self.wrappers:
            observations = flatten_batch(self.observation_space, observations)
        return self._predict(observations, masks)

    def _predict(self, observation: Any, masks: dict[str, np.ndarray]) -> np.ndarray:
        if self.obs_normalizer is not None:
            observation = self.obs_normalizer.normalize_obs(observation)
        action, self._state = self.model.predict(
            observation,
            state=self._state,
            episode_start=self._episode_start,
            deterministic=self.deterministic,
            **masks,
        )
        self._episode_start = np.zeros_like(self._episode_start)
        return action


def _row(batch: Any, i: int) -> Any:
    """Row ``i`` of a batched observation (a Dict's: every key's row)."""
    return {key: value[i] for key, value in batch.items()} if isinstance(batch, Mapping) else batch[i]


@dataclass(frozen=True)
class SavedPolicy:
    """A trained run as bytes: picklable and self-contained, so a task can ship it to any worker."""

    name: str
    algo: str
    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...]  # what the agent needs from the env (the settings' RL kwargs)
    model: bytes = field(repr=False)
    vecnormalize: bytes | None = field(default=None, repr=False)
    wrapper: str | None = None  # the run's observation wrapper ...
    observation_space: bytes | None = field(default=None, repr=False)  # ... and the raw space it maps from
    trained_with: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # training env kwargs

    @classmethod
    def from_dir(cls, path: str | Path, name: str | None = None) -> SavedPolicy:
        """A run saved by ``train`` (``meta.json``) or by ``python -m rl_zoo3.train`` (``<env_id>/args.yml``)."""
        path = Path(path)
        if not (path / "meta.json").is_file() and list(path.glob("*/args.yml")):
            return cls._from_zoo(path, name)
        meta = read_meta(path)
        if problems := manifest.problems(path):
            raise DamagedRunError(f"the run in {path} is refused: {'; '.join(problems)}")
        needs = rl_setting(meta["env_id"]).rl_needs(meta["algo"])
        vecnorm = path / "vecnormalize.pkl"
        return cls(
            name=name or meta["algo"],
            algo=meta["algo"],
            env_id=meta["env_id"],
            env_kwargs=tuple(sorted((k, meta["env_kwargs"][k]) for k in needs)),
            model=(path / "model.zip").read_bytes(),
            vecnormalize=vecnorm.read_bytes() if vecnorm.is_file() else None,
            trained_with=meta["env_kwargs"],
            **_wrapping(meta["env_id"], meta["env_kwargs"], meta.get("env_wrapper")),
        )

    @classmethod
    def _from_zoo(cls, path: Path, name: str | None) -> SavedPolicy:
        args_file = next(path.glob("*/args.yml"))
        args, config = (_read_zoo_yaml(args_file.parent / f) for f in ("args.yml", "config.yml"))
        env_id = args["env"]
        env_kwargs = {**(config.get("env_kwargs") or {}), **(args.get("env_kwargs") or {})}
        needs = rl_setting(env_id).rl_needs(args["algo"])
        model = next((p for p in (path / f"{env_id}.zip", path / "best_model.zip") if p.is_file()), None)
        if model is None:
            raise FileNotFoundError(f"{path} holds no {env_id}.zip or best_model.zip")
        vecnorm = args_file.parent / "vecnormalize.pkl"
        return cls(
            name=name or args["algo"],
            algo=args["algo"],
            env_id=env_id,
            env_kwargs=tuple(sorted((k, v) for k, v in env_kwargs.items() if k in needs)),
            model=model.read_bytes(),
            vecnormalize=vecnorm.read_bytes() if vecnorm.is_file() else None,
            trained_with=env_kwargs,
            **_wrapping(env_id, env_kwargs, config.get("env_wrapper")),
        )

    def build(self) -> SB3Agent:
        model, normalizer = _load_model(self)
        raw_space = None if self.wrapper is None else pickle.loads(self.observation_space)
        return SB3Agent(
            model,
            normalizer,
            name=self.name,
            env_kwargs=dict(self.env_kwargs),
            wrappers=() if self.wrapper is None else (self.wrapper,),
            action_mask=action_mask_function(self.env_id) if self.algo in MASKED else None,
            observation_space=raw_space,
            trained_with=self.trained_with,
        )


def _space_size(space: gym.Space) -> str:
    """What a policy network's input or output layer depends on: the kind of space and its sizes (not a Box's
    bounds, which may legitimately change with e.g. the horizon)."""
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return f"MultiDiscrete({space.nvec.tolist()})"
    return f"{type(space).__name__}{space.shape}"


def _space_differences(where: str, env_space: gym.Space, model_space: gym.Space) -> list[str]:
    """Each place where the env's space and the model's differ in size, as "<where> is X here but Y in training"."""
    if isinstance(env_space, gym.spaces.Dict) and isinstance(model_space, gym.spaces.Dict):
        if list(env_space.spaces) != list(model_space.spaces):
            return [f"{where} keys are {list(env_space.spaces)} here but {list(model_space.spaces)} in training"]
        return [
            difference
            for key in env_space.spaces
            for difference in _space_differences(f"{where}[{key!r}]", env_space[key], model_space[key])
        ]
    here, there = _space_size(env_space), _space_size(model_space)
    return [] if here == there else [f"{where} is {here} here but {there} in training"]


def action_mask_function(env_id: str):
    """The env class's ``action_mask_from(problem, observation)``: its ``action_masks()`` computed from public
    data, which is all an agent may use (the information rule)."""
    register_envs()  # the ids it reads, explicitly rather than by an import's side effect (idempotent)
    env_class = gym.spec(env_id).entry_point
    if isinstance(env_class, str):
        module, _, name = env_class.partition(":")
        env_class = getattr(importlib.import_module(module), name)
    if not hasattr(env_class, "action_mask_from"):
        raise ValueError(f"{env_id} has no action_mask_from(problem, observation), so MaskablePPO cannot act in it")
    return env_class.action_mask_from


def _wrapping(env_id: str, env_kwargs: Mapping[str, Any], wrapper: str | None) -> dict[str, Any]:
    """The run's observation wrapper and the raw observation space of its training env (what the model's
    observations were mapped from; a model fits only envs with that space)."""
    if wrapper is None:
        return {}
    register_envs()
    env = gym.make(env_id, **env_kwargs)
    space = env.observation_space
    env.close()
    return {"wrapper": wrapper, "observation_space": pickle.dumps(space)}


@functools.lru_cache(maxsize=8)
def _load_model(policy: SavedPolicy) -> tuple[Any, Any]:
    """One model per process and policy (the episodes of a worker share it rather than load it each time)."""
    model = algo_class(policy.algo).load(io.BytesIO(policy.model), device="cpu")
    normalizer = pickle.loads(policy.vecnormalize) if policy.vecnormalize is not None else None
    return model, normalizer


def _read_zoo_yaml(path: Path) -> dict[str, Any]:
    """rl-zoo3 dumps an OrderedDict; read it with the safe loader taught only that one tag."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def ordered_dict(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> dict[str, Any]:
        (pairs,) = loader.construct_sequence(node, deep=True)
        return dict(pairs)

    Loader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", ordered_dict)
    return yaml.load(path.read_text(), Loader=Loader)  # noqa: S506 (a SafeLoader subclass)


def load_agent(path: str | Path, name: str | None = None) -> SB3Agent:
    """The run saved in ``path`` (by ``train`` or rl-zoo3) as an ``Agent``, with its VecNormalize statistics."""
    return SavedPolicy.from_dir(path, name).build()
