"""Every registered agent of every id acts inside ``env.action_space`` on generated configurations (issue 19).

Configurations: a preset of the id, then keyword values drawn with a seeded generator from each setting's
reasonable ranges below (sizes from the smallest legal ones up, SLA shares above 1 and zero, every action,
observation and job mode), then the agent's own ``env_kwargs``. A configuration the env refuses at construction or
at its first reset (``ValueError``) is skipped; each (id, agent) must run ``FAST`` configurations. Each runs a short
episode and every action is checked with ``env.action_space.contains`` (after casting to the space's dtype, which
must not change an integer action's values). The default run draws ``FAST`` configurations per (id, agent) on
small sizes; ``-m slow`` draws ``SLOW`` per (id, agent, preset), the presets' own sizes included.
"""

from __future__ import annotations

import importlib
import warnings
import zlib

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs
from agents import agent_names, make_agent
from baselines.eval.harness import env_kwargs_for
from cluster_envs.approx.config import RATE_PROCESSES, UTILITIES
from cluster_envs.bilinear.config import ACTION_MODES as BILINEAR_ACTIONS
from cluster_envs.bilinear.config import OBSERVATION_MODES as BILINEAR_OBSERVATIONS
from cluster_envs.bilinear.config import SERVICE_MODELS
from cluster_envs.multiserver.config import NORMALIZATIONS
from cluster_envs.sla.config import ACTION_MODES as SLA_ACTIONS
from cluster_envs.sla.config import OBSERVATION_MODES as SLA_OBSERVATIONS

STEPS = 8  # per episode (horizons are drawn short too, so that episode ends are reached)
FAST, SLOW = 2, 10  # per (id, agent) on small sizes; per (id, agent, preset), its own sizes too, under -m slow
ATTEMPTS = 4  # configurations drawn per configuration wanted, before giving up on finding enough the env accepts


def _pick(rng: np.random.Generator, values):
    return values[int(rng.integers(len(values)))]


def _keep_or(rng: np.random.Generator, preset_value, values):
    """The preset's value two times in three (presets that fix a size refuse others), else one of ``values``."""
    return preset_value if rng.random() < 2 / 3 else _pick(rng, values)


def _size(rng: np.random.Generator, small: list[int], preset_value: int, large: bool) -> int:
    """A small size, or (slow profile, one time in three) the preset's own."""
    return preset_value if large and rng.random() < 1 / 3 else _pick(rng, small)


def sla(rng, base, large):
    n = _keep_or(rng, base.n_users, [2, 3, 5])  # some scenarios have exactly 3 users
    shares = rng.choice([0.0, 0.05, 0.3, 1.0, 1.5, 4.0], size=n)  # single shares above 1: over-commitment
    shares[rng.integers(n)] = _pick(rng, [0.3, 1.0, 2.5])  # a positive sum
    horizon = _pick(rng, [6, 12])  # multiples of 6: the periodic scenario's period
    kwargs = {
        "n_users": n,
        "sla": "mean" if rng.random() < 0.1 else tuple(float(s) for s in shares),  # "mean": trace scenarios
        "horizon": horizon,
        "action_mode": _pick(rng, SLA_ACTIONS),
        "observation_mode": _pick(rng, SLA_OBSERVATIONS),
        "observation_format": _pick(rng, ["flat", "dict"]),
        "include_time": bool(rng.random() < 0.5),
    }
    if base.scenario == "sec_3_4":  # its default start ⌈1/(η ε)⌉ = 30 lies beyond these horizons: user 3 starts
        kwargs["scenario_kwargs"] = {"t0": int(rng.integers(horizon + 1))}  # within the episode (or at its end)
    return kwargs


def _approx_common(rng, base, large):
    process = _pick(rng, RATE_PROCESSES)
    return {
        "n_machines": _size(rng, [1, 3, 20], base.n_machines, large),
        "horizon": _pick(rng, [1, 5, 12]),
        "rate_process": process,
        "iid_mean_range": _pick(rng, [(0.1, 0.9), (0.5, 0.5), (0.01, 0.99)]),
        "speed_heterogeneity": _pick(rng, [0.0, 0.5]),
        "prices": _pick(rng, ["proportional", "uniform"]),
        "utility": _pick(rng, UTILITIES),
        "beta": _pick(rng, [0.1, 0.5, 1.0]),
        "budget_mode": _pick(rng, ["hard", "soft"]),
        "reward_mode": _pick(rng, ["true", "approx", "sparse"]),
    }


