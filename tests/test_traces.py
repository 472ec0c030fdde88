"""cluster_envs.common.traces.read_columns: the named columns of a CSV with a header, or a ValueError that names
the argument, the file and the expected columns; the Alibaba GPU 2023 reader's bounds on amounts, by file, line and
column (files written to tmp_path; no trace needed)."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.common.traces import read_columns

COLUMNS = {"cpu": float, "qos": str}


def _write(tmp_path, text: str):
    path = tmp_path / "pods.csv"
    path.write_text(text)
    return path


def test_reads_numbers_and_text_and_ignores_other_columns(tmp_path):
    path = _write(tmp_path, "name,cpu,qos\na,1.5,LS\nb,2,\n")
    table = read_columns(path, "trace_dir", COLUMNS)
    np.testing.assert_array_equal(table["cpu"], [1.5, 2.0])
    assert table["qos"].tolist() == ["LS", ""] and set(table) == set(COLUMNS)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "no file at"),
        ("", "is empty"),
        ("cpu,qos\n", "has a header but no rows"),
        ("cpu\n1\n", "lacks the column(s) ['qos']"),
        ("cpu,qos\n1,LS,extra\n", "line 2 has 3 fields, the header 2"),
        ("cpu,qos\nmany,LS\n", "column 'cpu' is not numeric"),
        ("cpu,qos\n,LS\n", "column 'cpu' is not numeric"),
    ],
)
def test_a_bad_file_is_a_value_error_naming_it(tmp_path, text, problem):
    path = tmp_path / "pods.csv" if text is None else _write(tmp_path, text)
    with pytest.raises(ValueError) as err:
        read_columns(path, "trace_dir", COLUMNS)
    message = str(err.value)
    assert message.startswith("trace_dir: ") and "pods.csv" in message and problem in message


@pytest.mark.parametrize("field", ["nan", "inf", "-inf", "1e999"])
def test_a_non_finite_field_is_refused_by_file_line_and_column(tmp_path, field):
    """An Alibaba pod with deletion_time=nan was read as never deleted (issue 28)."""
    path = tmp_path / "pods.csv"
    path.write_text(f"name,creation_time,deletion_time\npod-0,1.0,2.0\npod-1,3.0,{field}\n")
    with pytest.raises(ValueError, match=f"pods.csv' line 3 column 'deletion_time' is '{field}', not a finite"):
        read_columns(path, "trace_dir", {"creation_time": float, "deletion_time": float})


# A four-node, four-pod trace in the Alibaba GPU 2023 schema (one QoS class per pod: ClusterSLA-v1's preset has a
# user per class); each id's preset is built on it with sizes that fit.
NODES = [{"sn": f"node-{i}", "cpu_milli": "32000", "memory_mib": "262144", "gpu": "8"} for i in range(4)]
PODS = [
    {"name": f"pod-{i}", "cpu_milli": "4000", "memory_mib": "8192", "num_gpu": "1", "gpu_milli": "1000", "qos": qos,
     "creation_time": str(10 * i), "deletion_time": "100"}
    for i, qos in enumerate(["LS", "BE", "Burstable", "Guaranteed"])
]  # fmt: skip
TRACE_IDS = {
    "ClusterMultiServer-v0": {"n_ports": 1, "n_servers": 2},
    "ClusterGang-v0": {"n_ports": 1, "n_servers": 2},
    "ClusterSLA-v1": {},
}


def _alibaba_trace(folder, node_change=None, pod_change=None):
    """The trace above in ``folder``, with ``{column: value}`` changes on the second node and the second pod."""
    from cluster_envs.common.alibaba_gpu import NODE_FILE, POD_FILE

    for file, rows, change in ((NODE_FILE, NODES, node_change), (POD_FILE, PODS, pod_change)):
        rows = [dict(row) for row in rows]
        rows[1].update(change or {})
        with open(folder / file, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return folder


def _make(env_id, folder):
    env = gym.make(env_id, preset="alibaba_gpu_2023", trace_dir=folder, horizon=12, **TRACE_IDS[env_id])
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("env_id", TRACE_IDS)
def test_the_small_trace_builds_every_trace_preset(tmp_path, env_id):
    _make(env_id, _alibaba_trace(tmp_path))


@pytest.mark.parametrize("env_id", TRACE_IDS)
@pytest.mark.parametrize(
    ("node_change", "pod_change", "where"),
    [
        ({"cpu_milli": "1e300"}, None, "openb_node_list_all_node.csv' line 3 column 'cpu_milli' is 1e+300"),
        ({"gpu": "-1"}, None, "openb_node_list_all_node.csv' line 3 column 'gpu' is -1"),
        (None, {"num_gpu": "1e12"}, "openb_pod_list_default.csv' line 3 column 'num_gpu' is 1e+12"),
        (None, {"memory_mib": "-8192"}, "openb_pod_list_default.csv' line 3 column 'memory_mib' is -8192"),
    ],
)
def test_a_huge_or_negative_amount_is_refused_by_file_line_and_column(tmp_path, env_id, node_change, pod_change,
                                                                      where):  # fmt: skip
    """Huge node capacities were refused as "no sampled node can host job type(s) [...]", blaming the jobs, and
    huge pod requests were replayed as loads (issue 28)."""
    folder = _alibaba_trace(tmp_path, node_change, pod_change)
    with pytest.raises(ValueError) as err:
        _make(env_id, folder)
    message = str(err.value)
    assert message.startswith(f"trace_dir: '{folder}") and where in message and "allowed: [0, 1e+09]" in message


@pytest.mark.parametrize("env_id", ["ClusterMultiServer-v0", "ClusterGang-v0"])
def test_a_capacity_beyond_the_settings_bound_in_units_names_the_node(tmp_path, env_id):
    """Pods of one milli-core make the median request the unit: a node's 10⁶ cores are then 10⁹ units, past the
    setting's bound on capacities (and on the way to int64 overflow)."""
    folder = tmp_path
    _alibaba_trace(folder, {"cpu_milli": "1e9"})
    with open(folder / "openb_pod_list_default.csv") as handle:
        text = handle.read().replace(",4000,", ",1,")
    (folder / "openb_pod_list_default.csv").write_text(text)
    with pytest.raises(ValueError) as err:
        _make(env_id, folder)
    message = str(err.value)
    assert "openb_node_list_all_node.csv' line 3 column 'cpu_milli' gives 1e+09 units of cpu" in message
    assert "allowed: at most 1e+06 units" in message
