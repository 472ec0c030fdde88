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
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--seeds", "0", "--agent-set", "epz=0.1"],
     "unknown hyperparameter(s) ['epz'] for agent 'mwu'; allowed: ['eps', 'eta', 'initial', 'lambda_override']"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--seeds", "0,0"], "--seeds '0,0': seeds must be distinct"),
    (["run", "ClusterSLA-v0", "--agent", "mwu", "--seeds", "1000000000"], "where training starts"),
    (["compare", "ClusterSLA-v0", "--agents", "mwu", "--seeds", "0-1000000000"], "--seeds"),
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


@pytest.mark.parametrize(("text", "message"), [
    ("0-999999999", "at most"),  # refused from the count, before 10^9 seeds are expanded into memory
    ("0-1000000000", "where training starts"),
    ("5-3", "empty"),
    ("0-2,1", "repeated: [1]"),
    ("", "malformed"),
])  # fmt: skip
def test_parse_seeds_refuses_before_expanding(text, message):
    with pytest.raises(ValueError, match="--seeds") as err:
        parse_seeds(text)
    assert message in str(err.value)


def test_make_agent_lists_the_hyperparameters_of_the_whole_constructor_chain():
    from agents import make_agent

    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['beta_scle'\] for agent 'sabr'") as err:
        make_agent("ClusterBilinear-v0", "sabr", beta_scle=0.3)
    assert "'beta_scale'" in str(err.value)
    with pytest.raises(ValueError, match="allowed: .*'alpha'.*'delta'"):  # OPM forwards **kwargs to its base
        make_agent("ClusterApprox-v0", "opm", alpah=1.0)
    assert make_agent("ClusterApprox-v0", "opm", delta=0.2).delta == 0.2
