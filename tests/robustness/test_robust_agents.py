"""Every reference agent of every id: valid finite actions over a short episode, and pickling mid-episode.

The episode is shortened with ``horizon`` (in the env's own time unit) where the env has that kwarg, so the
episode end is reached too.
A pickled (agent, env) pair, restored, must make the same decisions and see the same steps as the original.
"""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents import agent_names, make_agent
from baselines.eval.harness import env_kwargs_for

from . import robust_instances as instances
from .robust_common import IDS, assert_same_steps, config_fields, flatten, step_record

HORIZON = 12  # short (some agents solve a program per step); a multiple of 6 for ClusterSLA's periodic scenario
# ESDP's dynamic program grows with |E|·ξm·Π(c_k + 1): ~0.7 s per step on the paper graph (33 edges), ~1 ms on
# the small one (10 edges). The paper-size agents run in tests/multiserver; here the code paths matter.
INSTANCE = {"ClusterMultiServer-v0": {"preset": "small"}}
MAX_STEPS = 50 * HORIZON
CASES = [(env_id, name) for env_id in IDS for name in agent_names(env_id)]


def _start(env_id: str, name: str, seed: int):
    agent = make_agent(env_id, name)
    kwargs = {**INSTANCE.get(env_id, {}), **env_kwargs_for(agent, None)}
    if any(f.name == "horizon" for f in config_fields(gym.make(env_id))):
        kwargs.setdefault("horizon", HORIZON)
    env = gym.make(env_id, **kwargs)
    obs, _ = env.reset(seed=seed)
    agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
    return agent, env, obs


def _checked_action(env_id: str, name: str, env: gym.Env, action, t: int):
    space = env.action_space
    values = np.asarray(action, dtype=np.float64) if not isinstance(action, dict) else None
    assert values is None or np.isfinite(values).all(), f"{env_id}/{name}: non-finite action {action!r} at step {t}"
    cast = np.asarray(action).astype(space.dtype) if values is not None and space.dtype is not None else action
    assert space.contains(cast), f"{env_id}/{name}: action {action!r} outside {space} at step {t}"
    return action


def _play(env_id: str, name: str, agent, env, obs, steps: int, t0: int = 0):
    """(actions, step records) for up to ``steps`` steps, stopping at the episode end."""
    actions, records = [], []
    for t in range(t0, t0 + steps):
        action = _checked_action(env_id, name, env, agent.act(obs), t)
        actions.append(np.asarray(action, dtype=np.float64))
        result = env.step(action)
        obs = result[0]
        records.append(step_record(result))
        assert np.isfinite(records[-1][0]).all() and np.isfinite(records[-1][1]), f"{env_id}/{name}: NaN at step {t}"
        if result[2] or result[3]:
            break
    return actions, records, obs


@pytest.mark.parametrize(("env_id", "name"), CASES)
def test_agent_actions_are_finite_and_inside_the_space(env_id, name):
    agent, env, obs = _start(env_id, name, seed=5)
    _, records, _ = _play(env_id, name, agent, env, obs, steps=MAX_STEPS)
    if getattr(env.unwrapped.config, "horizon", None) == HORIZON:  # a slot may take several steps
        assert records[-1][2] or records[-1][3], f"{env_id}/{name}: no episode end within {MAX_STEPS} steps"


