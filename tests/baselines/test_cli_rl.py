"""The train, compare and benchmark subcommands: a report from the command line, and one-line errors."""

from __future__ import annotations

import json

import pytest

from baselines.cli import main
from baselines.eval.protocol import SETTINGS


def test_compare_writes_a_report(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", "ClusterSLA-v1", "--agents", "owm", "--seeds", "0-1", "--set", "horizon=120",
                 "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert f"report written to {out / 'report.md'}" in printed
    assert "0-anchor (naive): `static`; 1-anchor (clairvoyant): `pg`" in printed and "| owm |" in printed
    assert "### Sanity notes" in printed  # the headline is printed, as the report holds it
    result = json.loads((out / "results.json").read_text())
    assert result["seeds"] == [0, 1] and result["env_kwargs"] == {"horizon": 120}
    assert {e["agent"] for e in result["episodes"]} == {"mwu_extended", "static", "pg", "owm"}


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "ClusterNope-v0"], "env_id"),
    (["compare", "ClusterSLA-v1", "--agents", "owm,nope"], "not an agent"),
    (["compare", "ClusterSLA-v1", "--seeds", "0-x"], "--seeds"),
    (["compare", "ClusterSLA-v1", "--seeds", "3-1"], "--seeds"),
    (["compare", "ClusterSLA-v1", "--set", "colour=3"], "colour"),
    (["compare", "ClusterSLA-v1", "--set", "horizon"], "--set"),
    (["compare", "ClusterSLA-v1", "--workers", "0"], "--workers"),
    (["compare", "ClusterSLA-v1", "--rl", "dqn"], "algo"),
    (["train", "ClusterNope-v0"], "env_id"),
    (["train", "ClusterSLA-v1", "--algo", "dqn"], "algo"),
    (["train", "ClusterSLA-v1", "--set", "colour=3"], "colour"),
    (["train", "ClusterSLA-v1", "--steps", "0"], "steps"),
    (["train", "ClusterSLA-v1", "--load", "--out", "/nonexistent/run"], "no trained run"),
    (["train", "ClusterSLA-v1", "--hyperparams", "/nonexistent.yml"], "no hyperparameter file"),
])  # fmt: skip
def test_bad_input_is_a_one_line_error(capsys, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default output folder (results/...) of a command that gets that far
    if argv[0] == "train" or "--rl" in argv:
        pytest.importorskip("stable_baselines3")
        pytest.importorskip("yaml")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cluster-envs: error:") and message in err[0], err


def test_a_misspelt_hyperparameter_is_a_one_line_error(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "ppo.yml"
    env_kwargs = dict(SETTINGS["ClusterSLA-v1"].rl_env_kwargs)
    path.write_text(yaml.safe_dump({"ClusterSLA-v1": {"env_kwargs": env_kwargs, "learning_rat": 0.1}}))
    assert main(["train", "ClusterSLA-v1", "--hyperparams", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "learning_rat" in err[0]
