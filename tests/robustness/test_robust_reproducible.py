"""Reproducibility across process and serialisation boundaries, for every registered id.

A seeded run must give the same observations, rewards, flags and scalar info in one process, under
SyncVectorEnv, under AsyncVectorEnv with the fork and the spawn start methods, and after a pickle or
cloudpickle round trip of the ``gym.make`` env (wrappers included) mid-episode.
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from .robust_common import IDS, assert_same_steps, flatten, run_actions, sample_action

SEEDS = [3, 8]
STEPS = 40


def _actions(env_id: str) -> list[list]:
    """Per copy a list of STEPS actions, drawn from its own generator."""
    space = gym.make(env_id).action_space
    return [[sample_action(space, np.random.default_rng(s)) for _ in range(STEPS)] for s in SEEDS]


def _vector_scalars(infos: dict, i: int, prefix: str = "") -> dict[str, float]:
    """Copy i's scalar info out of a vector env's stacked info (only where its ``_key`` mask is set)."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_") or not infos.get(f"_{key}", np.ones(len(SEEDS), bool))[i]:
            continue
        if isinstance(value, dict):
            out.update(_vector_scalars(value, i, f"{key}."))
        elif (
            isinstance(value, np.ndarray)
            and value.ndim == 1
            and isinstance(value[i], (int, float, np.number, np.bool_))
        ):
            out[prefix + key] = float(value[i])
    return out


def _single_runs(env_id: str, actions: list[list]) -> list[list[tuple]]:
    return [run_actions(gym.make(env_id), acts, reset_seed=s)[:] for s, acts in zip(SEEDS, actions, strict=True)]


def _vector_runs(envs: gym.vector.VectorEnv, actions: list[list]) -> list[list[tuple]]:
    """Per copy its records, up to and including its first episode end (after it the vector env autoresets)."""
    obs, _ = envs.reset(seed=SEEDS)
    per_copy = list(iterate(envs.observation_space, obs))  # works for Box, Dict and Tuple observations alike
    runs = [[(flatten(per_copy[i]), 0.0, False, False, {})] for i in range(len(SEEDS))]
    live = [True] * len(SEEDS)
    for t in range(STEPS):
        batch = create_empty_array(envs.single_action_space, len(SEEDS))
        batch = concatenate(envs.single_action_space, [acts[t] for acts in actions], batch)
        obs, rewards, terms, truncs, infos = envs.step(batch)
        per_copy = list(iterate(envs.observation_space, obs))
        for i in range(len(SEEDS)):
            if live[i]:
                scalars = _vector_scalars(infos, i)
                runs[i].append((flatten(per_copy[i]), float(rewards[i]), bool(terms[i]), bool(truncs[i]), scalars))
                live[i] = not (terms[i] or truncs[i])
    envs.close()
    return runs


def _compare(env_id: str, label: str, vector: list[list[tuple]], single: list[list[tuple]]) -> None:
    for i, (got, want) in enumerate(zip(vector, single, strict=True)):
        want = want[: len(got)]  # the single run resets by itself after an episode end; the vector run stops there
        # Vector infos drop the episode summary's nesting order; compare the per-step scalar keys only.
        got = [
            (o, r, te, tr, {k: v for k, v in s.items() if not k.startswith("episode_summary.")})
            for o, r, te, tr, s in got
        ]
        want = [
            (o, r, te, tr, {k: v for k, v in s.items() if not k.startswith("episode_summary.")})
            for o, r, te, tr, s in want
        ]
        assert_same_steps(got, want, f"{env_id} {label} copy {i}")


@pytest.mark.parametrize("env_id", IDS)
def test_sync_vector_env_equals_single_envs(env_id):
    actions = _actions(env_id)
    envs = gym.vector.SyncVectorEnv([functools.partial(gym.make, env_id) for _ in SEEDS])
    _compare(env_id, "SyncVectorEnv", _vector_runs(envs, actions), _single_runs(env_id, actions))


@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("env_id", IDS)
def test_async_vector_env_equals_single_envs(env_id, context):
    if context not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {context!r} is not available on this platform")
    actions = _actions(env_id)
    # "cluster_envs:<id>" makes a spawned worker import the package, which registers the id there.
    envs = gym.vector.AsyncVectorEnv(
        [functools.partial(gym.make, f"cluster_envs:{env_id}") for _ in SEEDS], context=context
    )
    _compare(env_id, f"AsyncVectorEnv({context})", _vector_runs(envs, actions), _single_runs(env_id, actions))


def _cloudpickle_round_trip(env):
    cloudpickle = pytest.importorskip("cloudpickle")  # a gymnasium dependency, but do not insist on it
    return cloudpickle.loads(cloudpickle.dumps(env))


@pytest.mark.parametrize(
    "round_trip", [lambda e: pickle.loads(pickle.dumps(e)), _cloudpickle_round_trip], ids=["pickle", "cloudpickle"]
)
@pytest.mark.parametrize("env_id", IDS)
def test_serialised_wrapped_env_continues_identically(env_id, round_trip):
    actions = _actions(env_id)[0]
    env = gym.make(env_id)
    run_actions(env, actions[: STEPS // 2], reset_seed=SEEDS[0])
    twin = round_trip(env)
    assert_same_steps(run_actions(env, actions[STEPS // 2 :]), run_actions(twin, actions[STEPS // 2 :]), env_id)
