"""The compiled pairwise sum (``cluster_envs.common.pairwise``) equals numpy's ``sum`` bit for bit, wherever the
run lies in a batch array and wherever its split stack is."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.common.pairwise import SUM_STACK, pairwise_sum

LENGTHS = [*range(0, 300), 1000, 1031, 4099, 100_003]


@pytest.mark.parametrize("n", LENGTHS)
def test_a_run_of_a_1d_array_with_its_own_stack(n):
    x = np.random.default_rng(n).standard_normal(n + 5) * 10.0 ** np.random.default_rng(-n % 7).uniform(-3, 3, n + 5)
    stack = np.empty(SUM_STACK)
    assert pairwise_sum(x, (), 0, n, stack, (), 0) == x[:n].sum()
    assert pairwise_sum(x, (), 3, n, stack, (), 0) == x[3 : n + 3].sum()


@pytest.mark.parametrize("n", [0, 5, 8, 127, 128, 129, 300, 4099])
def test_a_row_of_a_batch_array_with_the_stack_at_the_rows_end(n):
    x = np.random.default_rng(n).standard_normal(n) * 10.0 ** np.random.default_rng(n + 1).uniform(-3, 3, n)
    rows = np.zeros((2, n + 3 + SUM_STACK))
    rows[1, : n + 3] = [1e9, *x, 1e9, 1e9]  # the run from 1, guarded on both sides
    assert pairwise_sum(rows, (1,), 1, n, rows, (1,), n + 3) == x.sum()
    cube = np.full((2, 3, n + 1), 1e9)
    cube[1, 2, :n] = x
    assert pairwise_sum(cube, (1, 2), 0, n, np.empty(SUM_STACK), (), 0) == x.sum()


@pytest.mark.parametrize("n", [1, 7, 8, 10, 128, 200])
def test_a_sum_of_negative_zeros_is_positive_zero_as_in_numpy(n):
    x = np.full(n, -0.0)
    total = pairwise_sum(x, (), 0, n, np.empty(SUM_STACK), (), 0)
    assert str(total) == str(x.sum()) == "0.0"
