"""Registry-wide leak test of the information rule (docs/specs/design.md): nothing an agent observes depends on
hidden or future state.

For every registered id, an episode is drawn twice with the same seed, hence the same public draws (the static problem
data, the jobs or arrivals the decision maker is shown when they come), but with two different hidden trajectories: the
per-setting ``HIDDEN`` patch below redraws what the paper's decision maker may not know (machine availability, true mean
rates and the per-slot rates; the loads, generated or a replayed trace's window; the bandit's parameter, service and
noise draws; the per-edge utility draws). The same action sequence is played in both; the observations must be identical
at reset and at every step until the first step where the agent's feedback (the setting's ``FEEDBACK`` at that step)
differs. The hidden change must show in the feedback within the rollout, so the test can fail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs.approx.env as approx_env
import cluster_envs.bilinear.env as bilinear_env
import cluster_envs.common.env as common_env
import cluster_envs.sla.model as sla_model
from cluster_envs import env_ids, rl_ids
from cluster_envs.approx.env import ClusterApproxEnv, ClusterApproxSingleJobEnv
from cluster_envs.approx.model import RateProcess
from cluster_envs.bilinear.env import ClusterBilinearEnv
from cluster_envs.common.seeding import episode_streams
from cluster_envs.multiserver.env import ClusterMultiServerEnv
from cluster_envs.registration import RL_IDS
from cluster_envs.sla.env import ClusterSLAEnv

IDS = env_ids() + rl_ids()
# Non-default kwargs whose observation carries a drawn quantity: the proportional prices on i.i.d. machines (the
# single-job default draws uniform prices); the SLA shares sla="mean" declares (the stand-in's tenant weights; the
# replayed trace's case is test_replayed_trace_shares_come_from_its_history)
KWARG_CASES = [
    ("ClusterApproxSingleJob-v0", {"prices": "proportional"}),
    ("ClusterApprox-v1", {"preset": "medium"}),
    ("ClusterSLA-v1", {"preset": "paper_real_standin"}),
]
STEPS = 500
# ClusterSLA's feedback (which queues are non-empty) first differs late under random play
STEPS_OF = {ClusterSLAEnv: 3000}
SEED = 7


def _redraw_streams(hidden: tuple[str, ...], hidden_seed: int, monkeypatch) -> None:
    """``episode_streams`` as the env base class calls it at reset, with the ``hidden`` streams drawn from
    ``hidden_seed``."""

    def streams(np_random, names):
        out = episode_streams(np_random, names)  # the env's generator advances exactly as without the patch
        alternative = episode_streams(np.random.default_rng(hidden_seed), names)
        return {name: alternative[name] if name in hidden else out[name] for name in names}

    monkeypatch.setattr(common_env, "episode_streams", streams)


def _hidden_approx(hidden_seed: int, monkeypatch) -> None:
    """Same speeds (public: a machine's speed), jobs and drawn prices; other availability periods, true means and
    per-slot rates."""
    draw = approx_env.make_rate_process

    def make_rate_process(kind, instance_rng, rates_rng, n_machines, horizon, iid_mean_range, speed_heterogeneity):
        public = draw(kind, instance_rng, rates_rng, n_machines, horizon, iid_mean_range, speed_heterogeneity)
        alt = np.random.default_rng(hidden_seed)
        hidden = draw(kind, alt, alt, n_machines, horizon, iid_mean_range, speed_heterogeneity)
        means = public.speed * hidden.means / hidden.speed
        return RateProcess(kind, horizon, means, public.speed, alt, hidden.ends, hidden.is_ap)

    monkeypatch.setattr(approx_env, "make_rate_process", make_rate_process)


def _hidden_bilinear(hidden_seed: int, monkeypatch) -> None:
    """Same features (public), arrivals and assignment draws; another parameter θ, other service and noise draws."""
    sample = bilinear_env.sample_instance

    def sample_instance(rng, n_i, n_j, d):
        u, v, _ = sample(rng, n_i, n_j, d)
        return u, v, sample(np.random.default_rng(hidden_seed), n_i, n_j, d)[2]

    monkeypatch.setattr(bilinear_env, "sample_instance", sample_instance)
    _redraw_streams(("service", "noise"), hidden_seed, monkeypatch)


def _hidden_sla(hidden_seed: int, monkeypatch) -> None:
    """Other loads: the ``loads`` stream redrawn, and a replayed trace's window rescaled per user and shuffled in
    time (another mean load per user); the ``tenants`` stream (the stand-in's weights) and a replay's history window
    stay."""
    _redraw_streams(("loads",), hidden_seed, monkeypatch)
    window = sla_model.trace_window

    def trace_window(*args, **kwargs):
        real = window(*args, **kwargs)
        rng = np.random.default_rng(hidden_seed)
        return rng.permuted(real * rng.uniform(0.5, 1.5, size=(real.shape[0], 1)), axis=1)

    monkeypatch.setattr(sla_model, "trace_window", trace_window)


# Env class -> the patch that redraws its hidden trajectory from ``hidden_seed``. A new setting adds its line;
# until then test_every_id_has_a_hidden_variant fails.
HIDDEN: dict[type, Callable[[int, pytest.MonkeyPatch], None]] = {
    ClusterApproxEnv: _hidden_approx,
    ClusterApproxSingleJobEnv: _hidden_approx,
    ClusterSLAEnv: _hidden_sla,
    ClusterBilinearEnv: _hidden_bilinear,
    ClusterMultiServerEnv: lambda seed, mp: _redraw_streams(("utility",), seed, mp),
}

# Env class -> the agent's feedback of the step just taken, from its info (what the paper's decision maker is
# told about the hidden trajectory: the rates of the machines it ran, which queues are non-empty, the queues
# and rewards it observed, the utilities of the edges it used).
FEEDBACK: dict[type, Callable[[dict], tuple]] = {
    ClusterApproxEnv: lambda info: (info["observed_rates"],),
    ClusterApproxSingleJobEnv: lambda info: (info["observed_rates"],),
    ClusterSLAEnv: lambda info: (np.asarray(info["queue"]) > 0,),
    ClusterBilinearEnv: lambda info: (info["Q_next"], info["reward_noisy"]),
    ClusterMultiServerEnv: lambda info: (info["raw_utility"],),
}


def _lookup(cls: type) -> type:
    for base in cls.__mro__:  # the most derived class listed (ClusterGangEnv is a ClusterMultiServerEnv)
        if base in HIDDEN:
            return base
    raise KeyError(cls)


def _flat(obs) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for _, v in sorted(obs.items())])
    return np.asarray(obs, dtype=np.float64).ravel()


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b, strict=True))


@contextlib.contextmanager
def _variant(setting: type, hidden_seed: int) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        HIDDEN[setting](hidden_seed, mp)
        yield


def rollout(env_id: str, hidden_seed: int, actions: list, kwargs: dict) -> tuple[list[np.ndarray], list[tuple]]:
    """Observations (reset, then after each step) and per-step feedback of one episode under one hidden draw."""
    setting = _lookup(type(gym.make(env_id, **kwargs).unwrapped))
    with _variant(setting, hidden_seed):
        env = gym.make(env_id, **kwargs)  # inside: an env reads a replayed trace when it is made
        obs, _ = env.reset(seed=SEED)
        observations, feedback = [_flat(obs)], []
        for action in actions:
            obs, _, terminated, truncated, info = env.step(action)
            observations.append(_flat(obs))
            feedback.append(FEEDBACK[setting](info))
            if terminated or truncated:
                break
        env.close()
    return observations, feedback


def first_leak(env_id: str, kwargs: dict | None = None) -> tuple[int | None, int | None]:
    """(step of the first observation that differs before the feedback did, first step whose feedback differs);
    ``None`` where there is none. Step 0 is the reset observation."""
    kwargs = kwargs or {}
    env = gym.make(env_id, **kwargs)
    steps = STEPS_OF.get(_lookup(type(env.unwrapped)), STEPS)
    env.action_space.seed(SEED)
    actions = [env.action_space.sample() for _ in range(steps)]
    env.close()
    obs_a, fb_a = rollout(env_id, 1, actions, kwargs)
    obs_b, fb_b = rollout(env_id, 2, actions, kwargs)
    feedback_differs = next((t + 1 for t, (a, b) in enumerate(zip(fb_a, fb_b, strict=True)) if not _same(a, b)), None)
    last_checked = len(obs_a) - 1 if feedback_differs is None else feedback_differs - 1
    leak = next((t for t in range(last_checked + 1) if not np.array_equal(obs_a[t], obs_b[t])), None)
    return leak, feedback_differs


def test_every_id_has_a_hidden_variant():
    for env_id in IDS:
        _lookup(type(gym.make(env_id).unwrapped))  # KeyError: add the setting to HIDDEN and FEEDBACK


# the agent's feedback is read from the full info (an RL-ready id defaults to the minimal one)
@pytest.mark.parametrize(
    ("env_id", "kwargs"), [(i, {"info_level": "full"} if i in RL_IDS else {}) for i in IDS] + KWARG_CASES
)
def test_observation_is_a_function_of_public_data_and_feedback(env_id, kwargs):
    leak, feedback_differs = first_leak(env_id, kwargs)
    assert feedback_differs is not None, f"{env_id}: the hidden redraw never showed in the feedback (vacuous test)"
    assert leak is None, (
        f"{env_id}: the observation at step {leak} differs between two hidden trajectories, before the agent's "
        f"feedback did (step {feedback_differs})"
    )


def test_replayed_trace_shares_come_from_its_history(tmp_path):
    """sla="mean" on a replayed trace (scenario "trace", as the alibaba_gpu_2023 and azure_llm_2023 presets replay
    theirs): the shares the observation carries are the history window's, not the replayed window's."""
    path = tmp_path / "loads.npy"
    np.save(path, np.random.default_rng(0).gamma(2.0, 1.0, size=(3, 4000)))
    kwargs = {"n_users": 3, "horizon": 3000, "sla": "mean", "scenario": "trace",
              "scenario_kwargs": {"path": str(path), "start": 1000}}  # fmt: skip
    leak, feedback_differs = first_leak("ClusterSLA-v1", kwargs)
    assert feedback_differs is not None and leak is None, (leak, feedback_differs)
