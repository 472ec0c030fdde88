"""An RL run's configuration: the algorithms, the rl-zoo3 YAML sections (``baselines/rl/hyperparams/<algo>.yml``, the
env id's section) and ``RunConfig``, the section resolved for one id with the protocol's RL env kwargs and
observation wrapper (``baselines/eval/protocol.yml``; rl-zoo3's ``env_wrapper``, the same one in training and in
the adapter). ``python -m rl_zoo3.train --algo ppo --env ClusterSLA-v1 --gym-packages cluster_envs -conf
baselines/rl/hyperparams/ppo.yml`` trains the same model.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from baselines.eval.protocol import rl_base, rl_setting

HYPERPARAMS_DIR = Path(__file__).parent / "hyperparams"


# name -> (module, class). rl-zoo3 calls RecurrentPPO "ppo_lstm"; we keep its names. It has no MaskablePPO
# (2.9.2), so "ppo_mask" is ours.
ALGOS: dict[str, tuple[str, str]] = {
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "sac": ("stable_baselines3", "SAC"),
    "td3": ("stable_baselines3", "TD3"),
    "ppo_lstm": ("sb3_contrib", "RecurrentPPO"),
    "ppo_mask": ("sb3_contrib", "MaskablePPO"),  # envs with action_masks() (and its public action_mask_from)
}


MASKED = {"ppo_mask"}


# The install command of the 'rl' extra from a clone (the package is not on PyPI); torch first keeps the CPU build.
INSTALL_RL = 'pip install torch==2.13.0 && pip install -e ".[rl]"'


# rl-zoo3 keys this trainer does not implement (the others are n_envs, n_timesteps, normalize, env_kwargs,
# env_wrapper, policy, policy_kwargs and the algorithm's own keyword arguments).
ZOO_UNSUPPORTED = {"vec_env_wrapper", "frame_stack", "callback", "monitor_kwargs"}


def algo_class(algo: str) -> type:
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not supported; allowed: {list(ALGOS)}")
    module, name = ALGOS[algo]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as err:
        raise RuntimeError(f"algo={algo!r} needs the 'rl' extra: {INSTALL_RL} ({err})") from None


def has_section(algo: str, env_id: str) -> bool:
    """Whether ``baselines/rl/hyperparams/<algo>.yml`` has a section for ``env_id`` (an RL-ready id: its base id's)."""
    import yaml

    path = HYPERPARAMS_DIR / f"{algo}.yml"
    return path.is_file() and rl_base(env_id)[0] in (yaml.safe_load(path.read_text()) or {})


def load_hyperparams(algo: str, env_id: str, path: str | Path | None = None) -> dict[str, Any]:
    """The section of ``env_id`` in the rl-zoo3 YAML file of ``algo`` (a copy, raw as in the file); an RL-ready id
    reads its base id's section."""
    try:
        import yaml
    except ImportError:
        raise RuntimeError(f"RL baselines need the 'rl' extra: {INSTALL_RL}") from None

    path = Path(path) if path is not None else HYPERPARAMS_DIR / f"{algo}.yml"
    if not path.is_file():
        raise FileNotFoundError(f"no hyperparameter file {path} for algo={algo!r}")
    sections = yaml.safe_load(path.read_text()) or {}
    base_id, _ = rl_base(env_id)
    if base_id not in sections:
        raise ValueError(f"{path} has no section for env_id={base_id!r}; it has {sorted(sections)}")
    section = dict(sections[base_id])
    unsupported = sorted(set(section) & ZOO_UNSUPPORTED)
    if unsupported:
        raise ValueError(f"{path} [{base_id}] uses {unsupported}, which `cluster-envs train` does not support")
    return section


# (YAML value, the id's value) pairs that are one interface: the ClusterApprox RL ids' "scaled" observation is the
# flat one in O(1) units, so they train with their base id's "flat" sections
SAME_INTERFACE = {("flat", "scaled")}


@dataclass
class RunConfig:
    """Hyperparameters split into what builds the envs and what goes to the algorithm's constructor."""

    algo: str
    env_id: str
    env_kwargs: dict[str, Any]
    n_envs: int
    n_timesteps: int
    normalize: dict[str, Any] | None
    wrapper: str | None = None  # an observation wrapper, "module.Class" as in rl-zoo3's env_wrapper
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    section: dict[str, Any] = field(default_factory=dict)  # the YAML section as written

    @classmethod
    def resolve(
        cls, algo: str, env_id: str, overrides: Mapping[str, Any] | None = None, path: str | Path | None = None
    ) -> RunConfig:
        """The YAML section with the settings table's RL env kwargs and the user's ``overrides`` on top (for an
        RL-ready id, the kwargs it fixes; see ``baselines.eval.protocol.rl_setting``)."""
        raw = load_hyperparams(algo, env_id, path)
        section = dict(raw)
        setting = rl_setting(env_id)
        table_kwargs = setting.training_kwargs(algo)
        yaml_kwargs = dict(raw.pop("env_kwargs", None) or {})
        base, fixed = rl_base(env_id)
        where = f"{env_id}, which fixes it (train {base} with this algorithm)" if fixed else "settings"
        for key, value in yaml_kwargs.items():
            if key in table_kwargs and table_kwargs[key] != value and (value, table_kwargs[key]) not in SAME_INTERFACE:
                raise ValueError(f"env_kwargs[{key!r}] is {value!r} in the YAML but {table_kwargs[key]!r} in {where}")
        wrapper = raw.pop("env_wrapper", None)
        if wrapper != setting.rl_wrapper:
            raise ValueError(f"env_wrapper is {wrapper!r} in the YAML but {setting.rl_wrapper!r} in settings")
        normalize = raw.pop("normalize", False)
        if isinstance(normalize, str):  # rl-zoo3 also accepts a Python dict literal
            normalize = ast.literal_eval(normalize)
        normalize = {} if normalize is True else (dict(normalize) if normalize else None)
        policy_kwargs = raw.pop("policy_kwargs", None)
        if isinstance(policy_kwargs, str):  # rl-zoo3 writes them as "dict(net_arch=[64, 64])"
            policy_kwargs = _eval_policy_kwargs(policy_kwargs)
        model_kwargs = {"policy": raw.pop("policy", "MlpPolicy"), **raw}
        if policy_kwargs:
            model_kwargs["policy_kwargs"] = policy_kwargs
        return cls(
            algo=algo,
            env_id=env_id,
            env_kwargs={**yaml_kwargs, **table_kwargs, **dict(overrides or {})},
            n_envs=int(model_kwargs.pop("n_envs", 1)),
            n_timesteps=int(float(model_kwargs.pop("n_timesteps", 100_000))),
            normalize=normalize,
            wrapper=wrapper,
            model_kwargs=model_kwargs,
            section=section,
        )

    def as_yaml_dict(self) -> dict[str, Any]:
        """The section with the env kwargs actually used, in rl-zoo3's format (saved as ``config.yml``)."""
        return {self.env_id: {**self.section, "env_kwargs": self.env_kwargs}}


def _eval_policy_kwargs(text: str) -> dict[str, Any]:
    import torch

    namespace = {"dict": dict, "nn": torch.nn, "th": torch, "torch": torch, "__builtins__": {}}
    value = eval(text, namespace)  # noqa: S307  (rl-zoo3's own format; the file is part of the package)
    if not isinstance(value, dict):
        raise ValueError(f"policy_kwargs must evaluate to a dict, got {text!r}")
    return value


def wrapper_class(name: str) -> type[gym.ObservationWrapper]:
    """The observation wrapper ``"module.Class"`` (rl-zoo3's ``env_wrapper`` format, without kwargs)."""
    module, _, cls_name = str(name).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"env_wrapper={name!r} is not an importable 'module.Class'") from None
    if not (isinstance(cls, type) and issubclass(cls, gym.ObservationWrapper)):
        # The adapter applies the wrapper to observations alone, outside any env.
        raise ValueError(f"env_wrapper={name!r} must be a gymnasium.ObservationWrapper")
    return cls


class _SpacesOnly(gym.Env):
    """An env that only declares spaces: what an observation wrapper needs to map observations."""

    def __init__(self, observation_space: gym.Space):
        self.observation_space = observation_space
        self.action_space = gym.spaces.Discrete(1)


def observation_mapper(wrappers: Sequence[str], observation_space: gym.Space) -> Callable[[Any], Any] | None:
    """The observation wrappers' ``observation`` functions, composed in order, for observations of
    ``observation_space`` (the raw env's); None without wrappers."""
    functions = []
    space = observation_space
    for name in wrappers:
        wrapper = wrapper_class(name)(_SpacesOnly(space))
        functions.append(wrapper.observation)
        space = wrapper.observation_space
    if not functions:
        return None

    def mapped(observation: Any) -> Any:
        for function in functions:
            observation = function(observation)
        return observation

    return mapped
