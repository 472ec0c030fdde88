"""ClusterApprox-v1's job traces (``job_source="trace"``, a CSV ``job_id,a,d``) and explicit job lists
(``job_source="list"``): every broken input is a ``ValueError`` naming its source, never a silent wrong episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

ENV = "ClusterApprox-v1"
HORIZON = 50
# name -> (file content, what the error must say besides naming trace_path)
BROKEN_TRACES = {
    "empty": (b"", "shape"),
    "header only": (b"job_id,a,d\n", "shape"),
    "comment only": (b"# nothing here\n", "shape"),
    "truncated last row": (b"1,0,10\n2,3", "job_id,a,d"),
    "ragged": (b"1,0,10\n2,3,20,7\n", "job_id,a,d"),
    "non-numeric": (b"1,0,10\n2,three,20\n", "readable CSV"),
    "binary": (bytes(range(256)), "trace_path"),
    "nan": (b"1,0,10\n2,nan,20\n", "NaN or infinite"),
    "inf deadline": (b"1,0,inf\n", "NaN or infinite"),
    "negative arrival": (b"1,-3,10\n", "0 <= a <= d"),
    "deadline before arrival": (b"1,8,4\n", "deadline precedes"),
    "one column": (b"1\n2\n", "job_id,a,d"),
    "fractional slot": (b"1,0,10\n2,2.5,10.7\n", "whole slots"),  # was truncated to 2, 10 silently
    "every job after the horizon": (b"1,50,60\n2,1e300,1e301\n", "no job arrives before the horizon"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_TRACES))
def test_broken_job_trace_is_a_clear_error(tmp_path, name):
    path = tmp_path / "jobs.csv"
    content, reason = BROKEN_TRACES[name]
    path.write_bytes(content)
    with pytest.raises(ValueError, match="trace_path") as err:
        gym.make(ENV, job_source="trace", trace_path=str(path), horizon=HORIZON)
    assert reason in str(err.value), f"{name}: {err.value}"


def test_a_first_row_in_scientific_notation_is_data_not_a_header(tmp_path):
    """Its letter ``e`` made the first row count as a header: the first job was silently dropped."""
    path = tmp_path / "jobs.csv"
    path.write_bytes(b"1,0,1e1\n2,3,2E1\n")
    env = gym.make(ENV, job_source="trace", trace_path=str(path), horizon=HORIZON).unwrapped
    env.reset(seed=0)
    assert env._instance.jobs.arrival.tolist() == [0, 3] and env._instance.jobs.deadline.tolist() == [10, 20]


def test_huge_times_are_handled_as_documented(tmp_path):
    """Jobs arriving at or after the horizon are dropped and deadlines are clipped to it, even beyond int64 (a
    deadline of 1e300 was cast to int64 first and wrapped around to a_j + 1)."""
    path = tmp_path / "jobs.csv"
    path.write_bytes(b"1,0,10\n2,1e30,1e31\n3,5,1e300\n")
    env = gym.make(ENV, job_source="trace", trace_path=str(path), horizon=HORIZON).unwrapped
    env.reset(seed=0)
    assert env._instance.jobs.arrival.tolist() == [0, 5] and env._instance.jobs.deadline.tolist() == [10, HORIZON]


@pytest.mark.parametrize(
    "job",
    [(0, 10, np.nan, 1.0), (0, 10, 1.0, np.inf), (0, 10, -1.0, 1.0), (-1, 10, 1.0, 1.0), (5, 5, 1.0, 1.0),
     (0, HORIZON + 1, 1.0, 1.0), (0.5, 10, 1.0, 1.0), ("0", 10, 1.0, 1.0), (0, 10, 1.0)],
    ids=["nan budget", "inf value", "negative budget", "negative arrival", "empty window", "beyond horizon",
         "fractional slot", "string", "three fields"],
)  # fmt: skip
def test_broken_job_list_names_the_job(job):
    with pytest.raises(ValueError, match=r"jobs\[0\]"):
        gym.make(ENV, job_source="list", jobs=(job,), horizon=HORIZON)


def test_an_empty_job_list_is_a_clear_error():
    with pytest.raises(ValueError, match="jobs must be a non-empty list"):
        gym.make(ENV, job_source="list", jobs=(), horizon=HORIZON)
