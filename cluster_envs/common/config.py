"""Typed env configuration: a frozen dataclass built from a named preset plus keyword overrides.

Every env takes ``preset=...`` and keyword overrides. An unknown keyword raises :class:`UnexpectedKeywordError`
("unexpected keyword argument 'x'", both the ``TypeError`` Python raises for a wrong keyword, which clients such as
TorchRL's ``GymEnv`` catch to drop an optional keyword, and a ``ValueError`` like every other refused setting); an
unknown preset raises a ``ValueError``. Both name the offending argument and list what is allowed, before anything
is built. Every setting's default preset is named ``default``; nothing has been released, so no keyword or preset
has an old name.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

C = TypeVar("C")


class UnexpectedKeywordError(TypeError, ValueError):
    """An unknown keyword argument: a ``TypeError`` as Python's own, and a ``ValueError`` as every refused setting."""


def build_config(
    config_cls: type[C], presets: Mapping[str, Mapping[str, Any]], preset: str, overrides: Mapping[str, Any]
) -> C:
    """Return ``config_cls(**presets[preset] | overrides)`` after checking the names."""
    if preset not in presets:
        raise ValueError(f"preset={preset!r} is not a known preset; allowed: {sorted(presets)}")
    allowed = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        listed = sorted(allowed | {"preset", "render_mode"})  # the constructor's own keywords are allowed too
        names = ", ".join(repr(name) for name in unknown)
        raise UnexpectedKeywordError(f"unexpected keyword argument {names}; allowed: {listed}")
    return config_cls(**{**presets[preset], **overrides})


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of {list(allowed)}")


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real (or integer) number in the given interval."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be {'an integer' if integer else 'a finite number'}, got {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        interval = (
            f"{'(' if low_open else '['}{'-inf' if low is None else low}, "
            f"{'inf' if high is None else high}{')' if high_open else ']'}"
        )
        raise ValueError(f"{name}={value!r} is out of range; allowed: {interval}")


def check_reset_options(options: Any, allowed: Iterable[str] = ()) -> dict[str, Any]:
    """``reset``'s ``options`` as a dict (``None`` gives ``{}``), or a ``ValueError`` naming them. Call it before
    ``super().reset(seed=...)``, so that a rejected reset leaves the episode and the seed stream alone."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; allowed: {sorted(allowed)}")
    return options
