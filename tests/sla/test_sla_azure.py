"""The ``azure_llm_2023`` presets of ClusterSLA-v1 from the shared copy of the Azure LLM inference 2023 trace
(skipped with a reason when it is absent): tenants are the two services, or each service's size classes; loads
the tokens arriving per slot; SLA shares their mean; agent episodes; errors naming the file, line and column."""

from __future__ import annotations

import csv
import shutil
from datetime import datetime

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.eval.harness import rollout
from cluster_envs.common.azure_llm import FILES, SERVICES, load_llm_trace
from cluster_envs.sla.config import SLAConfig
from cluster_envs.sla.model import azure_llm_loads, binding_share

ENV = "ClusterSLA-v1"
PRESET = "azure_llm_2023"


def _requests(folder, service):
    """(seconds since the epoch, tokens) per row of a service's CSV, read independently of the project's reader."""
    with open(folder / FILES[service], newline="") as handle:
        rows = list(csv.DictReader(handle))
    times = [datetime.fromisoformat(row["TIMESTAMP"][:26]).timestamp() for row in rows]  # μs: fromisoformat's limit
    return np.array(times), np.array([int(row["ContextTokens"]) + int(row["GeneratedTokens"]) for row in rows])


def test_two_tenants_get_each_service_s_tokens_in_its_arrival_slot(azure_trace_dir):
    horizon = 100
    loads = azure_llm_loads(azure_trace_dir, 2, horizon)
    requests = {service: _requests(azure_trace_dir, service) for service in SERVICES}
    start = min(times.min() for times, _ in requests.values())
    span = max(times.max() for times, _ in requests.values()) - start
    for i, service in enumerate(SERVICES):
        times, tokens = requests[service]
        slot = np.minimum((times - start) // (span / horizon), horizon - 1).astype(int)
        np.testing.assert_allclose(loads[i], np.bincount(slot, weights=tokens, minlength=horizon), rtol=1e-12)


def test_size_classes_split_each_service_at_its_token_quantiles(azure_trace_dir):
    trace = load_llm_trace(azure_trace_dir)
    classes = trace.size_classes(3)
    for s in range(len(SERVICES)):
        mine = trace.service == s
        counts = np.bincount(classes[mine], minlength=3)
        assert abs(counts - mine.sum() / 3).max() < 0.02 * mine.sum()  # terciles (ties at the cut move a few)
        largest_small = trace.tokens[mine & (classes == 0)].max()
        assert largest_small <= trace.tokens[mine & (classes == 1)].min()
    six, two = azure_llm_loads(azure_trace_dir, 6, 50), azure_llm_loads(azure_trace_dir, 2, 50)
    np.testing.assert_allclose(six.reshape(2, 3, 50).sum(axis=1), two)  # the classes partition each service


@pytest.mark.parametrize(("preset", "n_users"), [(PRESET, 2), (f"{PRESET}_sizes", 6)])
def test_preset_rescales_the_tokens_and_takes_sla_from_their_history(azure_trace_dir, preset, n_users):
    env = gym.make(ENV, preset=preset, trace_dir=azure_trace_dir).unwrapped
    env.reset(seed=0)
    horizon = env.config.horizon
    history, raw = np.split(azure_llm_loads(azure_trace_dir, n_users, 2 * horizon), 2, axis=1)  # history = T slots
    np.testing.assert_allclose(env.loads, raw * 0.99 / raw.sum(axis=0).mean())  # utilization ρ = 0.99
    means = history.mean(axis=1)  # the previous period's mean tokens, not the replayed window's
    np.testing.assert_allclose(env.problem.sla, means / means.sum())
    first = env.loads.copy()
    env.reset(seed=1)
    np.testing.assert_array_equal(env.loads, first)  # the trace, whatever the seed


def test_agent_episodes_on_the_trace(azure_trace_dir):
    kwargs = {"preset": f"{PRESET}_sizes", "trace_dir": azure_trace_dir, "horizon": 400}
    for agent in ("mwu_extended", "static", "owm"):
        metrics = rollout(ENV, agent, seed=0, env_kwargs=kwargs, record=()).metrics
        assert metrics["steps"] == 400, agent
        assert np.isfinite(list(metrics.values())).all(), agent


def test_the_config_says_what_to_pass_and_refuses_odd_users():
    with pytest.raises(ValueError, match=f"trace_dir=.*{FILES['code']}"):
        gym.make(ENV, preset=PRESET)
    with pytest.raises(ValueError, match="n_users=3 is not allowed with scenario='azure_llm_2023'"):
        SLAConfig(scenario=PRESET, n_users=3, sla="mean", trace_dir="anywhere")


def _copy(source, target, file=None, edit=None):
    """The trace in ``target``, with ``file`` left out (``edit`` None) or its rows passed through ``edit``."""
    for name in FILES.values():
        if name != file:
            shutil.copy(source / name, target / name)
    if edit is not None:
        with open(source / file, newline="") as handle:
            rows = list(csv.reader(handle))
        with open(target / file, "w", newline="") as out:
            csv.writer(out).writerows(edit(rows))
    return target


def _drop_generated(rows):
    return [row[:2] for row in rows]


def _bad_time(rows):
    rows[5][0] = "yesterday"
    return rows


def _negative_tokens(rows):
    rows[7][1] = "-3"
    return rows


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (None, "no file at"),
        (_drop_generated, r"lacks the column\(s\) \['GeneratedTokens'\]"),
        (_bad_time, "line 6 column 'TIMESTAMP' is 'yesterday'"),
        (_negative_tokens, "line 8 column 'ContextTokens' is -3.0"),
    ],
)
def test_a_missing_file_column_or_bad_row_names_file_line_and_column(azure_trace_dir, tmp_path, edit, expected):
    folder = _copy(azure_trace_dir, tmp_path, FILES["conv"], edit)
    with pytest.raises(ValueError, match=expected) as err:
        gym.make(ENV, preset=PRESET, trace_dir=folder)
    assert str(err.value).startswith("trace_dir: ") and FILES["conv"] in str(err.value)


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"trace_dir='.*nowhere' is not a folder"):
        gym.make(ENV, preset=PRESET, trace_dir=tmp_path / "nowhere")


def test_binding_share_is_the_share_of_steps_the_optimum_s_server_is_busy():
    """Capacity 1: a burst of 2.5 at step 0 keeps the server busy for steps 0-2 (1, 1, 0.5 served), then idle."""
    loads = np.zeros((2, 6))
    loads[0, 0], loads[1, 4] = 2.5, 0.4
    assert binding_share(loads) == pytest.approx(2 / 6)
    assert binding_share(np.full((2, 4), 0.5)) == 1.0  # exactly at capacity: every step busy


@pytest.mark.parametrize("preset", [PRESET, f"{PRESET}_sizes"])
def test_the_presets_bind_in_the_share_they_state(azure_trace_dir, preset):
    """At ρ = 0.99 the server is busy the whole slot in 96 % of the replayed slots (the hour's second half;
    `cluster-envs reproduce traces` reports it)."""
    env = gym.make(ENV, preset=preset, trace_dir=azure_trace_dir).unwrapped
    env.reset(seed=0)
    assert binding_share(env.loads) == pytest.approx(0.961, abs=0.005)
