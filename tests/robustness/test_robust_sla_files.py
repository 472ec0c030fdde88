"""ClusterSLA-v1's load traces (``scenario="trace"`` files and ``reset(options={"loads": ...})``): every broken
input gets an error naming where it came from, never a silent wrong episode."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

HORIZON = 60
GOOD = np.random.default_rng(0).uniform(0.0, 1.0, (3, HORIZON))


def _npy_bytes(array: np.ndarray, tmp_path) -> bytes:
    np.save(tmp_path / "scratch.npy", array)
    return (tmp_path / "scratch.npy").read_bytes()


BROKEN = {
    "empty.csv": lambda tmp: b"",
    "empty.npy": lambda tmp: b"",
    "truncated.npy": lambda tmp: _npy_bytes(GOOD, tmp)[:300],
    "header_only.npy": lambda tmp: _npy_bytes(GOOD, tmp)[:100],
    "non_numeric.csv": lambda tmp: b"a,b,c\n1,2,3\n",
    "ragged.csv": lambda tmp: b"1,2,3\n1,2\n",
    "binary.csv": lambda tmp: bytes(range(256)),
    "nan.csv": lambda tmp: b"1,nan,3\n1,2,3\n",
    "negative.csv": lambda tmp: b"1,-2,3\n1,2,3\n",
    "corrupt.npz": lambda tmp: b"PK\x03\x04not a zip archive",
    "wrong_users.npy": lambda tmp: _npy_bytes(GOOD[:2], tmp),
    "three_axes.npy": lambda tmp: _npy_bytes(GOOD[None], tmp),
    "too_short.npy": lambda tmp: _npy_bytes(GOOD[:, : HORIZON // 2], tmp),
}


def _make(path) -> gym.Env:
    env = gym.make(
        "ClusterSLA-v1", scenario="trace", horizon=HORIZON, scenario_kwargs={"path": str(path), "scale": "none"}
    )
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_trace_file_is_a_clear_error(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(BROKEN[name](tmp_path))
    with pytest.raises(ValueError, match=r"scenario_kwargs\['path'\]|trace length"):
        _make(path)


def test_missing_trace_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such.npy"):
        _make(tmp_path / "no_such.npy")


def test_huge_but_summable_trace_runs_with_finite_values(tmp_path):
    np.save(tmp_path / "huge.npy", np.full((3, HORIZON), 1e300))
    env = _make(tmp_path / "huge.npy")
    for _ in range(HORIZON):
        obs, reward, *_ = env.step(np.ones(3))
        assert env.observation_space.contains(obs) and math.isfinite(reward)


@pytest.mark.parametrize(
    ("loads", "message"),
    [
        (np.full((3, HORIZON), 1.7e308), "overflows"),
        (np.full((3, HORIZON), np.nan), "finite"),
        (-GOOD, "non-negative"),
        (GOOD[:, :-1], "shape"),
        (np.zeros((0, HORIZON)), "shape"),
    ],
    ids=["overflowing total", "nan", "negative", "truncated", "empty"],
)
def test_bad_loads_option_is_a_clear_error(loads, message):
    env = gym.make("ClusterSLA-v1", horizon=HORIZON, scenario="gamma_iid")
    with pytest.raises(ValueError, match=rf"options\['loads'\].*{message}"):
        env.reset(seed=0, options={"loads": loads})
