"""Anyone's agent under the benchmark's protocol: load it, guard it, and score it through ``compare``.

An agent comes from outside the package's registry in one of these forms (:func:`agent_spec`):

- an object following the agent protocol of ``agents/base.py`` (``reset(problem, seed)``, ``act(observation)``);
- a class or a factory of one (called with no argument), or a plain function ``observation -> action`` (or
  ``(observation, action_space) -> action``: it is given the env's action space);
- ``"MODULE:NAME"`` naming any of those (``MODULE`` a module name or a file path ``path/to/file.py``);
- a path to a stable-baselines3 model archive (``.zip``; its VecNormalize statistics ``vecnormalize.pkl`` or
  ``<stem>_vecnormalize.pkl`` beside it are applied when present; ``algo`` names its class, default PPO);
- a path to an ONNX file (``.onnx``), run with ONNX Runtime: one float32 input of the flattened observation
  (batch of one), one output read by the action space (a Box: the action, clipped to the bounds as SB3's
  ``predict`` does; Discrete/MultiDiscrete: logits, arg-maxed per dimension, or the integer action itself).

A model (ONNX or SB3) acts through the RL-ready id's interface (``cluster_envs.registration.RL_IDS``: a flat Box
observation): pass the RL-ready id (e.g. ``ClusterSLARL-v1``) or the base id (then its current RL-ready id's
kwargs). Everything runs on the base id under the protocol, so the scores are the benchmark's.

Every submitted agent is guarded (:class:`Guarded`): an exception, an action outside the env's action space or a
step longer than ``step_limit`` seconds ends the evaluation with one :class:`AgentError` line naming the agent, env,
seed and step. :func:`score` runs the protocol (``compare``, the benchmark's own code path: same evaluation seeds,
held-out instances, normalization, intervals and sanity flags) on one env or the whole row.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval.protocol import format_kwargs
from baselines.eval.record import build_record, check_declaration, write_record
from cluster_envs.registration import ENTITY_RL_IDS, RL_IDS

KINDS = ("object", "module", "onnx", "sb3", "registered", "rl")


class AgentError(RuntimeError):
    """A submitted agent failed: one line naming the agent, env, seed and step."""


def interface(env_id: str, model: bool) -> tuple[str, dict[str, Any]]:
    """(base id, the format kwargs the agent acts through): an RL-ready id's; for a model on a base id, its current
    RL-ready id's; else none. Only the format kwargs: the RL-ready id's problem kwargs are the benchmark's own, and
    its ``info_level`` is the harness's choice."""
    if env_id in RL_IDS:
        base, kwargs = RL_IDS[env_id]
        return base, _format_only(base, kwargs)
    if model and rl_id(env_id) is not None:
        return env_id, _format_only(env_id, RL_IDS[rl_id(env_id)][1])
    return env_id, {}


def rl_id(env_id: str) -> str | None:
    """The RL-ready id of base id ``env_id`` that models act through (the benchmark's PPO interface), if any."""
    return next((k for k, (base, _) in RL_IDS.items() if base == env_id and k not in ENTITY_RL_IDS), None)


def templated_name(agent: Any) -> str | None:
    """The default entry name of a policy path with ``{env}`` (one model per env): its folder's name."""
    if isinstance(agent, str) and "{env}" in agent:
        return Path(agent).parent.name or "policy"
    return None


def for_env(agent: Any, env_id: str) -> Any:
    """``agent`` with ``{env}`` replaced for base id ``env_id``: by the base id, or, where no such file exists and
    the file named by the env's RL-ready id does, by that id (``ClusterSLARL-v1.onnx``, trained on that id)."""
    if not isinstance(agent, str) or "{env}" not in agent:
        return agent
    base = agent.replace("{env}", env_id)
    ready = rl_id(env_id)
    if not Path(base).exists() and ready is not None and Path(agent.replace("{env}", ready)).exists():
        return agent.replace("{env}", ready)
    return base


