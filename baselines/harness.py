"""Roll out any agent on any registered env id over seeds, and aggregate the per-episode metrics.

An episode's metrics are the env's ``info["episode_summary"]`` at its last step plus ``return`` and
``steps``; its trace holds the per-step values of the scalar ``info`` keys. Every agent, reference or
learned, faces the same exogenous sequence for a given seed (the envs draw it from the seed alone).
An agent with ``check_spaces(observation_space, action_space)`` (a trained model) is shown the env's spaces
before its reset, so it can refuse an env unlike its training env with a clear error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)
from agents import Agent, make_agent
from baselines.progress import progress_bar
from baselines.rl import check_eval_seeds

STEP_BAR_DELAY = 3.0  # seconds: shorter episodes show no step bar


@dataclass
class Episode:
    env_id: str
    agent: str
    seed: int
    metrics: dict[str, float]
    trace: dict[str, np.ndarray] = field(repr=False)


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


def rollout(
    env_id: str,
    agent: str | Agent,
    seed: int = 0,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    record: Sequence[str] | None = None,
    progress: bool = False,
) -> Episode:
    """Run one episode of ``agent`` on ``gym.make(env_id, **env_kwargs)`` reset with ``seed``.

    ``record`` names the scalar ``info`` keys to trace per step (default: all of them; ``()`` for none).
    ``progress``: a bar over the episode's steps with a time estimate, shown once the episode has run for
    ``STEP_BAR_DELAY`` seconds (a paper-scale episode can take minutes).
    """
    agent = build_agent(env_id, agent, agent_kwargs)
    env = gym.make(env_id, **env_kwargs_for(agent, env_kwargs))
    if hasattr(agent, "check_spaces"):  # a trained model: a clear error on an env unlike its training env
        agent.check_spaces(env.observation_space, env.action_space)
    obs, _ = env.reset(seed=seed)
    agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
    traces: dict[str, list] | None = None if record is None else {key: [] for key in record}
    total_reward, steps = 0.0, 0
    horizon = getattr(getattr(env.unwrapped, "config", None), "horizon", None)
    bar = progress_bar(total=horizon, desc=f"{agent.name} seed {seed}", unit="step", enabled=progress,
                       delay=STEP_BAR_DELAY, leave=False)  # fmt: skip
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        total_reward += float(reward)
        steps += 1
        bar.update()
        if traces is None:
            traces = {key: [] for key, value in info.items() if _is_scalar(value)}
        for key, values in traces.items():
            values.append(info[key])
        if terminated or truncated:
            break
    bar.close()
    env.close()
    metrics = {key: float(value) for key, value in info.get("episode_summary", {}).items()}
    metrics.update({"return": total_reward, "steps": float(steps)})
    return Episode(env_id, agent.name, seed, metrics, {key: np.asarray(v) for key, v in traces.items()})


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
    agents: Sequence[str | Agent],
    seeds: Iterable[int] = range(5),
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool = False,
) -> EvalTable:
    """Roll out every agent on every seed (the same seeds for all: common random numbers). ``progress``: a bar
    over the episodes, and one over the steps of an episode that runs longer than ``STEP_BAR_DELAY`` seconds."""
    seeds = list(seeds)
    check_eval_seeds(seeds)  # the rules of ``compare``: distinct, below the training seeds
    agent_kwargs = dict(agent_kwargs or {})
    for name in agent_kwargs:
        if name not in [a for a in agents if isinstance(a, str)]:
            raise ValueError(f"agent_kwargs names {name!r}, which is not among the agents {list(agents)}")
    for agent in agents:  # fail on a bad name or kwarg before any episode runs
        built = build_agent(env_id, agent, agent_kwargs.get(agent) if isinstance(agent, str) else None)
        gym.make(env_id, **env_kwargs_for(built, env_kwargs)).close()
    tasks = [(agent, seed) for agent in agents for seed in seeds]
    episodes = [
        rollout(
            env_id,
            agent,
            seed,
            env_kwargs=env_kwargs,
            agent_kwargs=agent_kwargs.get(agent) if isinstance(agent, str) else None,
            record=(),
            progress=progress,
        )
        for agent, seed in progress_bar(tasks, desc=env_id, unit="episode", enabled=progress)
    ]
    return EvalTable(env_id, episodes)
