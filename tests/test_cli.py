"""The cluster-envs command: list, run, and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from baselines.cli import main, parse_seeds


def test_list_names_every_env_and_its_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ClusterSLA-v0: mwu, mwu_extended, static, proportional, owm, pg, rest_pg" in out


def test_run_prints_json_metrics(capsys):
    code = main(["run", "ClusterSLA-v0", "--agent", "mwu_extended", "--seeds", "0,2", "--set", "preset=example_1_1",
                 "--set", "horizon=300", "--agent-set", "eps=0.05", "--json"])  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert [e["seed"] for e in result["episodes"]] == [0, 2]
    assert result["episodes"][0]["metrics"]["opt_total_work"] == pytest.approx(300)


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "ClusterNope-v0", "--agent", "mwu"], "env_id"),
    (["run", "ClusterSLA-v0", "--agent", "nope"], "not an agent"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--seeds", "a-b"], "--seeds"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--set", "nokey"], "--set"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--set", "colour=3"], "colour"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--agent-set", "eps=2"], "eps"),
])  # fmt: skip
def test_bad_input_is_a_one_line_error(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("cluster-envs: error:") and message in err[-1]
    assert not any("Traceback" in line for line in err)


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("1-2,9") == [1, 2, 9]
