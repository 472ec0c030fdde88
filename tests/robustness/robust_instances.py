"""Hypothesis strategies of valid env kwargs per setting, from the smallest legal sizes to large ones (the
property tests of the dynamics and the agents' tests share them). ``large=False`` keeps the sizes small for
callers that solve a program per step."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from cluster_envs.approx.config import RATE_PROCESSES, UTILITIES
from cluster_envs.bilinear.config import OBSERVATION_MODES, SERVICE_MODELS
from cluster_envs.multiserver.config import NORMALIZATIONS

few = st.integers(1, 3)


def _size(draw, large: bool, top: int, low: int = 1) -> int:
    """Mostly the smallest legal sizes; with ``large`` also up to ``top``."""
    return draw(st.one_of(st.integers(low, low + 2), st.integers(low + 3, top)) if large else st.integers(low, low + 2))


# ---------------------------------------------------------------------------------------------- ClusterSLA-v1
@st.composite
def sla_instances(draw, large: bool = True) -> tuple[dict, np.ndarray]:
    """(kwargs, loads for ``reset(options={"loads": ...})``): SLA zeros, over-commitment, zero to 1e12 loads."""
    n = _size(draw, large, 100, low=2)
    horizon = draw(st.one_of(st.just(1), st.integers(2, 12)))
    sla = draw(st.lists(st.sampled_from([0.0, 0.01, 0.3, 1.0]), min_size=n, max_size=n).filter(lambda s: sum(s) > 0))
    scale = draw(st.sampled_from([0.0, 1e-12, 0.3, 1.0, 1e6, 1e12]))
    loads = np.random.default_rng(draw(st.integers(0, 2**31 - 1))).uniform(0.0, 1.0, (n, horizon)) * scale
    kwargs = {"n_users": n, "sla": tuple(sla), "horizon": horizon, "scenario": "gamma_iid"}
    return kwargs, loads


# ------------------------------------------------------------------- ClusterApprox-v1, ClusterApproxSingleJob-v0
@st.composite
def approx_common(draw, large: bool = True) -> dict:
    process, prices = draw(st.sampled_from(RATE_PROCESSES)), draw(st.sampled_from(["proportional", "uniform"]))
    # Mean rates 0 and 1 where legal (not for a Beta, not 0 when prices are proportional to the means).
    top = 1.0 - 1e-6 if process == "iid_beta" else 1.0
    low = draw(st.floats(1e-6 if process == "iid_beta" or prices == "proportional" else 0.0, top))
    high = draw(st.floats(low, top))
    return {
        "n_machines": _size(draw, large, 200),
        "horizon": draw(st.one_of(st.just(1), st.integers(2, 30))),
        "rate_process": process,
        "iid_mean_range": (low, high),
        "speed_heterogeneity": draw(st.sampled_from([0.0, 0.5, 0.99])),
        "prices": prices,
        "utility": draw(st.sampled_from(UTILITIES)),
        "beta": draw(st.sampled_from([1e-3, 0.5, 1.0])),
        "budget_mode": draw(st.sampled_from(["hard", "soft"])),
        "reward_mode": draw(st.sampled_from(["true", "approx", "sparse"])),
    }


@st.composite
def approx_multi(draw, large: bool = True, generalized: bool | None = None) -> dict:
    kw = draw(approx_common(large))
    m, horizon = kw["n_machines"], kw["horizon"]
    kw["max_visible_jobs"] = _size(draw, large, 64)
    source = draw(st.sampled_from(["synthetic", "common", "list"]))
    kw["job_source"] = source
    if source == "synthetic":  # load 1e-9 is the "zero load" end: a single job
        kw["load"] = draw(st.sampled_from([1e-9, 0.5, 3.0]))
        kw["lifetime_median"] = draw(st.sampled_from([1.0, 5.0, 100.0]))
        kw["q_range"] = (0.01, draw(st.sampled_from([2.0, 100.0])))
    elif source == "common":
        kw["n_jobs"] = draw(st.integers(1, 5))
        kw["b_range"] = (1e-6, draw(st.sampled_from([1e-6, 0.5, 1e3])))
    else:
        jobs = []
        for _ in range(draw(st.integers(1, 6))):
            a = draw(st.integers(0, horizon - 1))
            d = draw(st.integers(a + 1, horizon))
            jobs.append((a, d, draw(st.sampled_from([1e-9, 0.3, 1e12])), draw(st.sampled_from([1e-6, 1.0, 1e6]))))
        kw["jobs"] = tuple(jobs)
    kw["compute_regret"] = source != "synthetic" and m <= 20  # SLSQP: small instances only
    if draw(st.booleans()) if generalized is None else generalized:  # Sec. V-C: MultiBinary((K, M)), repaired
        kw["capacity"] = draw(st.integers(1, 3))
        kw["demand"] = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
        kw["parallelism"] = draw(st.integers(1, m))
    return kw


@st.composite
def approx_single(draw, large: bool = True) -> dict:
    kw = draw(approx_common(large))
    kw["budget_fraction"] = draw(st.sampled_from([1e-9, 0.05, 0.5, 5.0]))
    return kw


# ------------------------------------------------------------------------------------------- ClusterBilinear-v0
@st.composite
def bilinear(draw, large: bool = True) -> dict:
    n_i, n_j = _size(draw, large, 30), _size(draw, large, 8)
    servers = tuple(draw(st.lists(few, min_size=n_j, max_size=n_j)))
    mu = draw(st.sampled_from([0.05, 0.5, 1.0]))
    return {
        "num_job_classes": n_i,
        "num_server_classes": n_j,
        "servers_per_class": servers,
        "feature_dim": _size(draw, large, 10),
        "service_rate": mu,
        "traffic_intensity": draw(st.sampled_from([1e-6, 0.5, 0.95])) * min(sum(servers), 1 / mu),  # λ < 1, ρ < n
        "noise_std": draw(st.sampled_from([0.0, 0.1, 1.0])),
        "service_model": draw(st.sampled_from(SERVICE_MODELS)),
        "observation_mode": draw(st.sampled_from(OBSERVATION_MODES)),
        "max_visible_jobs": _size(draw, large, 64),
        "horizon": draw(st.one_of(st.just(1), st.integers(2, 12))),
    }


# ------------------------------------------------------------------------ ClusterMultiServer-v0, ClusterGang-v0
@st.composite
def _multiserver_common(draw, n_ports: int, n_servers: int, n_device_types: int) -> dict:
    if draw(st.integers(0, 4)) == 0:
        arrival_prob = 0.0  # zero load: no job ever arrives
    elif draw(st.booleans()):
        arrival_prob = draw(st.sampled_from([1e-3, 0.5, 1.0]))
    else:
        arrival_prob = tuple(draw(st.lists(st.floats(0.0, 1.0), min_size=n_ports, max_size=n_ports)))
    req_low, c_low = draw(few), draw(few)
    mu_low = draw(st.sampled_from([1e-3, 0.1, 2.0]))
    return {
        "n_ports": n_ports,
        "n_servers": n_servers,
        "n_device_types": n_device_types,
        "edge_prob": draw(st.sampled_from([1e-3, 0.1, 0.5, 1.0])),
        "arrival_prob": arrival_prob,
        "req_low": req_low,
        "req_high": req_low + draw(st.integers(0, 2)),
        "c_low": c_low,
        "c_high": c_low + draw(st.integers(0, 2)),
        "mu_low": mu_low,
        "mu_high": mu_low * draw(st.sampled_from([1.0, 2.0, 100.0])),
        "sigma_ratio": draw(st.sampled_from([1e-3, 0.5, 3.0])),
        "cost_mean": draw(st.sampled_from([-1.0, 0.0, 0.5, 10.0])),
        "cost_std": draw(st.sampled_from([0.0, 0.1, 2.0])),
        "normalization": draw(st.sampled_from(NORMALIZATIONS)),
        "horizon": draw(st.one_of(st.just(1), st.integers(2, 12))),
        "instance_seed": draw(st.integers(0, 2**31 - 1)),
        "action_mode": draw(st.sampled_from(["binary", "scores"])),
        "invalid_action": draw(st.sampled_from(["repair", "repair", "raise"])),
        "binary_repair_order": draw(st.sampled_from(["index", "random"])),
        "infeasible_penalty": draw(st.sampled_from([0.0, 0.5])),
    }


@st.composite
def multiserver(draw, large: bool = True) -> dict:
    sizes = (_size(draw, large, 40), _size(draw, large, 60), draw(few))
    kw = draw(_multiserver_common(*sizes))
    kw["capacity_mode"] = draw(st.sampled_from(["alpha_sum", "per_server_sum"]))
    kw["capacity_beta"] = draw(st.sampled_from([1e-3, 0.5, 1.0]))
    kw["obs_static"] = draw(st.booleans())
    kw["allow_unusable_channels"] = True  # per_server_sum may leave an edge that never fits: repair drops it
    kw["compute_regret"] = max(sizes[:2]) <= 3  # the oracle's DP grows with Π(c_k + 1)·|E|
    return kw


@st.composite
def gang(draw, large: bool = True) -> dict:
    sizes = (_size(draw, large, 12), _size(draw, large, 40), draw(few))
    kw = draw(_multiserver_common(*sizes))
    kw["tasks_low"] = draw(few)
    kw["tasks_high"] = kw["tasks_low"] + draw(st.integers(0, 2))
    kw["min_tasks"] = draw(st.sampled_from(["all", "half"]))
    kw["compute_regret"] = max(sizes[:2]) <= 3  # one MILP per arrival pattern
    return kw
