"""Third-party clients run unmodified user code (docs/clients/*.py, shown on docs/clients.md) on every RL-ready id,
by its ``cluster_envs:`` id, in a fresh interpreter whose workers import nothing of ours.

stable-baselines3 and the CleanRL-style script run in this venv. RLlib (``ray[rllib]`` pins another gymnasium),
TorchRL and Tianshou live in venvs of their own: name their interpreter in ``CLUSTER_ENVS_RLLIB_PYTHON`` /
``CLUSTER_ENVS_TORCHRL_PYTHON`` / ``CLUSTER_ENVS_TIANSHOU_PYTHON`` (with ``cluster-envs`` and the client installed
as docs/clients.md says), else those tests skip, saying so. Every test here trains or collects a few thousand
steps per id: the slow set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_envs import rl_ids
from cluster_envs.registration import ENTITY_RL_IDS

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "docs" / "clients"
IDS = [env_id for env_id in rl_ids() if env_id not in ENTITY_RL_IDS]  # the benchmark's RL interfaces
TIMEOUT = 900


def _run(python: str, script: str, env_id: str, steps: int, tmp_path: Path) -> None:
    """The script as a user runs it: its own process, from a folder outside the repository, no PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if python == sys.executable:  # this venv: cluster_envs as this process imports it
        env["PYTHONPATH"] = str(Path(__import__("cluster_envs").__file__).parents[1])
    done = subprocess.run([python, str(SCRIPTS / script), f"cluster_envs:{env_id}", str(steps)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, f"{script} on {env_id} failed:\n{done.stderr[-4000:]}"


def _client_python(variable: str) -> str:
    python = os.environ.get(variable)
    if not python:
        pytest.skip(f"{variable} names no interpreter with the client installed (docs/clients.md)")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_stable_baselines3_ppo_with_subprocess_copies(env_id, tmp_path):
    pytest.importorskip("stable_baselines3")
    _run(sys.executable, "sb3_ppo.py", env_id, 2048, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_a_cleanrl_style_single_file_ppo(env_id, tmp_path):
    pytest.importorskip("torch")
    _run(sys.executable, "cleanrl_ppo_continuous.py", env_id, 2048, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_rllib_ppo_with_two_env_runners(env_id, tmp_path):
    _run(_client_python("CLUSTER_ENVS_RLLIB_PYTHON"), "rllib_ppo.py", env_id, 2000, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_torchrl_gymenv_by_id(env_id, tmp_path):
    _run(_client_python("CLUSTER_ENVS_TORCHRL_PYTHON"), "torchrl_gymenv.py", env_id, 2000, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_tianshou_ppo_through_its_high_level_api(env_id, tmp_path):
    _run(_client_python("CLUSTER_ENVS_TIANSHOU_PYTHON"), "tianshou_ppo.py", env_id, 2048, tmp_path)


def test_a_fresh_process_finds_every_id_by_its_prefix_and_no_plain_id():
    """What a worker sees: gymnasium imports ``cluster_envs`` for a ``cluster_envs:`` id; a plain id is unknown
    until something imports the package (gymnasium >= 1.0 has no plugin registration), hence the prefix."""
    code = (
        "import sys, warnings, gymnasium as gym\n"
        "warnings.simplefilter('ignore')\n"
        "try:\n    gym.make(sys.argv[1])\nexcept gym.error.NameNotFound:\n    pass\n"
        "else:\n    sys.exit('plain id found')\n"
        "for env_id in sys.argv[1:]:\n    env = gym.make('cluster_envs:' + env_id)\n    env.reset(seed=0)\n"
        "    env.step(env.action_space.sample())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__import__("cluster_envs").__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code, *rl_ids()], capture_output=True, text=True, env=env,
                          cwd=ROOT.parent, timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
