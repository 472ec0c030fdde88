"""The batched envs' PCG64 draws on state rows equal NumPy's Generator draws, bit for bit (the ziggurat's rare
paths included), and leave the same state behind."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from cluster_envs.common import pcg


@njit(cache=True)
def _draw(states, n, normals, uniforms):
    for row in range(states.shape[0]):
        for start in range(0, n, 7):  # in pieces, as a batch step draws
            pcg.fill_standard_normal(states, row, normals[row, start : min(n, start + 7)])
        pcg.fill_random(states, row, uniforms[row])


def test_draws_equal_numpys_generator():
    generators = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(s))) for s in range(6)]
    states = np.stack([pcg.state_row(g) for g in generators])
    n = 40_000
    normals, uniforms = np.empty((len(generators), n)), np.empty((len(generators), n))
    _draw(states, n, normals, uniforms)
    expected_normals = np.stack([g.standard_normal(n) for g in generators])
    expected_uniforms = np.stack([g.random(n) for g in generators])
    np.testing.assert_array_equal(normals, expected_normals)
    np.testing.assert_array_equal(uniforms, expected_uniforms)
    np.testing.assert_array_equal(states, np.stack([pcg.state_row(g) for g in generators]))
    tail = np.abs(expected_normals) > 3.6541528853610087  # the ziggurat's base strip (idx 0) beyond r
    assert tail.sum() > 10


def test_state_row_rejects_other_bit_generators():
    with pytest.raises(ValueError, match="PCG64"):
        pcg.state_row(np.random.Generator(np.random.MT19937(0)))
