"""The shared capped-simplex projection (``cluster_envs.common.simplex``): the Euclidean projection onto
{z ≥ 0, Σ z ≤ r}, in place in a row of a caller's scratch, in both arithmetic forms, the same whichever entry
point sorts the column. (That each form equals its setting's former implementation bit for bit is checked by
tests/approx/test_approx_kernels.py against the numpy formulation and by the golden trajectories.)"""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.common.simplex import cap_simplex, cap_sorted


def _threshold_projection(x, radius):
    """max(x − η, 0) with Σ = radius, η found by bisection (a reference independent of the sort)."""
    lo, hi = 0.0, float(x.max())
    for _ in range(200):
        eta = (lo + hi) / 2
        lo, hi = (eta, hi) if np.maximum(x - eta, 0.0).sum() > radius else (lo, eta)
    return np.maximum(x - hi, 0.0)


def _column(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-3, 3)
    x[rng.random(n) < 0.3] = 0.0  # zeros and ties
    if n > 3:
        x[1] = x[2]
    return x


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 14, 40, 41, 64, 121, 122, 256, 1000])
def test_the_projection_of_a_column_in_a_batch_row(n, scaled):
    for seed in range(20):
        x = _column(n, seed)
        radius = float(x.sum()) * np.random.default_rng(seed).uniform(0.05, 0.95)
        if radius <= 0:
            continue
        work = np.full((3, 5 + 2 * n + 4), 7.0)  # the column at row 1 from 5, guarded around
        work[1, 5 : 5 + n] = x
        cap_simplex(work, 1, 5, n, radius, scaled)
        z = work[1, 5 : 5 + n]
        np.testing.assert_allclose(z, _threshold_projection(x, radius), rtol=1e-9, atol=1e-12 * x.max())
        assert (z >= 0).all() and z.sum() == pytest.approx(radius, rel=1e-12)
        assert (work[[0, 2]] == 7.0).all() and (work[1, :5] == 7.0).all() and (work[1, 5 + 2 * n :] == 7.0).all()
        presorted = np.zeros((1, 2 * n))
        presorted[0, :n], presorted[0, n:] = x, np.sort(x)[::-1]
        cap_sorted(presorted, 0, 0, n, radius, n, scaled)
        np.testing.assert_array_equal(presorted[0, :n], z)  # the entry points agree bit for bit


def test_negative_entries_are_zeroed_in_the_plain_form():
    work = np.array([[0.9, -3.0, 0.8, -1e300, 0.0, 0.0, 0.0, 0.0]])
    cap_simplex(work, 0, 0, 4, 1.0, False)
    np.testing.assert_allclose(work[0, :4], [0.55, 0.0, 0.45, 0.0], atol=1e-15)


def test_the_scaled_form_gives_zeros_for_a_cap_of_zero_and_does_not_overflow():
    work = np.array([[3.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    cap_simplex(work, 0, 0, 3, 0.0, True)
    assert (work[0, :3] == 0.0).all()
    work = np.array([[1e308, 1e308, 0.0, 0.0, 0.0, 0.0]])
    cap_simplex(work, 0, 0, 3, 1.0, True)
    np.testing.assert_allclose(work[0, :3], [0.5, 0.5, 0.0])