def approx(rng, base, large):
    kw = _approx_common(rng, base, large)
    kw["max_visible_jobs"] = _size(rng, [1, 3, 8], base.max_visible_jobs, large)
    kw["job_source"] = _pick(rng, ["synthetic", "common"])
    if kw["job_source"] == "synthetic":
        kw.update(load=_pick(rng, [0.5, 3.0]), lifetime_median=_pick(rng, [1.0, 5.0, 100.0]))
    else:
        kw["n_jobs"] = int(rng.integers(1, 6))
    if rng.random() < 0.3:  # Sec. V-C: MultiBinary((K, M))
        kw.update(capacity=int(rng.integers(1, 4)), demand=_pick(rng, [0.5, 1.0, 2.0]),
                  parallelism=int(rng.integers(1, kw["n_machines"] + 1)))  # fmt: skip
    return kw


def approx_single(rng, base, large):
    return {**_approx_common(rng, base, large), "budget_fraction": _pick(rng, [1e-6, 0.2, 5.0])}


def bilinear(rng, base, large):
    n_j = _size(rng, [1, 2, 3], base.num_server_classes, large)
    servers = tuple(int(s) for s in rng.integers(1, 4, size=n_j))
    mu = _pick(rng, [0.5, 1.0])
    return {
        "num_job_classes": _keep_or(rng, base.num_job_classes, [1, 3, 10]),  # per-class presets (holding_costs)
        "num_server_classes": n_j,
        "servers_per_class": servers,
        "feature_dim": _pick(rng, [1, 2, 4]),
        "service_rate": mu,
        "traffic_intensity": _pick(rng, [0.05, 0.5, 0.9]) * min(sum(servers), 1 / mu),  # stable
        "noise_std": _pick(rng, [0.0, 0.1, 1.0]),
        "service_model": _pick(rng, SERVICE_MODELS),
        "action_mode": _pick(rng, BILINEAR_ACTIONS),
        "observation_mode": _pick(rng, BILINEAR_OBSERVATIONS),
        "max_visible_jobs": _pick(rng, [4, 32]),
        "horizon": _pick(rng, [2, 12]),
    }


def _multiserver_common(rng, base, large):
    req_low, c_low = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    return {
        "n_ports": _size(rng, [1, 2, 4], base.n_ports, large),
        "n_servers": _size(rng, [1, 3, 10], base.n_servers, large),
        "n_device_types": int(rng.integers(1, 4)),
        "edge_prob": _pick(rng, [0.1, 0.5, 1.0]),
        "arrival_prob": _pick(rng, [0.0, 0.5, 0.9, 1.0]),
        "req_low": req_low,
        "req_high": req_low + int(rng.integers(0, 3)),
        "c_low": c_low,
        "c_high": c_low + int(rng.integers(0, 3)),
        "normalization": _pick(rng, NORMALIZATIONS),
        "action_mode": _pick(rng, ["binary", "scores"]),
        "binary_repair_order": _pick(rng, ["index", "random"]),
        "horizon": _pick(rng, [1, 6, 12]),
        "instance_seed": int(rng.integers(2**31)),
    }


def multiserver(rng, base, large):
    kw = _multiserver_common(rng, base, large)
    kw.update(capacity_mode=_pick(rng, ["alpha_sum", "per_server_sum"]), capacity_beta=_pick(rng, [0.3, 0.5, 1.0]),
              obs_static=bool(rng.random() < 0.5), allow_unusable_channels=True)  # fmt: skip
    return kw


def gang(rng, base, large):
    kw = _multiserver_common(rng, base, large)
    tasks_low = int(rng.integers(1, 4))
    kw.update(tasks_low=tasks_low, tasks_high=tasks_low + int(rng.integers(0, 3)),
              min_tasks=_pick(rng, ["all", "half"]))  # fmt: skip
    return kw


SAMPLERS = {
    "ClusterSLA-v1": sla,
    "ClusterApprox-v1": approx,
    "ClusterApproxSingleJob-v0": approx_single,
    "ClusterBilinear-v0": bilinear,
    "ClusterMultiServer-v0": multiserver,
    "ClusterGang-v0": gang,
}


