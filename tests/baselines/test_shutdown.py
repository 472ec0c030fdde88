"""Fault injection on the processes of a command (issue 28): no worker outlives its command, however the command
ends; Ctrl-C is one line; a failure of the Ray backend is one error line naming the cause."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from baselines.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _workers_started(folder: Path, n: int) -> list[int]:
    assert _wait(lambda: len(list(folder.glob("*.pid"))) >= n, 120), "the workers did not start"
    return [int(p.stem) for p in folder.glob("*.pid")]


def test_workers_die_with_a_killed_parent(tmp_path):
    code = f"""
        from baselines.eval.backends import run_tasks
        from tests.baselines.sleeping_task import SleepingTask
        run_tasks([SleepingTask({str(tmp_path)!r})] * 4, workers=2)
    """
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=ENV, start_new_session=True)
    try:
        workers = _workers_started(tmp_path, 2)
        parent.kill()  # SIGKILL: no cleanup code of the parent runs
        parent.wait(30)
        assert _wait(lambda: not any(_alive(pid) for pid in workers), 30), "a worker outlived its parent"
        assert _wait(lambda: not _session(parent.pid), 30), f"left behind: {_session(parent.pid)}"
    finally:
        for pid in _session(parent.pid):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_is_one_line_and_leaves_no_process(tmp_path):
    code = f"""
        import sys
        from baselines import cli
        from baselines.eval import backends
        from tests.baselines.sleeping_task import SleepingTask
        def command(args):
            backends.run_tasks([SleepingTask({str(tmp_path)!r})] * 4, workers=2)
        cli._cmd_list = command  # a command of the CLI whose tasks sleep
        sys.exit(cli.main(["list"]))
    """
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=ENV, start_new_session=True,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        workers = _workers_started(tmp_path, 2)
        os.killpg(parent.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: every process of the group
        _, err = parent.communicate(timeout=60)
        assert parent.returncode == 130 and err == "cluster-envs: interrupted\n", err
        assert _wait(lambda: not any(_alive(pid) for pid in workers), 30), "a worker outlived Ctrl-C"
        assert _wait(lambda: not _session(parent.pid), 30), f"left behind: {_session(parent.pid)}"
    finally:
        for pid in _session(parent.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        ("connect", "ConnectionError: could not reach the cluster"),
        ("raylet", "RaySystemError: System error: the raylet died"),
        ("exit", "SystemExit: Ray exited with status 1"),
    ],
)
def test_a_failure_of_the_ray_backend_is_one_error_line(failure, cause, monkeypatch, capsys, tmp_path):
    """Ray's own failures (it cannot connect, a raylet or node dies, ray.init gives up and exits) end the command
    in the CLI's one line, naming the cause."""
    ray = pytest.importorskip("ray")
    from types import SimpleNamespace

    def init(**kwargs):
        if failure == "connect":
            raise ConnectionError("could not reach the cluster")
        if failure == "exit":
            raise SystemExit(1)

    def get(ref):
        raise ray.exceptions.RaySystemError("the raylet died")

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "remote", lambda **kwargs: lambda function: SimpleNamespace(remote=lambda task: task))
    monkeypatch.setattr(ray, "get", get)
    argv = ["compare", "ClusterSLA-v1", "--agents", "owm", "--seeds", "0", "--set", "horizon=60", "--quiet",
            "--backend", "ray", "--address", "127.0.0.1:6379", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"cluster-envs: error: the Ray backend (at 127.0.0.1:6379) failed: {cause}"
