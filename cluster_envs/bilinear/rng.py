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
from llvmlite import ir
from numba import njit, types, uint64
from numba.extending import intrinsic

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


@intrinsic
def _mul_64x64(typingctx, a, b):
    """The full 128-bit product of two uint64 as (hi, lo): one 64 × 64 → 128-bit multiply in LLVM."""

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, (high, builder.trunc(product, ir.IntType(64))))

    return types.UniTuple(types.uint64, 2)(types.uint64, types.uint64), codegen


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


# NumPy's SeedSequence constants (numpy/random/bit_generator.pyx)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL = 4


@njit(cache=True, inline="always")
def _hashmix(value, hash_const):
    """SeedSequence's ``hashmix`` on uint32 values held in int64: (mixed value, next hash constant)."""
    value = (value ^ hash_const) & 0xFFFFFFFF
    hash_const = (hash_const * _MULT_A) & 0xFFFFFFFF
    value = (value * hash_const) & 0xFFFFFFFF
    return value ^ (value >> 16), hash_const


@njit(cache=True, inline="always")
def _mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & 0xFFFFFFFF
    return result ^ (result >> 16)


@njit(cache=True, inline="always")
def _step128(hi, lo, inc_hi, inc_lo):
    """One step of the 128-bit LCG: state · multiplier + increment."""
    new_hi, new_lo = _mul_64x64(lo, _MULT_LO)
    new_hi += hi * _MULT_LO + lo * _MULT_HI
    out_lo = new_lo + inc_lo
    return new_hi + inc_hi + (uint64(1) if out_lo < new_lo else uint64(0)), out_lo


@njit(cache=True)
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
    hi, lo = _step128(uint64(0), uint64(0), inc_hi, inc_lo)
    lo_sum = lo + words[1]
    hi = hi + words[0] + (uint64(1) if lo_sum < lo else uint64(0))
    hi, lo = _step128(hi, lo_sum, inc_hi, inc_lo)
    out[b, k, STATE_HI], out[b, k, STATE_LO], out[b, k, INC_HI], out[b, k, INC_LO] = hi, lo, inc_hi, inc_lo
    out[b, k, HAS_UINT32] = out[b, k, UINTEGER] = 0
