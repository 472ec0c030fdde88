"""The protocol every agent follows, reference or learned.

An agent is built from an env's static public data (``env.unwrapped.problem``) and then sees only
observations: ``reset(problem, seed)`` once per episode, ``act(observation)`` once per step. The
feedback of the previous step is part of the observation, so no agent ever reads ``info``.

Offline oracles are agents with ``privileged = True``: their ``reset`` receives the unwrapped env
(hidden state included) instead of ``problem``. They are benchmarks, never online algorithms.

``env_kwargs`` lists env settings an agent needs to be run faithfully (e.g. an allocator that
leaves capacity idle needs an action mode that allows idling); the harness merges them into the
env's keyword arguments.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable


@runtime_checkable
class Agent(Protocol):
    name: str
    privileged: bool

    def reset(self, problem: Any, seed: int | None = None) -> None: ...

    def act(self, observation: Any) -> Any: ...


class BaseAgent:
    """Convenience base class: a name, the privilege flag and the env settings the agent needs."""

    name: ClassVar[str] = "agent"
    privileged: ClassVar[bool] = False
    env_kwargs: ClassVar[dict[str, Any]] = {}

    def reset(self, problem: Any, seed: int | None = None) -> None:
        raise NotImplementedError

    def act(self, observation: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
