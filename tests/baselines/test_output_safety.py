"""Fault injection on output folders (issue 28): two runs cannot share a folder, a killed run leaves whole files and
a folder that says it is incomplete, and an output folder that cannot be written is refused before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from baselines.cli import main
from baselines.eval import outputs

ROOT = Path(__file__).resolve().parents[2]
COMPARE = ["compare", "ClusterSLA-v1", "--agents", "owm", "--seeds", "0", "--set", "horizon=60", "--quiet"]


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip


def test_a_second_run_into_a_held_folder_is_refused_with_the_holders_pid_and_start(tmp_path):
    out = tmp_path / "cmp"
    with outputs.exclusive(out, "compare"):
        started = outputs.status(out)["started"]
        done = subprocess.run([sys.executable, "-m", "baselines.cli", *COMPARE, "--out", str(out)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)  # fmt: skip
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith("cluster-envs: error: output folder") and "in use by another run" in line
        assert f"pid {os.getpid()}, started {started}" in line
        with pytest.raises(outputs.OutputInUseError, match=f"pid {os.getpid()}"):  # in the same process too
            with outputs.exclusive(out, "compare"):
                pass
        assert not (out / "report.md").exists()  # the refused run wrote nothing
    with outputs.exclusive(out, "compare"):  # free again once the holder is done
        pass
    assert outputs.status(out)["complete"] and not (out / outputs.INCOMPLETE_FILE).exists()


def test_a_run_killed_while_writing_leaves_a_folder_marked_incomplete_and_no_lock(tmp_path):
    out = tmp_path / "cmp"
    outputs.claim(out, "compare")
    outputs.write_text(out / "report.md", "the previous run's report\n")
    killed = _python(f"""
        import os, signal
        from pathlib import Path
        from baselines.eval import outputs
        out = Path({str(out)!r})
        with outputs.exclusive(out, "compare"):
            outputs.write_text(out / "results.json", "{{}}")
            with outputs.atomic(out / "report.md") as partial:
                partial.write_text("half a rep")
                os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert killed.returncode == -9
    assert (out / "report.md").read_text() == "the previous run's report\n"  # never half a file
    assert (out / outputs.INCOMPLETE_FILE).is_file() and outputs.status(out)["complete"] is False
    assert "was stopped before it finished" in (out / outputs.INCOMPLETE_FILE).read_text()
    with outputs.exclusive(out, "compare"):  # the kill released the lock
        pass
    assert outputs.status(out)["complete"] is True and not (out / outputs.INCOMPLETE_FILE).exists()


def test_a_run_that_fails_stays_marked_incomplete(tmp_path):
    out = tmp_path / "cmp"
    with pytest.raises(RuntimeError), outputs.exclusive(out, "compare"):
        outputs.write_text(out / "results.csv", "agent\n")
        raise RuntimeError("a failure half way")
    assert (out / outputs.INCOMPLETE_FILE).is_file() and json.loads((out / outputs.OWNER_FILE).read_text()) == {
        **outputs.status(out), "complete": False}  # fmt: skip
    assert sorted(p.name for p in out.iterdir() if ".partial-" in p.name) == []


def test_a_run_that_fails_before_writing_leaves_no_folder(tmp_path):
    out = tmp_path / "results" / "compare" / "ClusterNope-v0"
    with pytest.raises(ValueError), outputs.exclusive(out, "compare"):
        raise ValueError("env_id='ClusterNope-v0' has no agents")  # found after the folder was claimed
    assert list(tmp_path.iterdir()) == []


def test_a_bad_env_id_leaves_nothing_in_the_working_folder(tmp_path, monkeypatch):
    from baselines.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["compare", "ClusterNope-v0", "--agents", "mwu"]) == 2
    assert main(["train", "ClusterNope-v0"]) == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", ["/proc/cluster-envs-test/out", "/dev/null/out"])
def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(out, monkeypatch, capsys):
    import baselines.eval.compare

    def no_work(*args, **kwargs):
        raise AssertionError("compare ran although --out cannot be written")

    monkeypatch.setattr(baselines.eval.compare, "compare", no_work)
    assert main([*COMPARE, "--out", out]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("cluster-envs: error: ") and out.split("/out")[0] in line


def test_a_partial_write_leaves_the_old_file(tmp_path):
    path = outputs.write_text(tmp_path / "report.md", "old\n")
    with pytest.raises(OSError), outputs.atomic(path) as partial:
        partial.write_text("new, but")
        raise OSError("disk full")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["report.md"]
