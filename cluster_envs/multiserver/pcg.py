"""NumPy's ``PCG64`` with its ``random()`` and ``standard_normal()`` draws, on states held in an array.

The batched envs draw for B copies per step. Reaching B ``np.random.Generator`` objects (one pointer chase and a
function-pointer call per draw, into B scattered Python objects) cost more than the draws; here the copies' states
sit side by side in a ``uint64`` array and a draw is inlined. The values are NumPy's, bit for bit: the same 128-bit
LCG step and XSL-RR output (``pcg64.h``), ``next_double`` = ``(next_uint64 >> 11) · 2⁻⁵³``, and the same ziggurat
for normals (NumPy's ``random_standard_normal``, whose tables numba ships; numba's own Generator support uses them).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

STATE_HI, STATE_LO, INC_HI, INC_LO = range(4)  # a state row: the LCG state and increment, 128 bits each
WORDS = 4
_MULT_HI, _MULT_LO = np.uint64(0x2360ED051FC65DA4), np.uint64(0x4385DF649FCCF645)  # PCG_DEFAULT_MULTIPLIER_128
_LOW32, _32, _11, _58, _63 = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(11), np.uint64(58), np.uint64(63)
_ONE = np.uint64(1)
_TO_DOUBLE = 1.0 / 9007199254740992.0
_KI, _WI, _FI = ki_double.copy(), wi_double.copy(), fi_double.copy()


def state_row(generator: np.random.Generator) -> np.ndarray:
    """The ``PCG64`` generator's state as a row (the generator itself is not advanced by draws from the row)."""
    state = generator.bit_generator.state
    if state["bit_generator"] != "PCG64":
        raise ValueError(f"generator must be a PCG64 Generator, got {state['bit_generator']}")
    s, inc = state["state"]["state"], state["state"]["inc"]
    return np.array([s >> 64, s & (2**64 - 1), inc >> 64, inc & (2**64 - 1)], dtype=np.uint64)


@njit(inline="always")
def _mul_hi(a, b):
    """The high 64 bits of the 128-bit product ``a · b``."""
    a_lo, a_hi, b_lo, b_hi = a & _LOW32, a >> _32, b & _LOW32, b >> _32
    low_low, low_high, high_low = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo
    middle = (low_low >> _32) + (low_high & _LOW32) + (high_low & _LOW32)
    return a_hi * b_hi + (low_high >> _32) + (high_low >> _32) + (middle >> _32)


@njit(inline="always")
def next_uint64(states, row):
    """Advance ``states[row]`` by one LCG step and return the XSL-RR output of the new state."""
    s_hi, s_lo = states[row, STATE_HI], states[row, STATE_LO]
    hi = _mul_hi(s_lo, _MULT_LO) + s_lo * _MULT_HI + s_hi * _MULT_LO
    lo = s_lo * _MULT_LO
    new_lo = lo + states[row, INC_LO]
    hi += states[row, INC_HI] + (_ONE if new_lo < lo else np.uint64(0))
    states[row, STATE_HI], states[row, STATE_LO] = hi, new_lo
    value, rotation = hi ^ new_lo, hi >> _58
    return (value >> rotation) | (value << ((np.uint64(64) - rotation) & _63))


@njit(inline="always")
def next_double(states, row):
    """``Generator.random()``."""
    return np.float64(next_uint64(states, row) >> _11) * _TO_DOUBLE


@njit(inline="always")
def standard_normal(states, row):
    """``Generator.standard_normal()`` (NumPy's ziggurat)."""
    while True:
        r = next_uint64(states, row)
        idx = np.intp(r & np.uint64(0xFF))
        r >>= np.uint64(8)
        sign = r & _ONE
        rabs = (r >> _ONE) & np.uint64(0x000FFFFFFFFFFFFF)
        x = np.float64(rabs) * _WI[idx]
        if sign:
            x = -x
        if rabs < _KI[idx]:
            return x
        if idx == 0:
            while True:
                xx = -ziggurat_nor_inv_r * np.log1p(-next_double(states, row))
                yy = -np.log1p(-next_double(states, row))
                if yy + yy > xx * xx:
                    return -(ziggurat_nor_r + xx) if (rabs >> np.uint64(8)) & _ONE else ziggurat_nor_r + xx
        elif (_FI[idx - 1] - _FI[idx]) * next_double(states, row) + _FI[idx] < np.exp(-0.5 * x * x):
            return x