def _format_only(base: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    allowed = format_kwargs(base)
    return {key: value for key, value in kwargs.items() if key in allowed}


@dataclass(frozen=True)
class AgentSpec:
    """What builds a submitted agent in any worker (picklable): ``kind`` (one of ``KINDS``) and ``source`` (the
    ``MODULE:NAME`` text, the model's path, or the registered agent's name), the base ``env_id`` it plays and the
    format ``env_kwargs`` it acts through. ``obj``: the agent itself for kind ``object``."""

    name: str
    kind: str
    source: str
    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    privileged: bool = False
    step_limit: float | None = None
    algo: str = "ppo"
    obj: Any = field(default=None, compare=False, repr=False)

    def build(self) -> Guarded:
        return Guarded(self._inner(), self)

    def _inner(self) -> Any:
        if self.kind == "object":
            return as_agent(self.obj, self.source or self.name)
        if self.kind == "module":
            return as_agent(load_object(self.source), self.source)
        if self.kind == "onnx":
            return OnnxAgent(self.source, self.name)
        if self.kind == "sb3":
            return sb3_agent(self.source, self.algo, self.name)
        raise ValueError(f"kind={self.kind!r} cannot be built here; allowed: object, module, onnx, sb3")


def agent_spec(
    agent: Any,
    env_id: str,
    *,
    name: str | None = None,
    step_limit: float | None = None,
    algo: str = "ppo",
    rl_interface: bool | None = None,
) -> AgentSpec:
    """The spec of ``agent`` (an agent, class, factory or function; ``"MODULE:NAME"``; a ``.onnx`` or ``.zip`` path)
    on ``env_id``, checked by building it once (a bad module path, object or model fails here, before any episode).
    ``rl_interface``: act through the RL-ready id's kwargs on a base id (default: for a model only)."""
    if step_limit is not None and not step_limit > 0:
        raise ValueError(f"step_limit must be a positive number of seconds, got {step_limit!r}")
    if isinstance(agent, (str, Path)):
        text = str(agent)
        suffix = Path(text).suffix.lower()
        if suffix in (".onnx", ".zip"):
            if not Path(text).is_file():
                raise FileNotFoundError(f"policy {text!r} does not exist (expected an ONNX file or an SB3 .zip)")
            kind, default_name = ("onnx" if suffix == ".onnx" else "sb3"), Path(text).stem
        elif ":" in text:
            kind, default_name = "module", text.rsplit(":", 1)[1]
        else:
            raise ValueError(
                f"agent {text!r} is neither MODULE:NAME (a module or path/to/file.py and the name of an agent, class, "
                "factory or function in it) nor a policy file (.onnx, or a stable-baselines3 .zip)"
            )
        obj = None
    else:
        kind, text, obj = "object", "", agent
        default_name = getattr(agent, "name", None) or getattr(agent, "__name__", None) or type(agent).__name__
    base, kwargs = interface(env_id, model=kind in ("onnx", "sb3") if rl_interface is None else rl_interface)
    spec = AgentSpec(str(name or default_name), kind, text, base, tuple(sorted(kwargs.items())), False, step_limit,
                     algo, obj)  # fmt: skip
    built = spec._inner()
    privileged = bool(getattr(built, "privileged", False))
    extra = dict(getattr(built, "env_kwargs", {}) or {})
    merged = tuple(sorted({**kwargs, **extra}.items()))
    return AgentSpec(spec.name, kind, text, base, merged, privileged, step_limit, algo, obj)


def load_object(source: str) -> Any:
    """The object ``NAME`` of ``MODULE:NAME`` (``MODULE``: an importable module or a ``.py`` file path)."""
    module_text, _, attribute = source.rpartition(":")
    if not module_text or not attribute:
        raise ValueError(f"agent {source!r} must be MODULE:NAME, e.g. my_agents.py:policy or my_package.agents:Mine")
    try:
        if module_text.endswith(".py"):
            path = Path(module_text)
            if not path.is_file():
                raise FileNotFoundError(f"agent module file {module_text!r} does not exist")
            module_name = f"submitted_{path.stem}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module  # so that its objects pickle (worker processes)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_text)
    except FileNotFoundError:
        raise
    except Exception as err:  # noqa: BLE001  (any failure of the user's module is reported as one line)
        raise ImportError(f"agent module {module_text!r} does not import: {type(err).__name__}: {err}") from None
    if not hasattr(module, attribute):
        public = [n for n in vars(module) if not n.startswith("_")]
        raise ValueError(f"agent module {module_text!r} defines no {attribute!r}; it defines {public}")
    return getattr(module, attribute)


def _is_agent(obj: Any) -> bool:
    return not inspect.isclass(obj) and callable(getattr(obj, "act", None)) and callable(getattr(obj, "reset", None))


def as_agent(obj: Any, where: str) -> Any:
    """An agent from an agent, a class or factory of one, or a function ``observation -> action``."""
    expected = (
        "an agent (an object with reset(problem, seed) and act(observation), agents/base.py), a class or a factory "
        "of one (called with no argument), or a function observation -> action (or (observation, action_space) "
        "-> action)"
    )
    if _is_agent(obj):
        return obj
    if inspect.isclass(obj):
        if not (callable(getattr(obj, "act", None)) and callable(getattr(obj, "reset", None))):
            raise TypeError(f"{where}: class {obj.__name__} has no reset() and act(); expected {expected}")
        return obj()
    if callable(obj):
        try:
            required = [
                p
                for p in inspect.signature(obj).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            required = [None]
        if not required:  # a factory
            made = obj()
            if not _is_agent(made):
                raise TypeError(f"{where}: factory returned a {type(made).__name__}, not an agent; expected {expected}")
            return made
        if len(required) in (1, 2):
            return FunctionAgent(obj, with_space=len(required) == 2)
        raise TypeError(f"{where}: function takes {len(required)} arguments; expected {expected}")
    raise TypeError(f"{where} is a {type(obj).__name__}; expected {expected}")


class FunctionAgent:
    """A plain function ``observation -> action`` as an agent (it keeps no state across steps); ``with_space``: it
    takes ``(observation, action_space)``, for a policy whose action size depends on the env or its instance."""

    privileged = False
    env_kwargs: dict[str, Any] = {}

    def __init__(self, policy: Callable[..., Any], with_space: bool = False) -> None:
        self.policy, self.with_space = policy, with_space
        self.name = getattr(policy, "__name__", "policy")
        self.action_space: gym.Space | None = None

    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.action_space = action_space

    def reset(self, problem: Any, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any) -> Any:
        return self.policy(observation, self.action_space) if self.with_space else self.policy(observation)


class Guarded:
    """A submitted agent under the protocol's guards: its spaces checked against the env's, every ``reset`` and
    ``act`` failure, every action outside the action space and every step over ``step_limit`` seconds an
    :class:`AgentError` naming the agent, env, seed and step. A limit is enforced by an alarm where the step runs
    in the main thread (it interrupts a step that never returns), else measured after the step."""

    def __init__(self, agent: Any, spec: AgentSpec) -> None:
        self.agent, self.spec = agent, spec
        self.name, self.privileged, self.env_kwargs = spec.name, spec.privileged, dict(spec.env_kwargs)
        self.action_space: gym.Space | None = None
        self.seed: int | None = None
        self.t = 0

    def _error(self, what: str) -> AgentError:
        where = f"agent {self.name!r} on {self.spec.env_id} seed {self.seed} step {self.t}"
        return AgentError(f"{where}: {' '.join(what.split())}")

    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.action_space = action_space
        if hasattr(self.agent, "check_spaces"):
            self.agent.check_spaces(observation_space, action_space)

    def reset(self, problem: Any, seed: int | None = None) -> None:
        self.seed, self.t = seed, 0
        try:
            self.agent.reset(problem, seed=seed)
        except Exception as err:  # noqa: BLE001
            raise self._error(f"reset raised {type(err).__name__}: {err}") from None

    def act(self, observation: Any) -> Any:
        limit = self.spec.step_limit
        alarm = limit is not None and threading.current_thread() is threading.main_thread()
        begin = time.perf_counter()
        try:
            if alarm:
                previous = signal.signal(signal.SIGALRM, _timeout)
                signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                action = self.agent.act(observation)
            finally:
                if alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous)
        except StepTimeout:
            raise self._error(f"the step took longer than the limit of {limit:g} s") from None
        except Exception as err:  # noqa: BLE001
            raise self._error(f"act raised {type(err).__name__}: {err}") from None
        seconds = time.perf_counter() - begin
        if limit is not None and seconds > limit:
            raise self._error(f"the step took {seconds:.3g} s, over the limit of {limit:g} s")
        action = _coerced(action, self.action_space)
        if self.action_space is not None and not self.action_space.contains(action):
            raise self._error(f"action {_short(action)} is outside the action space {self.action_space}")
        self.t += 1
        return action


class StepTimeout(Exception):
    pass


def _timeout(signum: int, frame: Any) -> None:
    raise StepTimeout


def _short(action: Any) -> str:
    return " ".join(np.array2string(np.asarray(action), threshold=8, precision=4).split())


def _coerced(action: Any, space: gym.Space | None) -> Any:
    """The action as the space's dtype when that changes no value (a float64 array for a float32 Box, a list)."""
    if not isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
        return action
    try:
        array = np.asarray(action)
        cast = array.astype(space.dtype)
    except (TypeError, ValueError):
        return action
    if array.dtype.kind == "f" and cast.dtype.kind in "iub" and not np.array_equal(cast, array):
        return action  # 0.7 for a discrete dimension stays 0.7, and is refused
    return cast


class OnnxAgent:
    """An ONNX policy (ONNX Runtime) acting on the flattened observation; see the module doc for its outputs."""

    privileged = False
    env_kwargs: dict[str, Any] = {}

    def __init__(self, path: str, name: str) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise ImportError('an ONNX policy needs onnxruntime: pip install -e ".[onnx]" (from a clone)') from None
        try:
            self.session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001
            raise ValueError(f"policy {path!r} is not a loadable ONNX model: {err}") from None
        inputs, outputs = self.session.get_inputs(), self.session.get_outputs()
        if len(inputs) != 1:
            raise ValueError(f"ONNX policy {path!r} has {len(inputs)} inputs; expected one (the flat observation)")
        self.path, self.name = path, name
        self.input = inputs[0].name
        self.input_size = _size(inputs[0].shape)
        self.output_size = _size(outputs[0].shape)
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None

    def check_spaces(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        needed_in = gym.spaces.flatdim(observation_space)
        allowed_out = _output_sizes(action_space)
        problems = []
        if self.input_size is not None and self.input_size != needed_in:
            problems.append(f"its input has {self.input_size} values, the observation {observation_space} {needed_in}")
        if self.output_size is not None and self.output_size not in allowed_out:
            problems.append(f"its output has {self.output_size} values, the action {action_space} needs one of "
                            f"{allowed_out}")  # fmt: skip
        if problems:
            raise ValueError(
                f"ONNX policy {self.path!r} does not fit this env: {'; '.join(problems)}. Expected an input "
                "[1, flatdim(observation_space)] and an output per the action space (an RL-ready id's spaces)"
            )
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, problem: Any, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any) -> Any:
        flat = gym.spaces.flatten(self.observation_space, observation).astype(np.float32)[None, :]
        output = np.asarray(self.session.run(None, {self.input: flat})[0]).reshape(-1)
        return _read_action(output, self.action_space)


def _size(shape: Sequence[Any]) -> int | None:
    dims = [d for d in shape[1:]] if len(shape) > 1 else list(shape)
    if not all(isinstance(d, int) for d in dims):
        return None  # a symbolic dimension: checked when it runs
    return int(np.prod(dims)) if dims else 1


def _output_sizes(space: gym.Space) -> list[int]:
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n), 1]
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [int(space.nvec.sum()), int(space.nvec.size)]
    return [gym.spaces.flatdim(space)]


