"""cluster_envs.common.traces.read_columns: the named columns of a CSV with a header, or a ValueError that names
the argument, the file and the expected columns (written to tmp_path; no trace needed)."""

from __future__ import annotations

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
