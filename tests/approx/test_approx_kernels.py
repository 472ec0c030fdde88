"""The compiled projection, rounding and slot transition equal the vectorized numpy formulation bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_envs.approx import kernel
from cluster_envs.approx.model import ap_time, onoff_periods, onoff_rates
from cluster_envs.approx.projection import categorical_round, project_columns


def _numpy_projection(y):
    """The vectorized formulation the kernel replaced (reference)."""
    z = np.maximum(y, 0.0)
    over = z.sum(axis=0) > 1.0
    if not over.any():
        return z
    cols = np.where(np.isfinite(y[:, over]), y[:, over], -1e300)
    u = -np.sort(-cols, axis=0)
    cumulative = np.cumsum(u, axis=0) - 1.0
    k = np.arange(1, u.shape[0] + 1)[:, None]
    support = (u - cumulative / k) > 0
    k_star = u.shape[0] - np.argmax(support[::-1], axis=0)
    eta = cumulative[k_star - 1, np.arange(u.shape[1])] / k_star
    z[:, over] = np.maximum(cols - eta, 0.0)
    return z


def _numpy_round(x, rng):
    cumulative = np.cumsum(x, axis=0)
    u = rng.random(x.shape[1])
    occupant = (cumulative <= u[None, :]).sum(axis=0) + 1
    occupant[occupant > x.shape[0]] = 0
    return occupant


@pytest.mark.parametrize("shape", [(1, 7), (3, 20), (9, 50), (64, 100), (256, 300)])
def test_projection_and_rounding_equal_the_numpy_formulation_bit_for_bit(shape):
    rng = np.random.default_rng(shape[0])
    for trial in range(30):
        scale = 10.0 ** rng.uniform(-2, 1)
        y = rng.normal(-0.2, 1.0, size=shape) * scale
        if trial % 3 == 0:
            y[rng.random(shape) < 0.5] = 0.0  # ties and exact zeros
        if trial % 5 == 0:
            y[0] = -np.inf  # an inactive row
        if trial % 7 == 0:
            y[:, 0] = 1.0 / shape[0] + np.array([0.0, 1e-17] * shape[0])[: shape[0]]  # barely over: no margin
        z = project_columns(y)
        np.testing.assert_array_equal(z, _numpy_projection(y))
        assert np.array_equal(np.signbit(z), np.signbit(_numpy_projection(y)))
        x = project_columns(np.abs(y) * 0.3)
        np.testing.assert_array_equal(
            categorical_round(x, np.random.default_rng(trial)), _numpy_round(x, np.random.default_rng(trial))
        )


@pytest.mark.parametrize("n_rows", [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 64])
def test_slot_work_and_cost_are_numpys_matrix_vector_products(n_rows):
    """The kernel's loops equal numpy's matrix-vector products to rounding. (They follow the summation order of
    the OpenBLAS kernel numpy picks on this suite's reference machines, so there they agree bit for bit and the
    goldens stay unchanged; another BLAS or CPU may sum in another order, so this test does not require it.)"""
    rng = np.random.default_rng(n_rows)
    for m in [*range(1, 40), 64, 100, 203, 1000, 2100]:  # 2100: past the loops, BLAS itself
        for _ in range(4):
            rates, prices = (rng.random(m) * 10.0 ** rng.uniform(-3, 3, m) for _ in range(2))
            executed = (rng.random((n_rows, m)) < rng.uniform(0.2, 1.0)).astype(np.uint8)
            jf, ji = np.zeros((kernel.JF_ROWS, n_rows)), np.zeros((kernel.JI_ROWS, n_rows), dtype=np.int64)
            ji[kernel.DEADLINE] = 10
            mf = np.zeros((kernel.MF_ROWS, m))
            mf[kernel.PRICE] = prices
            mi = np.full((kernel.MI_ROWS, m), -1, dtype=np.int64)
            si = np.zeros((kernel.SI_ROWS, n_rows), dtype=np.int64)
            si[kernel.SLOT_JOB] = np.arange(n_rows)  # every slot holds a job; no budget check (p = 0)
            sf, c, f = np.zeros((kernel.SF_ROWS, n_rows)), np.zeros(kernel.C_SIZE, np.int64), np.zeros(kernel.F_SIZE)
            state = (np.zeros((n_rows, m), dtype=bool), np.zeros((n_rows, m), dtype=np.uint8), jf, ji, mf, mi, si, sf)
            one = dict(zip(kernel.BATCH_FIELDS[:-1], [a[None] for a in (*state, c, f)], strict=True))  # a batch of one
            record = kernel.batch_record(**one, p=np.zeros(kernel.P_SIZE, np.int64))
            count = kernel.step_begin(executed.reshape(-1).astype(np.float64), kernel.DECODE_MATRIX, rates, record,
                                      np.zeros(2 * n_rows))  # fmt: skip
            assert count >= 0
            np.testing.assert_array_equal(state[1], executed)
            for row, values in ((kernel.SLOT_WORK, rates), (kernel.SLOT_COST, prices)):
                scale = (executed * values).sum(axis=1).max()  # every term is ≥ 0
                np.testing.assert_allclose(sf[row], executed @ values, rtol=0, atol=1e-13 * scale,
                                           err_msg=f"{n_rows} x {m}")  # fmt: skip


def _slot_state(n_rows, m, rng, hard):
    """A batch of one with jobs in some slots (others empty), budgets that bind part of the time with ``hard``."""
    jf, ji = np.zeros((kernel.JF_ROWS, n_rows)), np.zeros((kernel.JI_ROWS, n_rows), dtype=np.int64)
    ji[kernel.DEADLINE] = 10
    jf[kernel.BUDGET] = rng.uniform(0.0, 0.6 * m, n_rows)
    jf[kernel.SPENT] = rng.uniform(0.0, 0.2 * m, n_rows)
    mf = np.zeros((kernel.MF_ROWS, m))
    mf[kernel.PRICE] = rng.random(m) * 10.0 ** rng.uniform(-2, 1, m)
    mi = np.full((kernel.MI_ROWS, m), -1, dtype=np.int64)
    si = np.zeros((kernel.SI_ROWS, n_rows), dtype=np.int64)
    si[kernel.SLOT_JOB] = np.where(rng.random(n_rows) < 0.8, np.arange(n_rows), -1)
    arrays = (
        np.zeros((n_rows, m), dtype=bool),
        np.zeros((n_rows, m), dtype=np.uint8),
        jf,
        ji,
        mf,
        mi,
        si,
        np.zeros((kernel.SF_ROWS, n_rows)),
        np.zeros(kernel.C_SIZE, np.int64),
        np.zeros(kernel.F_SIZE),
    )
    p = np.zeros(kernel.P_SIZE, np.int64)
    p[kernel.P_HARD] = hard
    one = dict(zip(kernel.BATCH_FIELDS[:-1], [a[None] for a in arrays], strict=True))
    return arrays, kernel.batch_record(**one, p=p)


@pytest.mark.parametrize("hard", [0, 1])
def test_an_occupant_step_equals_the_matrix_step_of_its_assignment_bit_for_bit(hard):
    """The occupant decode's O(M + K) path (``_occupant_slot``) against the dense (K, M) path on the same
    assignment, over three slots in a row (the sparse path clears only what it set) and after a matrix step."""
    rng = np.random.default_rng(hard)
    for n_rows in (2, 3, 4, 5, 6, 7, 9, 64):
        for m in [*range(1, 24), 64, 203, 1000]:
            seed = int(rng.integers(2**32))
            sparse, dense = (_slot_state(n_rows, m, np.random.default_rng(seed), hard) for _ in range(2))
            for step in range(4):
                occupant = rng.integers(0, n_rows + 1, m).astype(np.float64)
                matrix = (occupant[None, :] == np.arange(1, n_rows + 1)[:, None]).astype(np.float64).reshape(-1)
                mode = kernel.DECODE_MATRIX if step == 2 else kernel.DECODE_OCCUPANT  # a matrix step in between
                rates = rng.random(m) * 10.0 ** rng.uniform(-3, 3, m)
                kernel.step_begin(occupant if mode == kernel.DECODE_OCCUPANT else matrix, mode, rates, sparse[1],
                                  np.zeros(2 * n_rows))  # fmt: skip
                kernel.step_begin(matrix, kernel.DECODE_MATRIX, rates, dense[1], np.zeros(2 * n_rows))
                for name, a, b in zip(kernel.BATCH_FIELDS[1:-3], sparse[0][1:], dense[0][1:], strict=False):
                    if name == "mi":
                        a, b = a[: kernel.EXEC_SLOT], b[: kernel.EXEC_SLOT]  # EXEC_SLOT: the sparse path's own row
                    assert np.array_equal(a, b), f"{name}: {n_rows} x {m}, step {step}"
                counters = [kernel.N_INVALID, kernel.N_BLOCKED, kernel.TOTAL_INVALID, kernel.TOTAL_BLOCKED]
                assert np.array_equal(sparse[0][8][counters], dense[0][8][counters])


def _numpy_ap_time(ends, is_ap, times):
    """The vectorized formulation the compiled ap_time replaced (reference)."""
    n_machines, n_periods = ends.shape
    horizon_cap = float(times.max()) + 1.0
    offsets = (horizon_cap + 1.0) * np.arange(n_machines)[:, None]
    flat = (np.minimum(ends, horizon_cap) + offsets).ravel()
    idx = np.searchsorted(flat, (times[None, :] + offsets).ravel(), side="right").reshape(n_machines, -1)
    idx -= (n_periods * np.arange(n_machines))[:, None]
    starts = np.concatenate([np.zeros((n_machines, 1)), ends[:, :-1]], axis=1)
    cum_ap_before = np.concatenate(
        [np.zeros((n_machines, 1)), np.cumsum((ends - starts) * is_ap, axis=1)[:, :-1]], axis=1
    )
    rows = np.arange(n_machines)[:, None]
    return (cum_ap_before[rows, idx] + (times[None, :] - starts[rows, idx]) * is_ap[rows, idx]).T


def test_ap_time_and_onoff_rates_equal_the_numpy_formulation_bit_for_bit():
    for seed in range(60):
        rng = np.random.default_rng(seed)
        m, horizon = int(rng.integers(1, 40)), int(rng.integers(1, 3000))
        ends, is_ap = onoff_periods(rng, m, horizon)
        for times in (
            np.arange(0, min(horizon, 513), dtype=np.float64),
            np.arange(horizon // 2, horizon + 1, dtype=np.float64),
            np.array([float(horizon)]),
            rng.uniform(0, horizon, 9),  # unsorted
        ):
            ap = ap_time(ends, is_ap, times)
            np.testing.assert_array_equal(ap, _numpy_ap_time(ends, is_ap, times))
            if times.size > 1:
                high, low, speed = rng.random((times.size - 1, m)), rng.random((times.size - 1, m)), rng.random(m)
                frac = np.diff(ap, axis=0)
                expected = speed * (frac * high + (1.0 - frac) * low)
                np.testing.assert_array_equal(onoff_rates(ap, high, low, speed), expected)
