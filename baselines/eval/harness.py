"""The one episode loop of the project: roll out any agent on any registered env id, over seeds, and aggregate.

Every episode here runs through this module: ``cluster-envs run``, ``compare`` (and so ``benchmark``, ``evaluate`` and
the leaderboard), the RL tuning objective and ablation curves (``baselines/tuning/``), the four paper reproductions
(``baselines/reproduce/``) and the step-rate bench. Its layers, each built on the one before:

- :func:`start` builds the agent (a registered name with hyperparameters, or an instance) and its env
  (``gym.make`` with the kwargs of the precedence rule below), shows a trained model the env's spaces (an agent
  with ``check_spaces(observation_space, action_space)`` refuses an env unlike its training env with a clear
  error), then resets the env with ``seed`` and the agent with what it may see: ``env.unwrapped.problem`` (the
  static public data), or the unwrapped env itself for an offline oracle (``privileged``).
- :func:`play` steps the agent until the episode ends; an ``on_step`` hook sees every :class:`Step` (the
  observation acted on, the action and the agent's decision time, the reward and ``info``), which is how the
  reproductions record their per-step series without a loop of their own.
- :func:`rollout` is ``start`` + ``play``: an :class:`Episode` whose metrics are the env's
  ``info["episode_summary"]`` at its last step plus ``return`` and ``steps``, and whose trace holds the per-step
  values of the scalar ``info`` keys. :func:`evaluate`, the one evaluation function, rolls out agents × seeds into
  an :class:`EvalTable`, each episode a picklable :class:`Task` that ``compare`` hands to its backends' workers.
- :func:`start_batch`, :func:`play_batch` and :func:`rollout_batch` are the same for one batch of episodes on the
  id's native batched env (copy i plays seed i), for agents that play batches (a trained model: ``SB3Agent``);
  ``evaluate(..., batched=True)`` takes that path.
- :func:`simulate` is ``start`` + the env's compiled long-horizon runner (ClusterSLA-v1:
  :func:`cluster_envs.sla.runner.simulate`, whose results equal stepping the env), for horizons where Python's
  per-step cost is too slow (the paper's T = 3·10⁶).

Every agent, reference or learned, faces the same exogenous sequence for a given seed (the envs draw it from the
seed alone).

**Env kwargs, one rule for every caller.** The env is made with the caller's ``env_kwargs`` merged with the
agent's ``env_kwargs`` (the settings it needs to run faithfully, e.g. an action mode that allows idling). A key
that both set to different values is a ``ValueError`` naming the key, both values and the agent; equal values are
fine. Neither side silently wins: the caller's value would run the agent outside what it needs, the agent's would
run another experiment than the one asked for.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import gymnasium as gym
import numpy as np

from agents import Agent, make_agent
from baselines.eval.progress import progress_bar
from baselines.eval.protocol import check_eval_seeds
from cluster_envs import register_envs

# The compiled long-horizon runner of each id that has one, "module:function"; see ``simulate``.
LONG_HORIZON_RUNNERS = {"ClusterSLA-v1": "cluster_envs.sla.runner:simulate"}
STEP_BAR_DELAY = 3.0  # seconds: shorter episodes show no step bar


@dataclass
class Episode:
    env_id: str
    agent: str
    seed: int
    metrics: dict[str, float]
    trace: dict[str, np.ndarray] = field(repr=False)
    training_seed: int | None = None  # an RL agent's: the training seed of the policy that played (see compare)
    actions: ActionDigest | None = None  # the digest of the actions played (``rollout(..., digest=True)``)


class ActionDigest:
    """The digest of an episode's action sequence, built step by step: ``sha256`` over every action (its dtype,
    shape and bytes), and ``steps``, one locator byte per step (the first byte of that step's own sha256), so that a
    replay that differs can name the first step whose action differs (a difference hides from one locator byte with
    probability 1/256; the ``sha256`` never misses one)."""

    def __init__(self, sha256: str | None = None, steps: bytes = b"") -> None:
        self._hash = hashlib.sha256() if sha256 is None else None
        self._sha256 = sha256
        self._steps = bytearray(steps)

    def add(self, action: Any) -> None:
        data = action_bytes(action)
        self._hash.update(data)
        self._steps.append(hashlib.sha256(data).digest()[0])

    @property
    def sha256(self) -> str:
        return self._sha256 if self._hash is None else self._hash.hexdigest()

    @property
    def steps(self) -> bytes:
        return bytes(self._steps)

    def to_json(self) -> dict[str, str]:
        return {"sha256": self.sha256, "steps": base64.b64encode(self.steps).decode("ascii")}

    def __reduce__(self) -> tuple:
        # A digest crosses processes (a worker's episode) finished: the running hash object does not pickle.
        return (ActionDigest, (self.sha256, self.steps))

    @classmethod
    def from_json(cls, stored: Mapping[str, str]) -> ActionDigest:
        return cls(stored["sha256"], base64.b64decode(stored["steps"]))

    def first_difference(self, other: ActionDigest) -> int | None:
        """The first step whose locator differs (or where one sequence ends), None when the digests are equal."""
        if self.sha256 == other.sha256:
            return None
        mine, theirs = self.steps, other.steps
        return next(
            (t for t, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs))
        )


def action_bytes(action: Any) -> bytes:
    """An action as bytes that tell its dtype, shape and values (a Dict action: its keys in order)."""
    if isinstance(action, Mapping):
        return b"".join(key.encode() + b"=" + action_bytes(action[key]) for key in sorted(action))
    array = np.ascontiguousarray(np.asarray(action))
    return f"{array.dtype.str}{array.shape}".encode() + array.tobytes()


def build_agent(env_id: str, agent: str | Agent, agent_kwargs: Mapping[str, Any] | None = None) -> Agent:
    """An agent instance from a registered name (with hyperparameters) or an instance passed through."""
    if isinstance(agent, str):
        return make_agent(env_id, agent, **dict(agent_kwargs or {}))
    if agent_kwargs:
        raise ValueError("agent_kwargs are only allowed with an agent name, not an agent instance")
    return agent


def env_kwargs_for(agent: Agent, env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The env kwargs merged with the settings the agent needs; a contradiction is an error."""
    merged = dict(env_kwargs or {})
    for key, value in dict(getattr(agent, "env_kwargs", {})).items():  # a SavedPolicy's are (key, value) pairs
        if key in merged and merged[key] != value:
            raise ValueError(
                f"env_kwargs[{key!r}]={merged[key]!r} conflicts with agent {agent.name!r}, which needs {value!r}"
            )
        merged[key] = value
    return merged


@dataclass(slots=True)
class Step:
    """One step as an ``on_step`` hook sees it: ``t`` (0-based), the ``observation`` the agent acted on, its
    ``action`` and the wall seconds its ``act`` took, then the env's ``reward`` and ``info``, and whether the
    episode ended with this step."""

    t: int
    observation: Any
    action: Any
    act_seconds: float
    reward: float
    info: dict[str, Any]
    done: bool


@dataclass(frozen=True)
class Ending:
    """How an episode ended: the last step's ``info`` (with ``episode_summary``), the sum of the rewards, the
    number of steps and the wall seconds of the steps (decisions and env steps; the resets are not counted)."""

    info: dict[str, Any]
    total_reward: float
    steps: int
    seconds: float


def start(
    env_id: str,
    agent: str | Agent,
    seed: int,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> tuple[gym.Env, Agent, Any]:
    """The env (``gym.make(env_id, ...)`` under the precedence rule), the agent and the first observation, both
    reset with ``seed``: the agent with ``env.unwrapped`` if it is ``privileged``, else ``env.unwrapped.problem``."""
    register_envs()  # the ids it makes, explicitly rather than by an import's side effect (idempotent)
    agent = build_agent(env_id, agent, agent_kwargs)
    env = gym.make(env_id, **env_kwargs_for(agent, env_kwargs))
    if hasattr(agent, "check_spaces"):  # a trained model: a clear error on an env unlike its training env
        agent.check_spaces(env.observation_space, env.action_space)
    observation, _ = env.reset(seed=seed)
    agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
    return env, agent, observation


def play(env: gym.Env, agent: Agent, observation: Any, *, on_step: Callable[[Step], None] | None = None) -> Ending:
    """Step ``agent`` on ``env`` (both as :func:`start` left them) from ``observation`` until the episode ends,
    calling ``on_step`` after every step; the env is left open (its final state is the caller's to read)."""
    total_reward, steps = 0.0, 0
    begin = time.perf_counter()
    while True:
        tick = time.perf_counter()
        action = agent.act(observation)
        act_seconds = time.perf_counter() - tick
        next_observation, reward, terminated, truncated, info = env.step(action)
        total_reward += float(reward)
        done = terminated or truncated
        if on_step is not None:
            on_step(Step(steps, observation, action, act_seconds, float(reward), info, done))
        steps += 1
        observation = next_observation
        if done:
            return Ending(info, total_reward, steps, time.perf_counter() - begin)


def rollout(
    env_id: str,
    agent: str | Agent,
    seed: int = 0,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    record: Sequence[str] | None = None,
    progress: bool = False,
    digest: bool = False,
) -> Episode:
    """Run one episode of ``agent`` on ``gym.make(env_id, **env_kwargs)`` reset with ``seed``.

    ``record`` names the scalar ``info`` keys to trace per step (default: all of them; ``()`` for none).
    ``digest``: keep the :class:`ActionDigest` of the actions played (``Episode.actions``; submission records).
    ``progress``: a bar over the episode's steps with a time estimate, shown once the episode has run for
    ``STEP_BAR_DELAY`` seconds (a paper-scale episode can take minutes).
    """
    env, agent, observation = start(env_id, agent, seed, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    traces: dict[str, list] | None = None if record is None else {key: [] for key in record}
    horizon = getattr(getattr(env.unwrapped, "config", None), "horizon", None)
    bar = progress_bar(total=horizon, desc=f"{agent.name} seed {seed}", unit="step", enabled=progress,
                       delay=STEP_BAR_DELAY, leave=False)  # fmt: skip

    actions = ActionDigest() if digest else None

    def trace(step: Step) -> None:
        nonlocal traces
        bar.update()
        if actions is not None:
            actions.add(step.action)
        if traces is None:
            traces = {key: [] for key, value in step.info.items() if _is_scalar(value)}
        for key, values in traces.items():
            values.append(step.info[key])

    with env:
        end = play(env, agent, observation, on_step=None if traces == {} and not (progress or digest) else trace)
    bar.close()
    trace_arrays = {key: np.asarray(v) for key, v in traces.items()}
    return Episode(env_id, agent.name, seed, _metrics(end), trace_arrays, actions=actions)


@dataclass(frozen=True)
class Task:
    """Everything one episode needs, picklable, so that any worker can run it (``baselines.eval.backends``):
    ``run()`` is :func:`rollout`. ``agent`` is a reference agent's name, an agent, or a spec that travels in its
    place, with ``build() -> Agent`` (``baselines.rl.agent.SavedPolicy``, a submission's ``AgentSpec``)."""

    env_id: str
    agent: Any
    seed: int
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    record: tuple[str, ...] | None = ()
    digest: bool = False  # keep the digest of the actions played (Episode.actions)
    progress: bool = False  # a bar over the episode's steps (see rollout)

    def run(self) -> Episode:
        agent = self.agent.build() if hasattr(self.agent, "build") else self.agent
        return rollout(self.env_id, agent, self.seed, env_kwargs=self.env_kwargs,
                       agent_kwargs=self.agent_kwargs or None, record=self.record, progress=self.progress,
                       digest=self.digest)  # fmt: skip


def _metrics(end: Ending) -> dict[str, float]:
    """An episode's metrics: the env's ``episode_summary`` at its last step, its return and its steps."""
    metrics = {key: float(value) for key, value in end.info.get("episode_summary", {}).items()}
    metrics.update({"return": end.total_reward, "steps": float(end.steps)})
    return metrics


def start_batch(
    env_id: str,
    agent: str | Agent,
    seeds: Sequence[int],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> tuple[gym.vector.VectorEnv, Agent, Any]:
    """As :func:`start` for ``len(seeds)`` episodes at once: ``env_id``'s native batched env (its
    ``vector_entry_point``, under the precedence rule; infos as one dict per copy), copy i reset with ``seeds[i]``,
    the agent reset with the copies' problems (``reset_batch``), and the batch's first observation. The agent must
    play batches (``reset_batch`` and ``act_batch``, as a trained model's ``SB3Agent``); an offline oracle cannot."""
    from gymnasium.wrappers.vector import DictInfoToList

    agent = build_agent(env_id, agent, agent_kwargs)
    if not hasattr(agent, "act_batch") or agent.privileged:
        raise ValueError(
            f"agent {agent.name!r} cannot play a batch (batched=True needs reset_batch and act_batch, as a trained "
            "model's SB3Agent has, and no privilege); evaluate it with batched=False"
        )
    register_envs()
    if gym.spec(env_id).vector_entry_point is None:
        raise ValueError(f"env_id={env_id!r} has no native batched env (vector_entry_point); use batched=False")
    env = DictInfoToList(gym.make_vec(env_id, num_envs=len(seeds), vectorization_mode="vector_entry_point",
                                      **env_kwargs_for(agent, env_kwargs)))  # fmt: skip
    if hasattr(agent, "check_spaces"):
        agent.check_spaces(env.single_observation_space, env.single_action_space)
    observations, _ = env.reset(seed=list(seeds))
    agent.reset_batch([copy.problem for copy in env.unwrapped.envs], seeds=list(seeds))
    return env, agent, observations


def play_batch(env: gym.vector.VectorEnv, agent: Agent, observations: Any, *,
               on_step: Callable[[Step], None] | None = None) -> list[Ending]:  # fmt: skip
    """As :func:`play` on a batch from :func:`start_batch`: step every copy until each has ended its first episode
    (a copy that ended autoresets; its later steps do not count) and return each copy's :class:`Ending` (its
    ``seconds``: the batch's wall time until it ended). ``on_step`` sees every step of the batch as one
    :class:`Step` whose ``observation``, ``action``, ``reward`` and ``done`` are the batch's and ``info`` the
    copies' infos."""
    endings: list[Ending | None] = [None] * env.num_envs
    totals, steps = np.zeros(env.num_envs), np.zeros(env.num_envs, dtype=int)
    begin, t = time.perf_counter(), 0
    while any(end is None for end in endings):
        tick = time.perf_counter()
        actions = agent.act_batch(observations)
        act_seconds = time.perf_counter() - tick
        next_observations, rewards, terminated, truncated, infos = env.step(actions)
        running = np.array([end is None for end in endings])
        totals += np.where(running, rewards, 0.0)
        steps += running
        done = np.logical_or(terminated, truncated)
        if on_step is not None:
            on_step(Step(t, observations, actions, act_seconds, rewards, infos, done))
        for i in np.flatnonzero(done & running):
            endings[i] = Ending(infos[i], float(totals[i]), int(steps[i]), time.perf_counter() - begin)
        observations, t = next_observations, t + 1
    return endings


def rollout_batch(
    env_id: str,
    agent: str | Agent,
    seeds: Sequence[int],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> list[Episode]:
    """One episode per seed, all at once on ``env_id``'s native batched env (:func:`start_batch`); the episodes'
    metrics are :func:`rollout`'s (no trace)."""
    env, agent, observations = start_batch(env_id, agent, seeds, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    try:
        endings = play_batch(env, agent, observations)
    finally:
        env.close()
    return [Episode(env_id, agent.name, seed, _metrics(end), {}) for seed, end in zip(seeds, endings, strict=True)]


def simulate(
    env_id: str,
    agent: str | Agent,
    seed: int,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    record_every: int = 1000,
) -> tuple[Any, float]:
    """One episode through ``env_id``'s compiled long-horizon runner (``LONG_HORIZON_RUNNERS``), started as
    :func:`start` does: the runner's result (ClusterSLA-v1: a ``Trajectory`` recorded every ``record_every``
    steps) and the wall seconds of the run (the resets are not counted)."""
    if env_id not in LONG_HORIZON_RUNNERS:
        raise ValueError(f"env_id={env_id!r} has no long-horizon runner; ids with one: {list(LONG_HORIZON_RUNNERS)}")
    module, function = LONG_HORIZON_RUNNERS[env_id].split(":")
    runner = getattr(importlib.import_module(module), function)
    env, agent, _ = start(env_id, agent, seed, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    with env:
        begin = time.perf_counter()
        result = runner(agent, env, record_every=record_every)
        return result, time.perf_counter() - begin


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (Real, np.bool_, bool)) and not isinstance(value, str)


@dataclass
class EvalTable:
    """Per agent and metric: mean, std, min and max over seeds; the episodes are kept for further analysis."""

    env_id: str
    episodes: list[Episode]

    @property
    def agents(self) -> list[str]:
        return list(dict.fromkeys(e.agent for e in self.episodes))

    def values(self, agent: str, metric: str) -> np.ndarray:
        return np.array([e.metrics[metric] for e in self.episodes if e.agent == agent and metric in e.metrics])

    def rows(self, metrics: Iterable[str] | None = None) -> list[dict[str, Any]]:
        rows = []
        for agent in self.agents:
            names = metrics or next(e.metrics for e in self.episodes if e.agent == agent).keys()
            for metric in names:
                v = self.values(agent, metric)
                if v.size:
                    stats = {
                        "mean": v.mean(),
                        "std": v.std(ddof=1) if v.size > 1 else 0.0,
                        "min": v.min(),
                        "max": v.max(),
                    }
                    rows.append(
                        {
                            "agent": agent,
                            "metric": metric,
                            "n": int(v.size),
                            **{k: float(x) for k, x in stats.items()},
                        }
                    )
        return rows

    def to_markdown(self, metrics: Iterable[str] | None = None) -> str:
        lines = ["| agent | metric | n | mean | std | min | max |", "|---|---|---:|---:|---:|---:|---:|"]
        for r in self.rows(metrics):
            lines.append(
                f"| {r['agent']} | {r['metric']} | {r['n']} | {r['mean']:.6g} | {r['std']:.3g} "
                f"| {r['min']:.6g} | {r['max']:.6g} |"
            )
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(
            {
                "env_id": self.env_id,
                "summary": self.rows(),
                "episodes": [{"agent": e.agent, "seed": e.seed, "metrics": e.metrics} for e in self.episodes],
            },
            indent=2,
        )

    def __str__(self) -> str:
        return self.to_markdown()


def evaluate(
    env_id: str,
    agents: Sequence[Any],
    seeds: Iterable[int] = range(5),
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    seed_env_kwargs: Mapping[int, Mapping[str, Any]] | None = None,
    record: Sequence[str] | None = (),
    digest: bool = False,
    progress: bool = False,
    batched: bool = False,
    run_tasks: Callable[[list[Task]], list[Episode]] | None = None,
) -> EvalTable:
    """Roll out every agent on every seed (the same seeds for all: common random numbers), agent by agent.

    ``agents``: registered names, agents, or specs with ``build() -> Agent`` (see :class:`Task`).
    ``seed_env_kwargs``: env kwargs of a seed on top of ``env_kwargs`` (``compare``'s held-out instances).
    ``record`` and ``digest``: what each :class:`Episode` keeps (as :func:`rollout`).
    ``run_tasks``: runs the episodes' :class:`Task` list and returns their episodes in order (``compare`` passes
    ``baselines.eval.backends.run_tasks`` with its workers); default: one after the other in this process, with
    ``progress`` a bar over the episodes and one over the steps of an episode longer than ``STEP_BAR_DELAY`` s.
    ``batched``: each agent plays all seeds at once on the id's native batched env (:func:`rollout_batch`; copy
    i plays ``seeds[i]`` as the single env reset with it does), for agents that play batches."""
    seeds = list(seeds)
    check_eval_seeds(seeds)  # the rules of ``compare``: distinct, below the training seeds
    agent_kwargs = dict(agent_kwargs or {})
    seed_env_kwargs = dict(seed_env_kwargs or {})
    for name in agent_kwargs:
        if name not in [a for a in agents if isinstance(a, str)]:
            raise ValueError(f"agent_kwargs names {name!r}, which is not among the agents {list(agents)}")
    register_envs()
    for agent in agents:  # fail on a bad name or kwarg before any episode runs
        built = build_agent(env_id, agent, agent_kwargs.get(agent) if isinstance(agent, str) else None)
        gym.make(env_id, **env_kwargs_for(built, env_kwargs)).close()
    if batched:
        episodes = [
            episode
            for agent in progress_bar(agents, desc=env_id, unit="agent", enabled=progress)
            for episode in rollout_batch(env_id, agent, seeds, env_kwargs=env_kwargs,
                                         agent_kwargs=agent_kwargs.get(agent) if isinstance(agent, str) else None)
        ]  # fmt: skip
        return EvalTable(env_id, episodes)
    step_bars = progress and run_tasks is None  # a worker's episodes show no step bar
    tasks = [
        Task(env_id, agent, seed, {**dict(env_kwargs or {}), **seed_env_kwargs.get(seed, {})},
             agent_kwargs.get(agent, {}) if isinstance(agent, str) else {}, record, digest, step_bars)
        for agent in agents
        for seed in seeds
    ]  # fmt: skip
    if run_tasks is not None:
        return EvalTable(env_id, list(run_tasks(tasks)))
    tasks = progress_bar(tasks, desc=env_id, unit="episode", enabled=progress)
    return EvalTable(env_id, [task.run() for task in tasks])
