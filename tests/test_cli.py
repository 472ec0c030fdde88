"""The cluster-envs command: list, run, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from baselines.cli import main
from baselines.eval.protocol import parse_seeds


def test_list_names_every_env_and_its_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ClusterSLA-v1: mwu, mwu_extended, static, proportional, owm, pg, rest_pg" in out


def test_run_prints_json_metrics(capsys):
    code = main(["run", "ClusterSLA-v1", "--agent", "mwu_extended", "--seeds", "0,2", "--set", "preset=example_1_1",
                 "--set", "horizon=300", "--agent-set", "eps=0.05", "--json"])  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert [e["seed"] for e in result["episodes"]] == [0, 2]
    assert result["episodes"][0]["metrics"]["opt_total_work"] == pytest.approx(300)


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "ClusterNope-v0", "--agent", "mwu"], "env_id"),
    (["run", "ClusterSLA-v1", "--agent", "nope"], "not an agent"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "a-b"], "--seeds"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--set", "nokey"], "--set"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--set", "colour=3"], "colour"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--agent-set", "eps=2"], "eps"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "0", "--agent-set", "epz=0.1"],
     "unknown hyperparameter(s) ['epz'] for agent 'mwu'; allowed: ['eps', 'eta', 'initial', 'lambda_override']"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "0,0"], "--seeds '0,0': seeds must be distinct"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--set", "render_mode=video"], "render_mode='video' is not supported"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "1000000000"], "where training starts"),
    (["compare", "ClusterSLA-v1", "--agents", "mwu", "--seeds", "0-1000000000"], "--seeds"),
    # configurations that crashed at reset or step before their keywords had domains (issue 19)
    (["run", "ClusterApprox-v1", "--agent", "opm", "--seeds", "0", "--set", "price_factor=1e300"], "price_factor"),
    # an integer beyond every float was an OverflowError naming nothing, exit 1 (issue 28)
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "0", "--set", "horizon=1" + "0" * 400],
     "is out of range; allowed: [1, 1000000000]"),
    (["run", "ClusterSLA-v1", "--agent", "mwu", "--seeds", "0", "--set", "preset=proportionality_3_4", "--set",
      'scenario_kwargs={"eta": 1e-300}'], "eta"),
])  # fmt: skip
def test_bad_input_is_a_one_line_error(capsys, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default output folder (results/...) of a command that gets that far
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
        make_agent("ClusterApprox-v1", "opm", alpah=1.0)
    assert make_agent("ClusterApprox-v1", "opm", delta=0.2).delta == 0.2


def test_version_and_help_show_choices_and_defaults(capsys):
    import cluster_envs

    assert main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"cluster-envs {cluster_envs.__version__}"
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 0-4)" in text and "ClusterSLA-v1: mwu, mwu_extended, static" in text  # the agents per env
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "{ppo,a2c,sac,td3,ppo_lstm,ppo_mask}" in text and "(default: ppo)" in text
    assert main(["benchmark", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "5 evaluation seeds" in text and "(default: results/models)" in text


def test_a_usage_error_is_one_line(capsys):
    assert main(["run", "ClusterSLA-v1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "cluster-envs: error: the following arguments are required: --agent (see `cluster-envs run --help`)"
    ]


@pytest.mark.parametrize("agents", ["", " , "])
def test_an_empty_agent_list_is_an_error(capsys, agents):
    assert main(["compare", "ClusterSLA-v1", "--agents", agents]) == 2
    assert f"agents={agents!r} names no agent" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["compare", "ClusterSLA-v1", "--agents", "owm", "--seeds", "0"],
    ["benchmark", "--quick"],
    ["reproduce", "sla"],
    ["train", "ClusterSLA-v1", "--steps", "64"],
    ["bench", "--ids", "ClusterSLA-v1"],
])  # fmt: skip
def test_out_naming_a_file_or_another_commands_folder_is_refused_before_running(tmp_path, capsys, command):
    (tmp_path / "file").write_text("")
    assert main([*command, "--out", str(tmp_path / "file")]) == 2
    assert "is an existing file" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.md").write_text("somebody's report")
    assert main([*command, "--out", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds files that no cluster-envs command wrote" in err[0] and "--force" in err[0]
    assert (other / "report.md").read_text() == "somebody's report"


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    import baselines.eval.harness

    def broken(*args, **kwargs):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(baselines.eval.harness, "evaluate", broken)
    assert main(["run", "ClusterSLA-v1", "--agent", "mwu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["cluster-envs: error: ZeroDivisionError: float division by zero (an unexpected error: rerun with "
                   "--debug for the traceback and report it)"]  # fmt: skip
    assert main(["--debug", "run", "ClusterSLA-v1", "--agent", "mwu"]) == 1
    err = capsys.readouterr().err
    assert (
        "Traceback" in err
        and err.strip().splitlines()[-1] == "cluster-envs: error: ZeroDivisionError: float division by zero"
    )


def test_a_missing_dependency_is_a_one_line_error(monkeypatch, capsys):
    import gymnasium

    import baselines.eval.harness

    def missing(*args, **kwargs):
        raise gymnasium.error.DependencyNotInstalled("pygame is not installed")

    monkeypatch.setattr(baselines.eval.harness, "evaluate", missing)
    assert main(["run", "ClusterSLA-v1", "--agent", "mwu"]) == 2
    assert capsys.readouterr().err.strip() == "cluster-envs: error: pygame is not installed"


def test_the_missing_extra_hint_is_the_command_that_works_from_a_clone(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # import stable_baselines3 -> ImportError
    assert main(["train", "ClusterSLA-v1", "--steps", "64", "--out", str(tmp_path / "unused")]) == 2
    err = capsys.readouterr().err
    assert """needs the 'rl' extra: pip install torch==2.13.0 && pip install -e ".[rl]" """ in err


def test_the_benchmark_command_loads_no_tuning_machinery():
    """`cluster-envs benchmark` (and what it runs: the store, training, the SB3 adapter) imports neither rl-zoo3 nor
    Optuna nor baselines/tuning/, so the 'all' extra without 'tuning' runs it."""
    code = (
        "import sys\n"
        "from baselines.cli import build_parser\n"
        "build_parser(['benchmark', '--quick'])\n"
        "import baselines.benchmark, baselines.rl.agent, baselines.rl.store, baselines.rl.train\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rl_zoo3', 'optuna') "
        "or m.startswith('baselines.tuning')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
