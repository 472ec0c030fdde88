"""The harness backends give identical episodes (metrics, traces and action digests) for every id (its first
reference agent): in-process, local worker
processes (spawn) and, where Ray is installed, Ray tasks. One task list covers the whole registry, so the
worker start-up is paid once."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents import agent_names
from baselines.eval.backends import run_tasks
from baselines.eval.harness import Task

from .robust_common import IDS, config_fields

HORIZON = 12


pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker


def _tasks() -> list[Task]:
    tasks = []
    for env_id in IDS:
        short = {"horizon": HORIZON} if any(f.name == "horizon" for f in config_fields(gym.make(env_id))) else {}
        names = agent_names(env_id)  # one cheap agent per id: the backends, not the agents, are under test here
        name = "random" if "random" in names else names[0]
        tasks += [Task(env_id, name, seed, env_kwargs=short, record=None, digest=True) for seed in (0, 1)]
    return tasks


def _assert_same(first, second, label: str) -> None:
    assert [(e.env_id, e.agent, e.seed) for e in first] == [(e.env_id, e.agent, e.seed) for e in second]
    for a, b in zip(first, second, strict=True):
        where = f"{label}: {a.env_id}/{a.agent} seed {a.seed}"
        assert a.metrics == b.metrics, where
        assert a.actions.to_json() == b.actions.to_json(), where  # the action digest crosses processes
        assert sorted(a.trace) == sorted(b.trace), where
        for key in a.trace:
            np.testing.assert_array_equal(a.trace[key], b.trace[key], err_msg=f"{where}: trace {key!r}")


@pytest.fixture(scope="module")
def in_process():
    return run_tasks(_tasks())


def test_local_worker_processes_match_in_process_runs(in_process):
    _assert_same(run_tasks(_tasks(), workers=2), in_process, "local workers=2")


def test_ray_tasks_match_in_process_runs(in_process):
    pytest.importorskip("ray")
    _assert_same(run_tasks(_tasks(), backend="ray", workers=2), in_process, "ray")
