"""Anyone's agent under the protocol, from outside: a policy in a file scored through the CLI's ``--agent``, a
policy trained with plain PyTorch and exported to ONNX scored, validated and put on the leaderboard, tampered
records refused, and every kind of bad input one clear error that writes no record."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from baselines.cli import main
from baselines.eval.record import check_declaration, read_record, write_record
from baselines.eval.submission import AgentError, agent_spec, score
from baselines.eval.validate import METRIC_RTOL, metrics_disagree, platform_difference, validate

pytestmark = pytest.mark.xdist_group(__name__)  # its module fixture is built once, on one worker

ENV = "ClusterSLA-v1"  # the cheapest protocol env to score (three anchors, 6000 steps an episode)
RL_ENV = "ClusterSLARL-v1"  # its RL-ready id: a flat Box observation of 9 values, a Box(0, 1, (3,)) action
DECLARATION = {
    "privileged": False,
    "training_env_steps": 0,
    "training_cpu_hours": 0,
    "training_gpu_hours": 0,
    "source": "a test",
    "tuned_on_validation_seeds": False,
}
POLICY = """
import numpy as np


def policy(observation):
    return np.full(3, 1 / 3, dtype=np.float32)
"""


def write_policy(folder: Path, body: str = POLICY, name: str = "outside.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A policy function in a file outside the package, scored through `cluster-envs evaluate --agent`."""
    folder = tmp_path_factory.mktemp("outside")
    path = write_policy(folder)
    declaration = folder / "declaration.json"
    declaration.write_text(json.dumps(DECLARATION))
    out = folder / "out"
    argv = ["evaluate", RL_ENV, "--agent", f"{path}:policy", "--declaration", str(declaration), "--reference",
            "anchors", "--out", str(out), "--quiet"]  # fmt: skip
    return path, out, main(argv)


def test_a_policy_function_in_a_file_is_scored_through_agent(scored, capsys):
    path, out, code = scored
    assert code == 0
    record = read_record(out / "record.json")
    (result,) = record["results"]
    assert record["entry"]["kind"] == "module" and record["entry"]["name"] == "policy"
    assert result["env_id"] == ENV and result["env_kwargs"]["action_mode"] == "normalize"  # RL-ready interface
    assert result["seeds"] == [0, 1, 2, 3, 4] and len(result["episodes"]) == 5
    assert (out / ENV / "report.md").is_file()
    for episode in result["episodes"]:
        assert episode["metrics"]["steps"] == 6000 and len(episode["actions"]["sha256"]) == 64
    # the same agent through the harness's compare row: its normalized score lies strictly between the anchors
    assert 0 < result["normalized"]["mean"] < 1, result["normalized"]


def test_a_policy_function_may_take_the_action_space_whose_size_the_instance_sets(tmp_path):
    """A function of (observation, action_space) is given the env's space: on held-out instances of ClusterGang-v0
    the action's size changes with the instance."""
    import gymnasium as gym

    path = write_policy(tmp_path, "def policy(observation, action_space):\n    return action_space.high * 0.5\n")
    spec = agent_spec(f"{path}:policy", "ClusterGang-v0", rl_interface=True)
    sizes = set()
    for instance in (1000, 1003):
        env = gym.make("ClusterGang-v0", instance_seed=instance, **dict(spec.env_kwargs))
        agent = spec.build()
        agent.check_spaces(env.observation_space, env.action_space)
        observation, _ = env.reset(seed=0)
        agent.reset(env.unwrapped.problem, seed=0)
        action = agent.act(observation)
        assert env.action_space.contains(action) and np.allclose(action, 0.5)
        sizes.add(action.size)
    assert len(sizes) == 2


def test_a_record_validates_and_a_tampered_one_names_the_episode(scored, tmp_path):
    path, out, _ = scored
    lines = validate(out / "record.json", f"{path}:policy", sample=2)
    assert len(lines) == 2 and all("agree" in str(line) for line in lines)
    record = json.loads((out / "record.json").read_text())
    metric = dict(record)
    metric["results"][0]["episodes"][4]["metrics"]["regret"] += 1.0
    write_record(metric, tmp_path / "metric.json")
    with pytest.raises(ValueError, match=r"seed 4: metric 'regret' recorded"):
        validate(tmp_path / "metric.json", f"{path}:policy")
    record = json.loads((out / "record.json").read_text())
    record["results"][0]["episodes"][1]["actions"]["sha256"] = "0" * 64
    write_record(record, tmp_path / "digest.json")
    with pytest.raises(ValueError, match=r"seed 1: the actions differ from step \d+ on .*on the platform the record"):
        validate(tmp_path / "digest.json", f"{path}:policy", sample=5)