def _read_action(output: np.ndarray, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Box):
        return np.clip(output.reshape(space.shape), space.low, space.high).astype(space.dtype)
    if isinstance(space, gym.spaces.Discrete):
        return int(np.argmax(output)) + int(space.start) if output.size == space.n else int(round(float(output[0])))
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = space.nvec.reshape(-1)
        if output.size == nvec.sum():
            parts = np.split(output, np.cumsum(nvec)[:-1])
            return np.array([int(np.argmax(p)) for p in parts], dtype=space.dtype).reshape(space.shape)
        return np.rint(output).astype(space.dtype).reshape(space.shape)
    return output.reshape(getattr(space, "shape", output.shape))


def sb3_agent(path: str, algo: str, name: str) -> Any:
    """A stable-baselines3 archive as an agent (``SB3Agent``), with the VecNormalize statistics found beside it."""
    import pickle

    from baselines.rl.agent import SB3Agent
    from baselines.rl.config import algo_class

    model = algo_class(algo).load(path, device="cpu")
    normalizer = None
    for candidate in (
        Path(path).with_name("vecnormalize.pkl"),
        Path(path).with_name(f"{Path(path).stem}_vecnormalize.pkl"),
    ):
        if candidate.is_file():
            normalizer = pickle.loads(candidate.read_bytes())
            normalizer.training, normalizer.norm_reward = False, False
            break
    return SB3Agent(model, normalizer, name=name)


