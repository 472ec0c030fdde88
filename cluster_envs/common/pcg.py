"""NumPy's ``PCG64`` and its ``random()`` and ``standard_normal()`` draws in numba, bit for bit, on states in arrays.

Compiled batch steps draw for B copies per step. Reaching B ``np.random.Generator`` objects (numba unboxes one in
~10 µs; a draw through it is a pointer chase and a function-pointer call into a scattered Python object) costs more
than the draws, so each stream's state is copied into a row of ``WORDS`` uint64 at reset and the compiled code
continues the same sequence: the same 128-bit LCG step and XSL-RR output (``pcg64.h``), ``next_double`` =
``(next_uint64 >> 11) · 2⁻⁵³``, and NumPy's ziggurat for normals (``random_standard_normal``, whose tables numba
ships; numba's own Generator support uses them). The draws take and return the state as registers
(hi, lo, inc_hi, inc_lo), so that a run of draws does not store and reload it between draws. ClusterMultiServer's
and ClusterBilinear's batched steps use it; ``tests/test_pcg.py`` checks it against NumPy.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

# A state row: the LCG state and increment (128 bits each), and the buffered upper half of a 64-bit draw that
# NumPy's 32-bit draws use (``has_uint32``, ``uinteger``).
STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_UINT32, UINTEGER = range(6)
WORDS = 6
_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128
_11, _58, _63 = np.uint64(11), np.uint64(58), np.uint64(63)
_ONE = np.uint64(1)
_TO_DOUBLE = 1.0 / 9007199254740992.0
_KI, _WI, _FI = ki_double.copy(), wi_double.copy(), fi_double.copy()


def state_row(generator: np.random.Generator) -> np.ndarray:
    """The ``PCG64`` generator's state as a row (the generator itself is not advanced by draws from the row)."""
    state = generator.bit_generator.state
    if state["bit_generator"] != "PCG64":
        raise ValueError(f"generator must be a PCG64 Generator, got {state['bit_generator']}")
    s, inc = state["state"]["state"], state["state"]["inc"]
    words = (s >> 64, s & (2**64 - 1), inc >> 64, inc & (2**64 - 1), state["has_uint32"], state["uinteger"])
    return np.array(words, dtype=np.uint64)


@intrinsic
def lcg_step(typingctx, state_hi, state_lo, inc_hi, inc_lo):
    """``state · PCG_DEFAULT_MULTIPLIER_128 + inc`` mod 2¹²⁸ in LLVM's native 128-bit integers, as (hi, lo)."""
    signature = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64, types.uint64, types.uint64)

    def codegen(context, builder, sig, args):
        wide, word = ir.IntType(128), ir.IntType(64)
        sixty_four = ir.Constant(wide, 64)

        def join(hi, lo):
            return builder.or_(builder.shl(builder.zext(hi, wide), sixty_four), builder.zext(lo, wide))

        new = builder.add(builder.mul(join(*args[:2]), ir.Constant(wide, _MULTIPLIER)), join(*args[2:]))
        hi, lo = builder.trunc(builder.lshr(new, sixty_four), word), builder.trunc(new, word)
        return context.make_tuple(builder, sig.return_type, (hi, lo))

    return signature, codegen


@njit(inline="always")
def output(hi, lo):
    """XSL-RR: the state's halves xor-ed, rotated right by its top six bits."""
    value, rotation = hi ^ lo, hi >> _58
    return (value >> rotation) | (value << ((np.uint64(64) - rotation) & _63))


@njit(inline="always")
def draw_double(hi, lo, inc_hi, inc_lo):
    """``Generator.random()`` from the state (hi, lo): (value, hi, lo) after the step."""
    hi, lo = lcg_step(hi, lo, inc_hi, inc_lo)
    return np.float64(np.int64(output(hi, lo) >> _11)) * _TO_DOUBLE, hi, lo  # < 2⁵³: signed conversion is exact


@njit(inline="always")
def draw_normal(hi, lo, inc_hi, inc_lo):
    """``Generator.standard_normal()`` (NumPy's ziggurat) from the state (hi, lo): (value, hi, lo) after it."""
    while True:
        hi, lo = lcg_step(hi, lo, inc_hi, inc_lo)
        r = output(hi, lo)
        idx = np.intp(r & np.uint64(0xFF))
        r >>= np.uint64(8)
        sign = r & _ONE
        rabs = (r >> _ONE) & np.uint64(0x000FFFFFFFFFFFFF)
        x = np.float64(np.int64(rabs)) * _WI[idx]  # < 2⁵²: the (cheaper) signed conversion is exact
        if sign:
            x = -x
        if rabs < _KI[idx]:
            return x, hi, lo
        if idx == 0:
            while True:
                u, hi, lo = draw_double(hi, lo, inc_hi, inc_lo)
                xx = -ziggurat_nor_inv_r * np.log1p(-u)
                u, hi, lo = draw_double(hi, lo, inc_hi, inc_lo)
                yy = -np.log1p(-u)
                if yy + yy > xx * xx:
                    return (-(ziggurat_nor_r + xx) if (rabs >> np.uint64(8)) & _ONE else ziggurat_nor_r + xx), hi, lo
        else:
            u, hi, lo = draw_double(hi, lo, inc_hi, inc_lo)
            if (_FI[idx - 1] - _FI[idx]) * u + _FI[idx] < np.exp(-0.5 * x * x):
                return x, hi, lo


@njit(inline="always")
def fill_standard_normal(states, row, out) -> None:
    """``out[:] = Generator.standard_normal(out.size)`` from ``states[row]``, which advances (the state stays in
    registers meanwhile: a store and reload per draw would lengthen the chain from one draw to the next)."""
    hi, lo, inc_hi, inc_lo = states[row, STATE_HI], states[row, STATE_LO], states[row, INC_HI], states[row, INC_LO]
    for i in range(out.size):
        out[i], hi, lo = draw_normal(hi, lo, inc_hi, inc_lo)
    states[row, STATE_HI], states[row, STATE_LO] = hi, lo


@njit(inline="always")
def fill_random(states, row, out) -> None:
    """``out[:] = Generator.random(out.size)`` from ``states[row]``, which advances."""
    hi, lo, inc_hi, inc_lo = states[row, STATE_HI], states[row, STATE_LO], states[row, INC_HI], states[row, INC_LO]
    for i in range(out.size):
        out[i], hi, lo = draw_double(hi, lo, inc_hi, inc_lo)
    states[row, STATE_HI], states[row, STATE_LO] = hi, lo
