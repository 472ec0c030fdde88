"""NumPy's ``PCG64`` generator and the draws the bilinear model makes from it, in numba, bit for bit.

The env's streams are ``np.random.Generator(PCG64)`` objects; a compiled step cannot call them cheaply
(numba unboxes a Generator in ~10 µs). So the state of each stream is copied into six uint64 words at
reset and the compiled code continues the exact same sequence: ``next_double`` is ``Generator.random``,
``standard_normal`` its ziggurat ``standard_normal``, ``permute`` its ``permutation`` (Fisher–Yates with
masked rejection on buffered 32-bit halves). Tests check every draw against NumPy.

The states live in one (copies, streams, 6) array and every function takes the copy ``b`` and the stream ``k``:
indexing the words in place creates no array views, which cost more than the draws in a compiled batch loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

# NumPy's ziggurat tables for the standard normal, as numba ships them (the same arrays NumPy compiles in).
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_UINT32, UINTEGER = range(6)
STATE_WORDS = 6
_MULT_HI = uint64(2549297995355413924)  # PCG_DEFAULT_MULTIPLIER_128
_MULT_LO = uint64(4865540595714422341)
_MASK32 = uint64(0xFFFFFFFF)
_MASK64 = (1 << 64) - 1


def pcg_state(generator: np.random.Generator) -> np.ndarray:
    """The six-word state of a ``PCG64`` generator (state, increment, buffered 32-bit half)."""
    st = generator.bit_generator.state
    if st["bit_generator"] != "PCG64":
        raise ValueError(f"generator must use PCG64, got {st['bit_generator']}")
    s, inc = st["state"]["state"], st["state"]["inc"]
    words = (s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, st["has_uint32"], st["uinteger"])
    return np.array(words, dtype=np.uint64)


@njit(cache=True, inline="always")
def _mul_64x64(a, b):
    """The full 128-bit product of two uint64 as (hi, lo)."""
    a_lo, a_hi = a & _MASK32, a >> uint64(32)
    b_lo, b_hi = b & _MASK32, b >> uint64(32)
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> uint64(32)) + (p1 & _MASK32) + (p2 & _MASK32)
    lo = (p0 & _MASK32) | (mid << uint64(32))
    hi = p3 + (p1 >> uint64(32)) + (p2 >> uint64(32)) + (mid >> uint64(32))
    return hi, lo


@njit(cache=True, inline="always")
def next_uint64(s, b, k):
    """Advance stream k of copy b (128-bit LCG) and return its XSL-RR output (``pcg64_next64``)."""
    state_lo = s[b, k, STATE_LO]
    hi, lo = _mul_64x64(state_lo, _MULT_LO)
    hi += s[b, k, STATE_HI] * _MULT_LO + state_lo * _MULT_HI
    new_lo = lo + s[b, k, INC_LO]
    hi += s[b, k, INC_HI] + (uint64(1) if new_lo < lo else uint64(0))
    s[b, k, STATE_HI], s[b, k, STATE_LO] = hi, new_lo
    x = hi ^ new_lo
    rot = hi >> uint64(58)
    return (x >> rot) | (x << ((uint64(64) - rot) & uint64(63)))


@njit(cache=True, inline="always")
def next_double(s, b, k):
    """``Generator.random()``: 53 random bits scaled to [0, 1)."""
    return float(next_uint64(s, b, k) >> uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def next_uint32(s, b, k):
    """The low half of a 64-bit draw, the high half kept for the next call (``pcg64_next32``)."""
    if s[b, k, HAS_UINT32] != 0:
        s[b, k, HAS_UINT32] = 0
        return s[b, k, UINTEGER]
    x = next_uint64(s, b, k)
    s[b, k, HAS_UINT32] = 1
    s[b, k, UINTEGER] = x >> uint64(32)
    return x & _MASK32


@njit(cache=True, inline="always")
def permute(s, b, k, out, row):
    """``out[b, row, :] = Generator.permutation(n)``: Fisher–Yates with ``random_interval`` (n < 2³²)."""
    n = out.shape[2]
    for i in range(n):
        out[b, row, i] = i
    for i in range(n - 1, 0, -1):
        mask = uint64(i)
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> uint64(shift)
        j = next_uint32(s, b, k) & mask
        while j > uint64(i):
            j = next_uint32(s, b, k) & mask
        m = int(j)
        out[b, row, i], out[b, row, m] = out[b, row, m], out[b, row, i]


@njit(cache=True, inline="always")
def standard_normal(s, b, k):
    """``Generator.standard_normal()``: NumPy's ziggurat (``random_standard_normal``)."""
    while True:
        r = next_uint64(s, b, k)
        idx = int(r & uint64(0xFF))
        r >>= uint64(8)
        rabs = (r >> uint64(1)) & uint64(0x000FFFFFFFFFFFFF)
        x = float(rabs) * wi_double[idx]
        if r & uint64(1):
            x = -x
        if rabs < ki_double[idx]:
            return x
        if idx == 0:
            while True:
                xx = -ziggurat_nor_inv_r * np.log1p(-next_double(s, b, k))
                yy = -np.log1p(-next_double(s, b, k))
                if yy + yy > xx * xx:
                    return -(ziggurat_nor_r + xx) if (rabs >> uint64(8)) & uint64(1) else ziggurat_nor_r + xx
        elif (fi_double[idx - 1] - fi_double[idx]) * next_double(s, b, k) + fi_double[idx] < np.exp(-0.5 * x * x):
            return x