def test_another_platform_s_float_noise_passes_and_a_real_difference_does_not(scored, tmp_path):
    """Made elsewhere (another numpy here), a differing action digest is float noise when every metric agrees to
    the tolerance, and the line says so; a metric beyond it still fails, naming the platforms."""
    path, out, _ = scored
    record = json.loads((out / "record.json").read_text())
    record["platform"]["numpy"] = "0.0"
    episode = record["results"][0]["episodes"][1]
    episode["actions"]["sha256"] = "0" * 64
    episode["metrics"]["total_work"] *= 1 + METRIC_RTOL / 10
    write_record(record, tmp_path / "noise.json")
    (line,) = validate(tmp_path / "noise.json", f"{path}:policy", indices=[1])
    assert not line.bit_exact and line.first_difference is not None
    assert re.search(
        r"metrics agree \(the actions differ from step \d+ on; recorded on another platform: numpy 0\.0 then", str(line)
    )
    episode["metrics"]["total_work"] *= 1 + 10 * METRIC_RTOL
    write_record(record, tmp_path / "moved.json")
    with pytest.raises(ValueError, match=r"metric 'total_work' recorded .*another platform: numpy 0\.0 then"):
        validate(tmp_path / "moved.json", f"{path}:policy", indices=[1])
    del record["platform"]
    write_record(record, tmp_path / "unknown.json")
    with pytest.raises(ValueError, match=r"the record does not name the platform it was made on"):
        validate(tmp_path / "unknown.json", f"{path}:policy", indices=[1])


def test_the_validate_command_counts_the_bit_exact_replays(scored, tmp_path, capsys):
    """Of two replayed episodes, one with a recorded digest of another platform: one of two bit-exact."""
    path, out, _ = scored
    record = json.loads((out / "record.json").read_text())
    record["platform"]["numpy"] = "0.0"
    record["results"][0]["episodes"][0]["actions"]["sha256"] = "0" * 64
    write_record(record, tmp_path / "noise.json")
    main(["validate", str(tmp_path / "noise.json"), "--agent", f"{path}:policy", "--sample", "2"])
    assert "2 episodes replayed, every metric agrees; 1 of them bit-exact" in capsys.readouterr().out


def test_validate_refuses_another_package_or_env_version(scored, tmp_path):
    path, out, _ = scored
    record = json.loads((out / "record.json").read_text())
    record["package"]["version"] = "0.0.1"
    write_record(record, tmp_path / "old.json")
    with pytest.raises(ValueError, match=r"made with cluster-envs 0\.0\.1; this is cluster-envs"):
        validate(tmp_path / "old.json", f"{path}:policy")
    record = json.loads((out / "record.json").read_text())
    record["results"][0]["env_id"], record["results"][0]["env_version"] = "ClusterSLA-v7", "v7"
    write_record(record, tmp_path / "env.json")
    with pytest.raises(ValueError, match=r"made on ClusterSLA-v7 \(v7\); this package has ClusterSLA-v1 \(v1\)"):
        validate(tmp_path / "env.json", f"{path}:policy")


