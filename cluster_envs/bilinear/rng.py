"""The draws the bilinear model makes from NumPy's ``PCG64`` streams, in numba, bit for bit.

The env's streams are ``np.random.Generator(PCG64)`` objects, continued in compiled code from their states
(:mod:`cluster_envs.common.pcg`): ``next_double`` is ``Generator.random``, ``standard_normal`` its ziggurat
``standard_normal``, ``permute`` its ``permutation`` (Fisher–Yates with masked rejection on buffered 32-bit halves),
and :func:`spawned_state` the seeding a reset does (``SeedSequence.spawn`` and ``PCG64``), so that the batched env
resets its copies in compiled code. Tests check every draw against NumPy.

The states live in one (copies, streams, ``WORDS``) array and every function takes the copy ``b`` and the stream
``k``: indexing the words in place creates no array views, which cost more than the draws in a compiled batch loop.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.pcg import (
    HAS_UINT32,
    INC_HI,
    INC_LO,
    STATE_HI,
    STATE_LO,
    UINTEGER,
    draw_double,
    draw_normal,
    lcg_step,
    output,
)

_MASK32 = uint64(0xFFFFFFFF)


@cached_njit(inline="always")
def next_uint64(s, b, k):
    """Advance stream k of copy b and return its next 64-bit output (``pcg64_next64``)."""
    hi, lo = lcg_step(s[b, k, STATE_HI], s[b, k, STATE_LO], s[b, k, INC_HI], s[b, k, INC_LO])
    s[b, k, STATE_HI], s[b, k, STATE_LO] = hi, lo
    return output(hi, lo)


@cached_njit(inline="always")
def next_double(s, b, k):
    """``Generator.random()``: 53 random bits scaled to [0, 1)."""
    value, hi, lo = draw_double(s[b, k, STATE_HI], s[b, k, STATE_LO], s[b, k, INC_HI], s[b, k, INC_LO])
    s[b, k, STATE_HI], s[b, k, STATE_LO] = hi, lo
    return value


@cached_njit(inline="always")
def next_uint32(s, b, k):
    """The low half of a 64-bit draw, the high half kept for the next call (``pcg64_next32``)."""
    if s[b, k, HAS_UINT32] != 0:
        s[b, k, HAS_UINT32] = 0
        return s[b, k, UINTEGER]
    x = next_uint64(s, b, k)
    s[b, k, HAS_UINT32] = 1
    s[b, k, UINTEGER] = x >> uint64(32)
    return x & _MASK32


@cached_njit(inline="always")
def permute(s, b, k, out, c, row):
    """``out[c, row, :] = Generator.permutation(n)``: Fisher–Yates with ``random_interval`` (n < 2³²)."""
    n = out.shape[2]
    for i in range(n):
        out[c, row, i] = i
    for i in range(n - 1, 0, -1):
        mask = uint64(i)
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> uint64(shift)
        j = next_uint32(s, b, k) & mask
        while j > uint64(i):
            j = next_uint32(s, b, k) & mask
        m = int(j)
        out[c, row, i], out[c, row, m] = out[c, row, m], out[c, row, i]


@cached_njit(inline="always")
def standard_normal(s, b, k):
    """``Generator.standard_normal()``: NumPy's ziggurat (``random_standard_normal``)."""
    value, hi, lo = draw_normal(s[b, k, STATE_HI], s[b, k, STATE_LO], s[b, k, INC_HI], s[b, k, INC_LO])
    s[b, k, STATE_HI], s[b, k, STATE_LO] = hi, lo
    return value


# NumPy's SeedSequence constants (numpy/random/bit_generator.pyx)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL = 4


@cached_njit(inline="always")
def _hashmix(value, hash_const):
    """SeedSequence's ``hashmix`` on uint32 values held in int64: (mixed value, next hash constant)."""
    value = (value ^ hash_const) & 0xFFFFFFFF
    hash_const = (hash_const * _MULT_A) & 0xFFFFFFFF
    value = (value * hash_const) & 0xFFFFFFFF
    return value ^ (value >> 16), hash_const


@cached_njit(inline="always")
def _mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & 0xFFFFFFFF
    return result ^ (result >> 16)


@cached_njit
def spawned_state(entropy, child, out, b, k):
    """``out[b, k]`` = the six-word state of ``Generator(PCG64(SeedSequence(entropy).spawn(n)[child]))``
    (0 ≤ entropy < 2⁶³, any n > child): SeedSequence's pool mixing and ``generate_state``, then PCG64's seeding."""
    entropy_words = np.zeros(_POOL + 1, dtype=np.int64)  # run entropy padded to the pool size, then the spawn key
    entropy_words[0], entropy_words[1], entropy_words[_POOL] = entropy & 0xFFFFFFFF, entropy >> 32, child
    pool = np.zeros(_POOL, dtype=np.int64)
    hash_const = _INIT_A
    for i in range(_POOL):
        pool[i], hash_const = _hashmix(entropy_words[i], hash_const)
    for i_src in range(_POOL):
        for i_dst in range(_POOL):
            if i_src != i_dst:
                mixed, hash_const = _hashmix(pool[i_src], hash_const)
                pool[i_dst] = _mix(pool[i_dst], mixed)
    for i_dst in range(_POOL):
        mixed, hash_const = _hashmix(entropy_words[_POOL], hash_const)
        pool[i_dst] = _mix(pool[i_dst], mixed)
    words = np.zeros(4, dtype=np.uint64)  # generate_state(4, uint64): 8 uint32 words, little-endian pairs
    hash_const = _INIT_B
    for i in range(8):
        data = (pool[i % _POOL] ^ hash_const) & 0xFFFFFFFF
        hash_const = (hash_const * _MULT_B) & 0xFFFFFFFF
        data = (data * hash_const) & 0xFFFFFFFF
        data ^= data >> 16
        words[i // 2] |= uint64(data) << uint64(32 * (i % 2))
    inc_hi = (words[2] << uint64(1)) | (words[3] >> uint64(63))  # pcg64_set_seed: inc = (initseq << 1) | 1
    inc_lo = (words[3] << uint64(1)) | uint64(1)
    hi, lo = lcg_step(uint64(0), uint64(0), inc_hi, inc_lo)
    lo_sum = lo + words[1]
    hi = hi + words[0] + (uint64(1) if lo_sum < lo else uint64(0))
    hi, lo = lcg_step(hi, lo_sum, inc_hi, inc_lo)
    out[b, k, STATE_HI], out[b, k, STATE_LO], out[b, k, INC_HI], out[b, k, INC_LO] = hi, lo, inc_hi, inc_lo
    out[b, k, HAS_UINT32] = out[b, k, UINTEGER] = 0
