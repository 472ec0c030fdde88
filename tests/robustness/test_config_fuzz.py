"""The configuration fuzz (issue 19): every configuration an env accepts runs.

Configurations are drawn from the keyword domains the config classes declare (``config_strategies``). The
invariant, for the single env and its batched form (``gym.make_vec(id, 2, vectorization_mode=
"vector_entry_point")``): the constructor refuses the configuration with a ``ValueError``, or a reset, a short
episode of random actions and a second reset run with observations inside the space and finite rewards and scalar
infos. The fast profile runs by default; ``-m slow`` runs the long one (its last run is recorded in
docs/robustness.md). Every failure the fuzz finds goes into ``REGRESSIONS``, which the default run replays.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_envs.registration import VECTOR_ENTRY_POINTS

from .config_strategies import configurations, env_class
from .robust_common import IDS, sample_action, scalar_info

STEPS = 6
FAST, SLOW = 20, 100  # examples per (id, single or batched); the long profile is sized to run in CI

# (env id, preset, overrides) of configurations that once broke the invariant (found by this fuzz or by the probe of
# issue 19); each must now be refused at construction or run.
REGRESSIONS = [
    ("ClusterSLA-v1", "proportionality_3_4", {"scenario_kwargs": {"eta": 1e-300}}),
    ("ClusterSLA-v1", "proportionality_3_4", {"scenario_kwargs": {"eta": 1e-310}}),
    ("ClusterSLA-v1", "proportionality_3_4", {"scenario_kwargs": {"t0": 2.5}}),
    ("ClusterSLA-v1", "proportionality_3_4", {"scenario_kwargs": {"t0": -5}}),
    ("ClusterSLA-v1", "default", {"scenario_kwargs": {"p23_pairs": ((1, 9), (1, 3))}}),
    ("ClusterSLA-v1", "default", {"sla": (0.0, 1.0, 0.0)}),
    ("ClusterSLA-v1", "paper_real_standin", {"scenario_kwargs": {"ar_coef": 1.5}}),
    ("ClusterSLA-v1", "paper_real_standin", {"scenario_kwargs": {"ar_coef": 1.0}}),
    ("ClusterSLA-v1", "paper_real_standin", {"scenario_kwargs": {"amplitude": 2.0}}),
    ("ClusterSLA-v1", "paper_real_standin", {"scenario_kwargs": {"sigma": 50.0}}),
    ("ClusterApprox-v1", "default", {"price_factor": 1e300}),
    ("ClusterApprox-v1", "default", {"q_range": (1e-300, 1e-300)}),
    ("ClusterGang-v0", "default", {"mu_low": 1e-300, "mu_high": 1e-300, "sigma_ratio": 1e-300, "cost_mean": 1e6}),
    # found by this fuzz
    ("ClusterBilinear-v0", "default", {"traffic_intensity": 5e-324}),  # λ underflowed to 0: NaN class probabilities
    ("ClusterBilinear-v0", "default", {"servers_per_class": 268435424}),  # 9 GB of per-server arrays
    ("ClusterSLA-v1", "example_1_1", {"scenario": "trace_standin", "scenario_kwargs": {"day": 3.1e307}}),  # NaN
    ("ClusterSLA-v1", "paper_real_standin", {"n_users": 3, "scenario_kwargs": {"rho": 5e-324}}),  # all-zero loads
    ("ClusterApprox-v1", "default", {"n_machines": 1, "horizon": 1, "q_range": (5e-324, 5e-324)}),  # 1/0
    ("ClusterApproxSingleJob-v0", "soft", {"horizon": 1, "budget_fraction": 5e-324}),  # budget 0: inf consumed/budget
    ("ClusterMultiServer-v0", "default", {"compute_regret": False, "invalid_action": "raise"}),  # (the fuzz's own bug)
    ("ClusterGang-v0", "paper", {"compute_regret": False, "invalid_action": "raise"}),
]


def feasible(env, action, zero):
    """``action``, or under ``invalid_action="raise"`` (where the env refuses an infeasible action, by design) the
    all-zero action, which places nothing and is always feasible, when ``action`` is refused."""
    if getattr(env.unwrapped.config, "invalid_action", None) != "raise":
        return env.step(action)
    try:
        return env.step(action)
    except ValueError as err:
        assert "infeasible" in str(err), err
        return env.step(zero)


def make(env_id: str, mode: str, preset: str, overrides: dict):
    if mode == "single":
        return gym.make(env_id, preset=preset, **overrides)
    return gym.make_vec(env_id, 2, vectorization_mode="vector_entry_point", preset=preset,
                        **{**overrides, "info_level": "minimal"})  # fmt: skip


def run(env_id: str, mode: str, preset: str, overrides: dict, seed: int) -> str:
    """'refused' or 'ran'; an AssertionError (or any other exception) when the invariant breaks."""
    try:
        env = make(env_id, mode, preset, overrides)
    except ValueError:
        return "refused"
    rng = np.random.default_rng(seed)
    where = f"{mode} {env_id} preset={preset!r} {overrides!r} seed {seed}"
    obs, _ = env.reset(seed=seed)
    assert env.observation_space.contains(obs), f"{where}: reset observation outside its space"
    for t in range(STEPS):
        action = sample_action(env.action_space, rng)
        obs, reward, terminated, truncated, info = feasible(env, action, np.zeros_like(action))
        assert env.observation_space.contains(obs), f"{where}: observation outside its space at step {t}"
        assert np.isfinite(reward).all(), f"{where}: reward {reward!r} at step {t}"
        bad = {k: v for k, v in scalar_info(info).items() if not math.isfinite(v)}
        assert not bad, f"{where}: non-finite info {bad} at step {t}"
        if mode == "single" and (terminated or truncated):  # the batched envs reset their copies themselves
            env.reset()
    env.reset(seed=seed + 1)
    env.close()
    return "ran"


MODES = ("single", "batched")
CASES = [(i, mode) for i in IDS for mode in MODES if mode == "single" or i in VECTOR_ENTRY_POINTS]


def fuzz(env_id: str, mode: str, examples: int, outcomes: list, paper_scale: bool = False) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(config=configurations(env_id, paper_scale), seed=st.integers(0, 2**16))
    def check(config, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gymnasium's checker and the agents' advice are not findings here
            outcomes.append(run(env_id, mode, *config, seed))

    check()


@pytest.mark.parametrize(("env_id", "mode"), CASES)
def test_fuzzed_configurations_are_refused_or_run(env_id, mode):
    outcomes: list[str] = []
    fuzz(env_id, mode, FAST, outcomes)
    assert "ran" in outcomes, f"{env_id} {mode}: every fuzzed configuration was refused; the fuzz tests nothing"


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "mode"), CASES)
def test_fuzzed_configurations_long_profile(env_id, mode):
    outcomes: list[str] = []
    fuzz(env_id, mode, SLOW, outcomes, paper_scale=True)
    print(f"\nfuzz {env_id} {mode}: {len(outcomes)} configurations, {outcomes.count('ran')} ran")


@pytest.mark.parametrize(("env_id", "preset", "overrides"), REGRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_regressions_are_refused_or_run(env_id, preset, overrides, mode):
    for seed in range(3):
        run(env_id, mode, preset, overrides, seed)


@pytest.mark.parametrize("env_id", IDS)
def test_every_keyword_has_a_domain(env_id):
    """A keyword without a declared domain would be neither checked, documented nor fuzzed."""
    config_class = env_class(env_id).config_class
    fields = {f.name for f in dataclasses.fields(config_class)}
    assert set(config_class.DOMAINS) == fields
