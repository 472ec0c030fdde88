"""The protocol file: every entry loads, and a bad file gets an error naming the file and the key."""

from pathlib import Path

import pytest
import yaml

from baselines.eval import protocol
from baselines.eval.protocol import PROTOCOL_FILE, ProtocolError, load_protocol

ENTRY = {
    "paper_agent": "mwu_extended",
    "naive_agent": "static",
    "oracle_agent": "pg",
    "headline": "regret",
    "metrics": {"regret": "lower", "return": "higher"},
    "curves": ["regret"],
}


def write(tmp_path: Path, entries: dict) -> Path:
    path = tmp_path / "protocol.yml"
    path.write_text(yaml.safe_dump(entries, sort_keys=False))
    return path


def test_the_shipped_file_loads_and_is_what_settings_serves():
    loaded = load_protocol(PROTOCOL_FILE)
    assert loaded == protocol.settings() == dict(protocol.SETTINGS)
    sla = loaded["ClusterSLA-v1"]
    assert sla.metrics["regret"] == protocol.LOWER and sla.metrics["work_ratio"] == protocol.HIGHER
    assert list(sla.metrics)[0] == sla.headline and isinstance(sla.curves, tuple)


def test_a_valid_entry_gets_the_dataclass_defaults(tmp_path):
    setting = load_protocol(write(tmp_path, {"ClusterSLA-v1": ENTRY}))["ClusterSLA-v1"]
    assert setting.rl_algo == "ppo" and dict(setting.env_kwargs) == {} and setting.curves == ("regret",)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"rl_step": 10}, "ClusterSLA-v1: unknown key 'rl_step'"),
        ({"rl_steps": "many"}, "ClusterSLA-v1.rl_steps: must be an integer, got 'many'"),
        ({"rl_steps": True}, "ClusterSLA-v1.rl_steps: must be an integer"),
        ({"metrics": {"regret": "down"}}, "ClusterSLA-v1.metrics: must be a mapping metric -> higher or lower"),
        ({"curves": "regret"}, "ClusterSLA-v1.curves: must be a list of info keys"),
        ({"rl_algo_env_kwargs": {"ppo_mask": "binary"}}, "ClusterSLA-v1.rl_algo_env_kwargs: must be a mapping"),
        ({"headline": "utility"}, "ClusterSLA-v1: headline='utility' must be one of the metrics"),
        ({"rl_seeds": 0}, "ClusterSLA-v1: rl_seeds must be a positive integer"),
        ({"oracle_value": 0.0}, "ClusterSLA-v1: give exactly one of oracle_agent and oracle_value"),
    ],
)
def test_a_bad_entry_names_the_file_and_the_key(tmp_path, change, message):
    path = write(tmp_path, {"ClusterSLA-v1": {**ENTRY, **change}})
    with pytest.raises(ProtocolError) as error:
        load_protocol(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


def test_a_missing_required_key_is_named(tmp_path):
    entry = {key: value for key, value in ENTRY.items() if key != "naive_agent"}
    path = write(tmp_path, {"ClusterSLA-v1": entry})
    with pytest.raises(ProtocolError, match=r"ClusterSLA-v1: missing required key 'naive_agent'"):
        load_protocol(path)


@pytest.mark.parametrize("text", ["- a list\n", "ClusterSLA-v1: [1, 2]\n", "key: [unclosed\n"])
def test_a_file_of_the_wrong_shape_is_named(tmp_path, text):
    path = tmp_path / "protocol.yml"
    path.write_text(text)
    with pytest.raises(ProtocolError, match=str(path)):
        load_protocol(path)