def test_a_policy_trained_with_plain_pytorch_and_exported_to_onnx_reaches_the_leaderboard(tmp_path):
    """Trained outside the package by the submit page's script (plain PyTorch, run in its own process, which never
    imports baselines), exported with torch.onnx, scored with `score` through the `{env}` template, validated by
    replay, and listed on the leaderboard page next to a shipped entry."""
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    script = Path(__file__).resolve().parents[2] / "docs" / "leaderboard" / "train_onnx.py"
    models = tmp_path / "models"
    argv = ["train_onnx.py", "--out", str(models), "--ids", RL_ENV, "--steps", "300", "--epochs", "50"]
    run = (
        f"import runpy, sys\nsys.argv = {argv!r}\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'baselines'], 'the script imported baselines'\n"
    )
    done = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{RL_ENV}: 300 env steps" in done.stdout and (models / f"{RL_ENV}.onnx").is_file()
    path = str(models / "{env}.onnx")  # the base id's file is missing: the RL-ready id's is used

    declaration = {**DECLARATION, "training_env_steps": 300, "source": "a test: plain PyTorch"}
    entries = tmp_path / "leaderboard"
    evaluation = score(path, ENV, declaration=declaration, reference="anchors", seeds=(0, 1),
                       out=tmp_path / "out")  # fmt: skip
    record_path = evaluation.out / "record.json"
    assert validate(record_path, path) and len(evaluation.record["results"][0]["episodes"]) == 2
    assert evaluation.record["results"][0]["policy_file"] == f"{RL_ENV}.onnx"  # what a replay loads
    entries.mkdir()
    (entries / "tiny.json").write_bytes(record_path.read_bytes())
    shipped = Path(__file__).resolve().parents[2] / "leaderboard" / "static.json"
    if shipped.is_file():
        (entries / "static.json").write_bytes(shipped.read_bytes())
    main(["leaderboard", "--entries", str(entries), "--out", str(tmp_path / "docs")])
    page = (tmp_path / "docs" / "index.md").read_text()
    assert "`models`" in page and "### ClusterSLA-v1 (held-out instances)" in page
    assert (tmp_path / "docs" / "envs.png").is_file()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def policy(observation):\n    raise KeyError('boom')\n", r"step 0: act raised KeyError: 'boom'"),
        ("import numpy as np\ndef policy(observation):\n    return np.full(3, 2.0)\n", r"step 0: action .* outside"),
        (
            "import time, numpy as np\ndef policy(observation):\n    time.sleep(0.2)\n    return np.ones(3) / 3\n",
            r"step 0: the step took .* limit of 0.05 s",
        ),
    ],
    ids=["raises", "outside-the-space", "over-the-step-limit"],
)
def test_a_failing_agent_ends_with_one_line_and_writes_no_record(tmp_path, capsys, body, message):
    path = write_policy(tmp_path, body)
    declaration = tmp_path / "declaration.json"
    declaration.write_text(json.dumps(DECLARATION))
    out = tmp_path / "out"
    argv = ["evaluate", RL_ENV, "--agent", f"{path}:policy", "--declaration", str(declaration), "--reference",
            "anchors", "--step-limit", "0.05", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    assert "agent 'policy' on ClusterSLA-v1 seed 0" in error
    import re

    assert re.search(message, error), error
    assert not out.exists()


def test_bad_agents_and_models_are_clear_errors(tmp_path):
    broken = write_policy(tmp_path, "import no_such_module_here\n", "broken.py")
    with pytest.raises(ImportError, match=r"does not import: ModuleNotFoundError"):
        agent_spec(f"{broken}:policy", ENV)
    with pytest.raises(TypeError, match=r"is a int; expected an agent \(an object with reset"):
        agent_spec(3, ENV)
    with pytest.raises(ValueError, match=r"neither MODULE:NAME"):
        agent_spec("just-a-name", ENV)
    with pytest.raises(ValueError, match=r"defines no 'missing'"):
        agent_spec(f"{write_policy(tmp_path)}:missing", ENV)
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    wrong = tmp_path / "wrong.onnx"
    torch.onnx.export(torch.nn.Linear(5, 3).eval(), (torch.zeros(1, 5),), str(wrong), input_names=["obs"])
    with pytest.raises(ValueError, match=r"does not fit this env: its input has 5 values, the observation .* 9"):
        score(str(wrong), RL_ENV, declaration=DECLARATION, reference="anchors", seeds=(0,))
    with pytest.raises(AgentError):  # and a guarded object, too
        score(lambda observation: np.full(3, np.nan), RL_ENV, declaration=DECLARATION, reference="anchors", seeds=(0,))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"privileged": None}, r"field 'privileged' is missing"),
        ({"gpu": 1}, r"field 'gpu' is unknown"),
        ({"training_env_steps": -1}, r"'training_env_steps' must be a non-negative number"),
        ({"tuned_on_validation_seeds": "yes"}, r"'tuned_on_validation_seeds' must be true or false"),
    ],
)
def test_a_declaration_names_its_bad_field(change, message):
    declaration = {**DECLARATION, **change}
    declaration = {k: v for k, v in declaration.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        check_declaration(declaration)


def test_program_score_prints_json_on_the_validation_seeds(tmp_path, capsys):
    """The evaluator program-search tools call: a file with a policy function in, a JSON score out; the validation
    seeds 100-104 unless --final."""
    path = write_policy(tmp_path)
    assert main(["program-score", str(path), RL_ENV]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["seeds"] == [100, 101, 102, 103, 104] and result["seed_set"] == "validation"
    assert result["env_id"] == ENV and 0 < result["combined_score"] < 1
    assert result["ci_low"] <= result["combined_score"] <= result["ci_high"]


def test_a_stable_baselines3_archive_plays_as_the_benchmark_s_own_run():
    """A shipped PPO run's model.zip (with the vecnormalize.pkl beside it) given as --policy plays exactly the
    episodes of the leaderboard's PPO entry for that training seed."""
    root = Path(__file__).resolve().parents[2]
    entry = root / "leaderboard" / "ppo.json"
    if not entry.is_file():
        pytest.skip("no leaderboard/ppo.json")
    (stored,) = (r for r in read_record(entry)["results"] if r["env_id"] == ENV)
    model = root / next(run["path"] for run in stored["rl_runs"] if run["training_seed"] == 0) / "model.zip"
    evaluation = score(str(model), ENV, declaration=DECLARATION, reference="anchors", seeds=(0, 1))
    played = evaluation.record["results"][0]["episodes"]
    recorded = [e for e in stored["episodes"] if e["training_seed"] == 0 and e["seed"] in (0, 1)]
    assert [metrics_disagree(r["metrics"], p["metrics"]) for r, p in zip(recorded, played, strict=True)] == [None] * 2
    if platform_difference(read_record(entry)) is None:  # elsewhere a network's output may differ in its last bits
        assert [e["actions"]["sha256"] for e in played] == [e["actions"]["sha256"] for e in recorded]
