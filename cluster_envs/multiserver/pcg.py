"""NumPy's ``PCG64`` with its ``random()`` and ``standard_normal()`` draws, on states held in an array.

The batched envs draw for B copies per step. Reaching B ``np.random.Generator`` objects (one pointer chase and a
function-pointer call per draw, into B scattered Python objects) cost more than the draws; here the copies' states
sit side by side in a ``uint64`` array and a draw is inlined. The values are NumPy's, bit for bit: the same 128-bit
LCG step and XSL-RR output (``pcg64.h``), ``next_double`` = ``(next_uint64 >> 11) · 2⁻⁵³``, and the same ziggurat
for normals (NumPy's ``random_standard_normal``, whose tables numba ships; numba's own Generator support uses them).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

STATE_HI, STATE_LO, INC_HI, INC_LO = range(4)  # a state row: the LCG state and increment, 128 bits each
WORDS = 4
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
    return np.array([s >> 64, s & (2**64 - 1), inc >> 64, inc & (2**64 - 1)], dtype=np.uint64)


@intrinsic
def _lcg_step(typingctx, state_hi, state_lo, inc_hi, inc_lo):
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
def _output(hi, lo):
    """XSL-RR: the state's halves xor-ed, rotated right by its top six bits."""
    value, rotation = hi ^ lo, hi >> _58
    return (value >> rotation) | (value << ((np.uint64(64) - rotation) & _63))


@njit(inline="always")
def _double(hi, lo, inc_hi, inc_lo):
    """``Generator.random()`` from the state (hi, lo): (value, hi, lo) after the step."""
    hi, lo = _lcg_step(hi, lo, inc_hi, inc_lo)
    return np.float64(np.int64(_output(hi, lo) >> _11)) * _TO_DOUBLE, hi, lo  # < 2⁵³: signed conversion is exact


@njit(inline="always")
def _normal(hi, lo, inc_hi, inc_lo):
    """``Generator.standard_normal()`` (NumPy's ziggurat) from the state (hi, lo): (value, hi, lo) after it."""
    while True:
        hi, lo = _lcg_step(hi, lo, inc_hi, inc_lo)
        r = _output(hi, lo)
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
                u, hi, lo = _double(hi, lo, inc_hi, inc_lo)
                xx = -ziggurat_nor_inv_r * np.log1p(-u)
                u, hi, lo = _double(hi, lo, inc_hi, inc_lo)
                yy = -np.log1p(-u)
                if yy + yy > xx * xx:
                    return (-(ziggurat_nor_r + xx) if (rabs >> np.uint64(8)) & _ONE else ziggurat_nor_r + xx), hi, lo
        else:
            u, hi, lo = _double(hi, lo, inc_hi, inc_lo)
            if (_FI[idx - 1] - _FI[idx]) * u + _FI[idx] < np.exp(-0.5 * x * x):
                return x, hi, lo


@njit(inline="always")
def fill_standard_normal(states, row, out) -> None:
    """``out[:] = Generator.standard_normal(out.size)`` from ``states[row]``, which advances (the state stays in
    registers meanwhile: a store and reload per draw would lengthen the chain from one draw to the next)."""
    hi, lo, inc_hi, inc_lo = states[row, STATE_HI], states[row, STATE_LO], states[row, INC_HI], states[row, INC_LO]
    for i in range(out.size):
        out[i], hi, lo = _normal(hi, lo, inc_hi, inc_lo)
    states[row, STATE_HI], states[row, STATE_LO] = hi, lo


@njit(inline="always")
def fill_random(states, row, out) -> None:
    """``out[:] = Generator.random(out.size)`` from ``states[row]``, which advances."""
    hi, lo, inc_hi, inc_lo = states[row, STATE_HI], states[row, STATE_LO], states[row, INC_HI], states[row, INC_LO]
    for i in range(out.size):
        out[i], hi, lo = _double(hi, lo, inc_hi, inc_lo)
    states[row, STATE_HI], states[row, STATE_LO] = hi, lo
