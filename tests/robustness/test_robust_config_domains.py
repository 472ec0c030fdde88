"""Keyword domains (issue 19 item 1): each configuration the random-configuration probe of issue 19 found crashing
or going wrong after construction is now refused at construction with a ``ValueError`` naming the argument, and
the docs pages list the declared domains."""

from __future__ import annotations

import runpy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.registration import ENV_ENTRY_POINTS

ROOT = Path(__file__).resolve().parents[2]
SLA = "ClusterSLA-v1"

REFUSED = [  # (env id, keyword arguments, the argument the message must name)
    (SLA, {"preset": "proportionality_3_4", "scenario_kwargs": {"eta": 1e-300}}, "eta"),
    (SLA, {"preset": "proportionality_3_4", "scenario_kwargs": {"eta": 1e-310}}, "eta"),
    (SLA, {"preset": "proportionality_3_4", "scenario_kwargs": {"t0": 2.5}}, r"scenario_kwargs\['t0'\]"),
    (SLA, {"preset": "proportionality_3_4", "scenario_kwargs": {"t0": -5}}, r"scenario_kwargs\['t0'\]"),
    (SLA, {"preset": "proportionality_3_4", "scenario_kwargs": {"t0": 60_001}}, r"scenario_kwargs\['t0'\]"),
    (SLA, {"scenario_kwargs": {"p23_pairs": ((1, 9), (1, 3))}}, "p23_pairs"),
    (SLA, {"sla": (0.0, 1.0, 0.0)}, "sla"),  # users 2 and 3 share period 0 with no SLA share between them
    (SLA, {"preset": "paper_real_standin", "scenario_kwargs": {"ar_coef": 1.5}}, "ar_coef"),
    (SLA, {"preset": "paper_real_standin", "scenario_kwargs": {"ar_coef": 1.0}}, "ar_coef"),
    (SLA, {"preset": "paper_real_standin", "scenario_kwargs": {"amplitude": 2.0}}, "amplitude"),
    (SLA, {"preset": "paper_real_standin", "scenario_kwargs": {"sigma": 50.0}}, "sigma"),
    (SLA, {"n_users": 1000, "sla": "mean", "scenario": "trace_standin", "horizon": 10**6}, "n_users × horizon"),
    (SLA, {"reward_kappa": 1e300}, "reward_kappa"),
    ("ClusterApprox-v1", {"price_factor": 1e300}, "price_factor"),
    ("ClusterApprox-v1", {"q_range": (1e-300, 1e-300)}, "q_range"),
    ("ClusterApprox-v1", {"price_factor": 1e5}, "job count.*price_factor"),  # inside its domain, jointly too many
    ("ClusterApprox-v1", {"max_visible_jobs": 10**5, "n_machines": 10**3}, "max_visible_jobs × n_machines"),
    ("ClusterGang-v0", {"mu_low": 1e-300, "mu_high": 1e-300, "sigma_ratio": 1e-300, "cost_mean": 1e6}, "mu_low"),
    ("ClusterGang-v0", {"sigma_ratio": 1e-300}, "sigma_ratio"),
    ("ClusterGang-v0", {"n_ports": 10**3, "n_servers": 10**3, "tasks_high": 10}, "n_ports"),
    ("ClusterMultiServer-v0", {"n_ports": 10**3, "n_servers": 10**4}, "n_ports"),
    ("ClusterBilinear-v0", {"num_job_classes": 10**4, "num_server_classes": 10**4}, "num_job_classes"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "argument"), REFUSED)
def test_the_probes_findings_are_refused_at_construction(env_id, kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        gym.make(env_id, **kwargs)


def test_gang_utilities_at_the_edge_of_their_domains_stay_finite():
    """The smallest μ and σ/μ the domains allow, against the largest cost: finite utilities and rewards."""
    env = gym.make("ClusterGang-v0", mu_low=1e-6, mu_high=1e-6, sigma_ratio=1e-6, cost_mean=1e6)
    env.reset(seed=0)
    assert np.isfinite(env.unwrapped.simulator.instance.v_tilde).all()
    for _ in range(5):
        _, reward, *_ = env.step(env.action_space.sample())
        assert np.isfinite(reward)


def test_a_resets_scenario_kwargs_are_checked_against_the_same_domains():
    env = gym.make(SLA, preset="proportionality_3_4")
    env.reset(seed=0)
    before = env.unwrapped.loads.copy()
    with pytest.raises(ValueError, match="eta"):
        env.reset(seed=1, options={"scenario_kwargs": {"eta": 1e-300}})
    np.testing.assert_array_equal(env.unwrapped.loads, before)  # a refused reset changes nothing


def _trace_env(tmp_path, data, sla=(0.5, 0.5), horizon=10, **kwargs):
    path = tmp_path / "loads.npy"
    np.save(path, data)
    return gym.make(SLA, n_users=2, horizon=horizon, scenario="trace", sla=sla,
                    scenario_kwargs={"path": str(path), **kwargs})  # fmt: skip


@pytest.mark.parametrize(
    ("data", "scenario_kwargs", "message"),
    [
        (np.zeros((2, 10)), {}, "zero total load.*scale='rho'"),
        (np.full((2, 10), 1e308), {}, "overflows"),  # silently all-zero loads before
        (np.full((2, 10), 1e308), {"scale": "none"}, "overflows"),
        (np.ones((2, 10)) + 1j, {}, "complex"),  # the imaginary part was dropped with only a warning
    ],
    ids=["zero-rho", "overflow-rho", "overflow-none", "complex"],
)
def test_degenerate_traces_are_refused_at_construction(tmp_path, data, scenario_kwargs, message):
    with pytest.raises(ValueError, match=rf"scenario_kwargs\['path'\].*{message}"):
        _trace_env(tmp_path, data, **scenario_kwargs)


def test_sla_mean_needs_a_history_window_with_load(tmp_path):
    data = np.concatenate([np.zeros((2, 10)), np.ones((2, 10))], axis=1)
    with pytest.raises(ValueError, match=r"history window \[0, 10\).*zero load"):  # NaN shares and observations
        _trace_env(tmp_path, data, sla="mean", start=10)
    for start, history in ((0, None), (5, 6)):  # none before the replayed window; longer than what precedes it
        with pytest.raises(ValueError, match=r"sla='mean' with scenario='trace'.*1 ≤ history ≤ start"):
            _trace_env(tmp_path, data, sla="mean", start=start, history=history)


def test_loads_given_at_reset_keep_the_public_shares(tmp_path):
    env = _trace_env(tmp_path, np.arange(1.0, 41.0).reshape(2, 20), sla="mean", start=10)
    _, info = env.reset(seed=0, options={"loads": np.zeros((2, 10))})  # β = the history window's, not the loads'
    np.testing.assert_allclose(info["sla"], [55 / 310, 255 / 310])


@pytest.mark.parametrize("env_id", list(ENV_ENTRY_POINTS))
def test_docs_pages_list_the_declared_domains(env_id):
    """docs/envs/<id>.md holds the section generated from DOMAINS and JOINT (rerun `python docs/domains.py`)."""
    domains = runpy.run_path(str(ROOT / "docs" / "domains.py"))
    assert domains["section"](env_id) in domains["page"](env_id).read_text()
