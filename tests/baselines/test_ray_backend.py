"""The Ray backend on a local two-CPU Ray instance gives the same per-seed episodes as the local backend,
for reference agents and for an RL agent shipped to the workers as bytes."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from baselines.eval.backends import run_tasks  # noqa: E402
from baselines.eval.harness import Task  # noqa: E402

ENV = "ClusterSLA-v1"
SMALL = {"horizon": 240}


pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _tasks(policy=None):
    agents = ["mwu_extended", "owm", "pg"] + ([policy] if policy is not None else [])
    return [Task(ENV, agent, seed, env_kwargs=SMALL, record=("regret",)) for agent in agents for seed in (0, 1, 2)]


def _assert_same(a_episodes, b_episodes):
    assert [(e.agent, e.seed) for e in a_episodes] == [(e.agent, e.seed) for e in b_episodes]
    for a, b in zip(a_episodes, b_episodes, strict=True):
        assert a.metrics == b.metrics
        np.testing.assert_array_equal(a.trace["regret"], b.trace["regret"])


def test_ray_and_local_backends_agree(local_ray, tmp_path):
    tasks = _tasks(_tiny_policy(tmp_path) if _has_sb3() else None)
    _assert_same(run_tasks(tasks, backend="ray", workers=2), run_tasks(tasks))


def _has_sb3() -> bool:
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return False
    return True


def _tiny_policy(tmp_path):
    from baselines.rl.agent import SavedPolicy
    from baselines.rl.train import train

    train(ENV, "ppo", steps=512, env_overrides=SMALL, out_dir=tmp_path / "ppo", progress=False)
    return SavedPolicy.from_dir(tmp_path / "ppo")


def test_a_training_task_on_ray_trains_the_same_policy_as_locally(local_ray, tmp_path):
    """The benchmark's training runs through the backends too: a TrainTask on a Ray worker returns the run's files,
    with the same network weights as the same task run in this process (seeded; one torch thread)."""
    pytest.importorskip("stable_baselines3")
    from baselines.rl.agent import SavedPolicy
    from baselines.rl.runs import write_run_files
    from baselines.rl.train import TrainTask

    task = TrainTask(ENV, "ppo", 256, env_overrides=tuple(SMALL.items()))
    (remote,) = run_tasks([task], backend="ray", workers=2)
    (local,) = run_tasks([task])
    assert {"model.zip", "meta.json"} <= set(remote) and len(remote) == len(local)  # event files name host and time
    weights = [
        SavedPolicy.from_dir(write_run_files(files, tmp_path / name)).build().model.policy.state_dict()
        for files, name in ((remote, "remote"), (local, "local"))
    ]
    for key, value in weights[0].items():
        np.testing.assert_array_equal(value.numpy(), weights[1][key].numpy(), err_msg=key)
