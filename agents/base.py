"""The protocol every agent follows, reference or learned.

An agent is built from an env's static public data (``env.unwrapped.problem``) and then sees only
observations: ``reset(problem, seed)`` once per episode, ``act(observation)`` once per step. The
feedback of the previous step is part of the observation, so no agent ever reads ``info``.

Offline oracles are agents with ``privileged = True``: their ``reset`` receives the unwrapped env
(hidden state included) instead of ``problem``. They are oracles, never online algorithms.

``env_kwargs`` lists env settings an agent needs to be run faithfully (e.g. an allocator that
leaves capacity idle needs an action mode that allows idling); the harness merges them into the
env's keyword arguments.

:class:`BaseAgent` checks the protocol for every subclass, once, here: ``act()`` before ``reset()`` is a
``RuntimeError``, and ``reset`` with the wrong argument (the env where the problem is due or the reverse, or the
problem of another setting than ``problem_type``) a ``ValueError``, each saying what to call instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

import gymnasium as gym


@runtime_checkable
class Agent(Protocol):
    name: str
    privileged: bool

    def reset(self, problem: Any, seed: int | None = None) -> None: ...

    def act(self, observation: Any) -> Any: ...


class BaseAgent:
    """Convenience base class: a name, the privilege flag, the env settings the agent needs, the problem class it is
    built from (``problem_type``: a class or a tuple of classes; None accepts any), and the protocol checks."""

    name: ClassVar[str] = "agent"
    privileged: ClassVar[bool] = False
    env_kwargs: ClassVar[dict[str, Any]] = {}
    problem_type: ClassVar[type | tuple[type, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reset" in vars(cls):
            cls.reset = _checked_reset(vars(cls)["reset"])
        if "act" in vars(cls):
            cls.act = _checked_act(vars(cls)["act"])

    def reset(self, problem: Any, seed: int | None = None) -> None:
        raise NotImplementedError

    def act(self, observation: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _reset_call(agent: BaseAgent) -> str:
    what = "env.unwrapped" if agent.privileged else "env.unwrapped.problem"
    return f"agent.reset({what}, seed)"


def check_reset_argument(agent: BaseAgent, given: Any) -> None:
    """``ValueError`` unless ``given`` is what ``agent.reset`` takes: the unwrapped env (anything with a
    ``problem``) for a privileged agent, else the problem itself, of the agent's ``problem_type``."""
    name = type(agent).__name__
    if agent.privileged:
        problem = getattr(given, "problem", None)
        if problem is None:
            raise ValueError(
                f"{name} is privileged (an offline oracle reading hidden state): call {_reset_call(agent)} with the "
                f"unwrapped env, not a {type(given).__name__}"
            )
    elif isinstance(given, gym.Env):
        raise ValueError(
            f"{name} sees only the public problem: call {_reset_call(agent)}, not reset with the env "
            "(only privileged agents get the env)"
        )
    else:
        problem = given
    expected = agent.problem_type
    if expected is not None and not isinstance(problem, expected):
        names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
        raise ValueError(
            f"{name} is built from a {names}, got a {type(problem).__name__}: this agent belongs to another "
            f"setting; call {_reset_call(agent)} with an env of its own id (agents.agent_names(env_id) lists them)"
        )


def _checked_reset(reset: Callable) -> Callable:
    @functools.wraps(reset)
    def checked(self, problem: Any, seed: int | None = None) -> None:
        if type(self).reset is checked:  # the outermost call (a subclass's super().reset passes its own argument)
            check_reset_argument(self, problem)
        reset(self, problem, seed)
        self._protocol_reset = True

    return checked


def _checked_act(act: Callable) -> Callable:
    @functools.wraps(act)
    def checked(self, observation: Any) -> Any:
        if not self.__dict__.get("_protocol_reset"):
            raise RuntimeError(f"{type(self).__name__}.act() before reset(): call {_reset_call(self)} first")
        return act(self, observation)

    return checked