@pytest.mark.parametrize(("env_id", "name"), CASES)
def test_agent_pickled_mid_episode_makes_the_same_decisions(env_id, name):
    agent, env, obs = _start(env_id, name, seed=9)
    _, _, obs = _play(env_id, name, agent, env, obs, steps=HORIZON // 2)
    agent_twin, env_twin, obs_twin = pickle.loads(pickle.dumps((agent, env, obs)))
    actions, records, _ = _play(env_id, name, agent, env, obs, HORIZON, HORIZON // 2)
    actions_twin, records_twin, _ = _play(env_id, name, agent_twin, env_twin, obs_twin, HORIZON, HORIZON // 2)
    assert len(actions) == len(actions_twin)
    for t, (a, b) in enumerate(zip(actions, actions_twin, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"{env_id}/{name}: restored agent decided differently at {t}")
    assert_same_steps(records, records_twin, f"{env_id}/{name}")


@pytest.mark.parametrize(("env_id", "name"), CASES)
def test_agent_survives_tiny_and_odd_horizons(env_id, name):
    """Horizons 1, 2, 3 and 6 (where the env accepts them), random seeds: a whole episode runs."""
    if not any(f.name == "horizon" for f in config_fields(gym.make(env_id))):
        pytest.skip("no horizon kwarg")

    @settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**31 - 1), horizon=st.sampled_from([1, 2, 3, 6]))
    def run(seed, horizon):
        agent = make_agent(env_id, name)
        try:
            env = gym.make(env_id, **{**INSTANCE.get(env_id, {}), **env_kwargs_for(agent, None), "horizon": horizon})
        except ValueError:
            assume(False)  # this env does not take that horizon (the error itself is the adversarial test's job)
        obs, _ = env.reset(seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # agents may warn that theory constants clip at tiny T
            agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
            _, records, _ = _play(env_id, name, agent, env, obs, steps=MAX_STEPS)
        assert records[-1][2] or records[-1][3], f"{env_id}/{name}: horizon {horizon} did not end the episode"

    run()


def _instances(env_id: str, agent):
    """A strategy of (env kwargs, reset options) for ``env_id``; the agent's own ``env_kwargs`` win (strict modes:
    ClusterMultiServer/ClusterGang agents run with ``invalid_action="raise"``). Small sizes: agents solve
    programs per step; the dynamics' property tests cover the large ones."""
    needs = env_kwargs_for(agent, None)

    def merged(kwargs: dict, options=None) -> tuple[dict, dict | None]:
        return {**kwargs, **needs}, options

    if env_id == "ClusterSLA-v1":
        return instances.sla_instances(large=False).map(lambda pair: merged(pair[0], {"loads": pair[1]}))
    if env_id == "ClusterApprox-v1":
        return instances.approx_multi(large=False, generalized="capacity" in needs).map(merged)
    if env_id == "ClusterApproxSingleJob-v0":
        return instances.approx_single(large=False).map(merged)
    if env_id == "ClusterBilinear-v0":
        return instances.bilinear(large=False).map(merged)
    if env_id == "ClusterMultiServer-v0":
        return instances.multiserver(large=False).map(merged)
    if env_id == "ClusterGang-v0":
        return instances.gang(large=False).map(merged)
    raise NotImplementedError(f"{env_id}: add its instance strategy to robust_instances and here")


def _assert_feasible(env_id: str, env, obs, action) -> None:
    """Feasibility of an agent's action from the problem data and the observation, for envs without a strict
    ``raise`` mode (ClusterMultiServer/ClusterGang raise themselves)."""
    cfg, a = env.config, np.asarray(action, dtype=np.float64)
    if env_id == "ClusterSLA-v1":
        assert (a >= 0).all(), f"negative allocation {a}"
        if cfg.action_mode == "sub_simplex":
            assert a.sum() <= 1 + 1e-9, f"allocation {a} over capacity 1"
    elif env_id.startswith("ClusterApprox"):
        rows = obs["job"][None, :] if env.single_job else obs["jobs"]
        present = rows[:, 0] == 1
        if env.single_job:
            proposed = a[None, :].astype(bool)
        elif cfg.capacity is None:
            proposed = a[None, :] == np.arange(1, cfg.max_visible_jobs + 1)[:, None]
        else:
            proposed = a.astype(bool)
            assert ((proposed * rows[:, [12]]).sum(axis=0) <= np.asarray(cfg.capacity) + 1e-9).all(), "capacity C_i"
            assert (proposed.sum(axis=1) <= rows[:, 13]).all(), "parallelism u_j"
        assert not proposed[~present].any(), "machines proposed to an empty job slot"
    elif env_id == "ClusterBilinear-v0" and cfg.action_mode in ("allocation", "job_allocation"):
        fractions = a.reshape(-1, len(cfg.servers_per_class))
        assert (fractions >= 0).all() and (fractions.sum(axis=0) <= 1 + 1e-9).all(), "column cap n_j"


@pytest.mark.parametrize(("env_id", "name"), CASES)
def test_agent_on_hypothesis_instances_is_feasible_finite_and_restorable(env_id, name):
    """Feasible, finite actions to the episode end, and the (agent, env) pair pickled at half the horizon makes
    the same decisions."""

    @settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(instance=_instances(env_id, make_agent(env_id, name)), seed=st.integers(0, 2**31 - 1))
    def run(instance, seed):
        kwargs, options = instance
        agent = make_agent(env_id, name)
        env = gym.make(env_id, **kwargs)
        obs, _ = env.reset(seed=seed, options=options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # agents may warn that theory constants clip at tiny T
            warnings.simplefilter("error", RuntimeWarning)  # overflow, 0/0: a NaN in the making
            agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
            half = env.unwrapped.config.horizon // 2  # in env steps for these envs
            snapshot, later = None, []
            for t in range(MAX_STEPS):
                if t == half:
                    snapshot = pickle.dumps((agent, env, obs))
                action = _checked_action(env_id, name, env, agent.act(obs), t)
                _assert_feasible(env_id, env.unwrapped, obs, action)
                later += [np.asarray(action, dtype=np.float64)] if snapshot else []
                obs, reward, terminated, truncated, _ = env.step(action)
                assert np.isfinite(flatten(obs)).all() and np.isfinite(reward), f"{env_id}/{name}: NaN at step {t}"
                if terminated or truncated:
                    break
            assert terminated or truncated, f"{env_id}/{name}: no episode end within {MAX_STEPS} steps"
            replayed, _, _ = _play(env_id, name, *pickle.loads(snapshot), steps=len(later), t0=half)
        for t, (a, b) in enumerate(zip(later, replayed, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{env_id}/{name}: restored mid-episode, differs at {half + t}")

    run()
