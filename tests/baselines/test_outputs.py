"""Predictable outputs: a folder per command under results/, no command overwrites another's report, one model
cache for Python and the command line."""

from __future__ import annotations

import inspect

import pytest

from baselines.eval import outputs
from baselines.eval.compare import compare
from baselines.eval.report import write_report

SMALL = {"horizon": 60}


def test_a_command_reruns_in_its_own_folder_but_not_in_anothers(tmp_path):
    out = tmp_path / "sla"
    assert outputs.claim(out, "reproduce sla") == out
    (out / "report.md").write_text("the reproduction")
    outputs.claim(out, "reproduce sla")  # a rerun of the same command replaces its own outputs
    with pytest.raises(FileExistsError, match="already holds the outputs of `cluster-envs reproduce sla`"):
        outputs.check(out, "compare")
    outputs.claim(out, "compare", force=True)
    assert outputs.owner_of(out) == "compare"
    with pytest.raises(NotADirectoryError, match="existing file"):
        outputs.check(out / "report.md", "compare", force=True)


def test_write_report_refuses_a_reproductions_folder(tmp_path):
    """The docs once wrote a comparison into `cluster-envs reproduce sla`'s folder, next to its figures."""
    out = outputs.claim(tmp_path / "sla", "reproduce sla")
    (out / "report.md").write_text("the reproduction")
    comparison = compare("ClusterSLA-v1", "owm", seeds=[0], env_kwargs=SMALL, progress=False)
    with pytest.raises(FileExistsError, match="reproduce sla"):
        write_report(comparison, out)
    assert (out / "report.md").read_text() == "the reproduction"
    assert write_report(comparison, tmp_path / "cmp") == tmp_path / "cmp" / "report.md"
    write_report(comparison, tmp_path / "cmp")  # its own folder: rewritten


def test_python_and_command_line_share_the_model_cache(tmp_path, monkeypatch, capsys):
    """compare() from Python trains PPO into results/models; the command line then loads it instead of training."""
    pytest.importorskip("stable_baselines3")
    import json

    from baselines.cli import main

    monkeypatch.chdir(tmp_path)
    comparison = compare("ClusterSLA-v1", "owm", rl=["ppo"], seeds=[0], env_kwargs=SMALL, rl_steps=256, rl_seeds=1,
                         progress=False)  # fmt: skip
    assert not comparison.rl_runs["ppo"]["runs"][0]["reused"]
    assert (tmp_path / "results" / "models" / "ppo-ClusterSLA-v1" / "seed0" / "model.zip").is_file()
    argv = ["compare", "ClusterSLA-v1", "--agents", "owm", "--rl", "ppo", "--rl-steps", "256", "--rl-seeds", "1",
            "--seeds", "0", "--set", "horizon=60", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads((tmp_path / "results" / "compare" / "ClusterSLA-v1" / "results.json").read_text())
    assert [run["reused"] for run in result["rl_runs"]["ppo"]["runs"]] == [True]


def test_default_folders_are_one_per_command():
    from baselines.reproduce import sla

    assert outputs.default_out("compare", "ClusterSLA-v1").as_posix() == "results/compare/ClusterSLA-v1"
    assert inspect.signature(sla.run).parameters["out_dir"].default == "results/reproduce/sla"
