"""The compiled, branch-free first-fit repair equals the plain reading of spec §3.6 for any number of device types."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.multiserver.kernel import first_fit_into


def _reference(requested, usable, order, A, c):
    x, used = np.zeros(order.size, np.int8), np.zeros(A.shape[0], np.int64)
    n_arrival = n_capacity = 0
    for e in order:
        if not requested[e]:
            continue
        if not usable[e]:
            n_arrival += 1
        elif (used + A[:, e] <= c).all():
            x[e], used = 1, used + A[:, e]
        else:
            n_capacity += 1
    return x, n_arrival, n_capacity


@pytest.mark.parametrize("n_types", [1, 2, 3, 4, 5, 7])
def test_first_fit_equals_the_reference(n_types):
    rng = np.random.default_rng(n_types)
    for _ in range(200):
        n_edges = int(rng.integers(1, 40))
        A = rng.integers(1, 4, size=(n_types, n_edges))
        c = rng.integers(1, 3 * n_edges, size=n_types)
        requested, usable = rng.random(n_edges) < 0.6, (rng.random(n_edges) < 0.8).astype(np.int8)
        order = rng.permutation(n_edges)
        x = np.empty(n_edges, np.int8)
        counts = first_fit_into(requested, usable, order, A, c, x, np.empty(n_types, np.int64),
                                np.empty(n_edges, np.int64))  # fmt: skip
        expected, *expected_counts = _reference(requested, usable, order, A, c)
        np.testing.assert_array_equal(x, expected)
        assert list(counts) == expected_counts