def inside(space: gym.Space, action) -> bool:
    """``space.contains`` on the action cast to the space's dtype; NaN, non-numeric values and integer spaces
    given non-integral values are outside."""
    values = np.asarray(action)
    if values.dtype.kind not in "biuf" or not np.isfinite(values.astype(np.float64)).all():
        return False
    cast = values.astype(space.dtype)
    return (space.dtype.kind == "f" or np.array_equal(cast, values)) and space.contains(cast)


def presets(env_id: str) -> list[str]:
    """The id's presets less those that read user data (``TRACE_PRESETS`` of its config module, e.g. a trace
    folder: tests/multiserver and tests/sla run those on the shared trace) and the production-scale ones
    (``PRODUCTION_PRESETS``: tests/test_production_presets.py)."""
    env = gym.make(env_id).unwrapped
    module = importlib.import_module(type(env.config).__module__)
    skipped = (*getattr(module, "TRACE_PRESETS", ()), *getattr(module, "PRODUCTION_PRESETS", ()))
    return [name for name in type(env).presets if name not in skipped]


def run_configurations(env_id: str, name: str, preset_names: list[str], wanted: int, large: bool) -> None:
    """Draw configurations until ``wanted`` ran (presets in turn), each a short episode checked step by step."""
    rng = np.random.default_rng(zlib.crc32(f"{env_id}/{name}/{preset_names}/{large}".encode()))
    bases = {p: gym.make(env_id, preset=p).unwrapped.config for p in preset_names}
    ran, refused = 0, []
    for attempt in range(ATTEMPTS * wanted):
        preset = preset_names[attempt % len(preset_names)]
        agent = make_agent(env_id, name)
        kwargs = env_kwargs_for(agent, None)
        kwargs = {**SAMPLERS[env_id](rng, bases[preset], large), **kwargs}
        seed = int(rng.integers(2**31))
        try:
            env = gym.make(env_id, preset=preset, **kwargs)
            obs, _ = env.reset(seed=seed)
        except ValueError as error:  # refused: legal here (the configuration fuzz checks where and how)
            refused.append(str(error)[:80])
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # agents may warn that theory constants clip at tiny T
            agent.reset(env.unwrapped if agent.privileged else env.unwrapped.problem, seed=seed)
            for t in range(STEPS):
                action = agent.act(obs)
                assert inside(env.action_space, action), (
                    f"{env_id}/{name}, preset={preset!r}, {kwargs}, seed {seed}: step {t} action {action!r} "
                    f"outside {env.action_space}"
                )
                obs, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    break
        ran += 1
        if ran == wanted:
            return
    pytest.fail(f"{env_id}/{name}: only {ran} of {wanted} configurations constructed; refusals: {refused[:3]}")


CASES = [(env_id, name) for env_id in cluster_envs.env_ids() for name in agent_names(env_id)]


@pytest.mark.parametrize(("env_id", "name"), CASES, ids=[f"{e}-{n}" for e, n in CASES])
def test_agent_actions_inside_the_space_on_generated_configurations(env_id, name):
    run_configurations(env_id, name, presets(env_id), FAST, large=False)


SLOW_CASES = [(env_id, name, p) for env_id, name in CASES for p in presets(env_id)]


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "name", "preset"), SLOW_CASES, ids=[f"{e}-{n}-{p}" for e, n, p in SLOW_CASES])
def test_agent_actions_inside_the_space_on_generated_configurations_long(env_id, name, preset):
    run_configurations(env_id, name, [preset], SLOW, large=True)


PRESET_CASES = [(env_id, p) for env_id in cluster_envs.env_ids() for p in presets(env_id)]


@pytest.mark.parametrize(("env_id", "preset"), PRESET_CASES, ids=[f"{e}-{p}" for e, p in PRESET_CASES])
def test_every_preset_gets_configurations_the_env_builds(env_id, preset):
    """The samplers draw, for each preset, configurations the env accepts: the slow profile's cases of
    ClusterSLA's proportionality_3_4 constructed none (user 3's default start lay beyond the drawn horizons)."""
    rng = np.random.default_rng(zlib.crc32(f"{env_id}/{preset}".encode()))
    base = gym.make(env_id, preset=preset).unwrapped.config
    refused = []
    for _ in range(ATTEMPTS):
        try:
            gym.make(env_id, preset=preset, **SAMPLERS[env_id](rng, base, True)).reset(seed=0)
            return
        except ValueError as error:
            refused.append(str(error)[:120])
    pytest.fail(f"{env_id}, preset={preset!r}: no drawn configuration was accepted: {refused}")