@dataclass
class Evaluation:
    """What :func:`score` returns: the spec per env, the comparison per env (the new agent next to the reference
    agents) and the record (``baselines.eval.record``)."""

    specs: dict[str, AgentSpec]
    comparisons: dict[str, Any]
    record: dict[str, Any]
    out: Path | None = None


def source_name(agent: Any, spec: AgentSpec) -> str:
    """What a record says the agent was loaded from: a file by its name only (a record holds no machine's paths;
    ``{env}`` kept), a module by its import name; the object's kind for an object."""
    if not isinstance(agent, (str, Path)):
        return spec.source
    text = str(agent)
    if spec.kind == "module":
        module, _, attribute = text.rpartition(":")
        return f"{Path(module).name}:{attribute}" if module.endswith(".py") else text
    return Path(text).name


def protocol_envs() -> list[str]:
    """The envs of a leaderboard row: every registered id with a protocol entry."""
    from baselines.eval.protocol import env_setting
    from cluster_envs import env_ids

    return [env_id for env_id in env_ids() if env_setting(env_id) is not None]


def score(
    agent: Any,
    env_ids: str | Sequence[str] | None = None,
    *,
    declaration: Mapping[str, Any] | None = None,
    name: str | None = None,
    quick: bool = True,
    reference: str = "all",
    step_limit: float | None = None,
    algo: str = "ppo",
    out: str | Path | None = None,
    force: bool = False,
    workers: int = 1,
    progress: bool = False,
    seeds: Sequence[int] | None = None,
    rl_interface: bool | None = None,
) -> Evaluation:
    """Score ``agent`` (anything :func:`agent_spec` takes; ``"MODULE:NAME"`` or a policy path; a model path may hold
    ``{env}``, replaced by each env id or its RL-ready id: ``for_env``, the entry then named by its folder) under
    the benchmark's protocol on ``env_ids`` (one id, several, or None: the whole row), next to the reference agents
    (``reference="all"``, or ``"anchors"``: the paper's algorithm and the two anchors only). ``quick``: the quick
    protocol's seeds (else the full one's); ``seeds`` replaces them (a record then says so, and the leaderboard
    does not rank it). Held-out instances, except a model on an env whose instance fixes its spaces (the
    fixed-instance track, as the benchmark's PPO). With ``out``, each env's report goes to ``out/<env_id>/`` and
    the record to ``out/record.json``; nothing is written when an episode fails. ``rl_interface``: a function or
    agent acts through the RL-ready ids' flat observations too (see ``agent_spec``)."""
    from baselines.eval.compare import compare
    from baselines.eval.outputs import check, claim
    from baselines.eval.protocol import EVALUATION_SEEDS, env_setting
    from baselines.eval.report import write_report

    if reference not in ("all", "anchors"):
        raise ValueError(f"reference={reference!r} is not allowed; allowed: 'all', 'anchors'")
    declared = check_declaration(declaration)
    ids = protocol_envs() if env_ids is None else [env_ids] if isinstance(env_ids, str) else list(env_ids)
    if out is not None:
        check(out, "evaluate", force=force)
    specs: dict[str, AgentSpec] = {}
    name = name or templated_name(agent)
    for env_id in ids:
        spec = agent_spec(
            for_env(agent, env_id), env_id, name=name, step_limit=step_limit, algo=algo, rl_interface=rl_interface
        )
        if env_setting(spec.env_id) is None:
            raise ValueError(f"env_id={env_id!r} has no protocol entry; ids with one: {protocol_envs()}")
        if spec.privileged != declared["privileged"]:
            raise ValueError(f"declaration privileged={declared['privileged']} but agent {spec.name!r} has "
                             f"privileged={spec.privileged}")  # fmt: skip
        specs[spec.env_id] = spec
    protocol = "custom" if seeds is not None else "quick" if quick else "full"
    chosen = list(seeds) if seeds is not None else list(EVALUATION_SEEDS["quick" if quick else "full"])
    comparisons = {}
    for env_id, spec in specs.items():
        fixed_spaces = spec.kind in ("onnx", "sb3") and env_setting(env_id).instance_kwarg is not None
        comparisons[env_id] = compare(env_id, "all" if reference == "all" else [], seeds=chosen, submitted=[spec],
                                      held_out=not fixed_spaces, workers=workers, progress=progress)  # fmt: skip
    spec = next(iter(specs.values()))
    entry = {"name": spec.name, "kind": spec.kind, "source": source_name(agent, spec), "algo": spec.algo}
    record = build_record(entry, declared, comparisons, protocol)
    if spec.kind in ("onnx", "sb3"):  # the file each env's model was, so that a replay finds it after an id bump
        for result in record["results"]:
            result["policy_file"] = Path(specs[result["env_id"]].source).name
    target = None
    if out is not None:
        target = claim(out, "evaluate", force=force)
        for env_id, comparison in comparisons.items():
            write_report(comparison, target / env_id, force=True, command="evaluate")
        write_record(record, target / "record.json")
    return Evaluation(specs, comparisons, record, target)
