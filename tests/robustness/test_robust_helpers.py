"""The robustness helpers on every space type a future id may use (no registered env has all of them yet):
sampled actions are valid, corner actions are the corners they promise, and every bad action the adversarial
test insists on rejecting is truly invalid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium import spaces

from .robust_common import flatten, sample_action
from .test_robust_adversarial import REJECT, bad_actions
from .test_robust_hypothesis import corner_action

SPACES = {
    "box": spaces.Box(0.0, 1.0, (4,), np.float32),
    "box_2d_unbounded": spaces.Box(-np.inf, np.inf, (2, 3), np.float64),
    "box_int": spaces.Box(0, 5, (3,), np.int64),
    "discrete": spaces.Discrete(5, start=1),
    "multidiscrete": spaces.MultiDiscrete([3, 4, 2]),
    "multibinary": spaces.MultiBinary(4),
    "dict": spaces.Dict({"a": spaces.Box(0.0, 1.0, (2,), np.float32), "b": spaces.Discrete(3)}),
}


def _contains(space: spaces.Space, action) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # gymnasium warns when it casts a list
            return bool(space.contains(action))
    except Exception:  # noqa: BLE001  (a space that cannot even inspect the value does not contain it)
        return False


@pytest.mark.parametrize("name", sorted(SPACES))
def test_sampled_actions_are_valid_and_reproducible(name):
    space = SPACES[name]
    first = [sample_action(space, np.random.default_rng(3)) for _ in range(5)]
    again = [sample_action(space, np.random.default_rng(3)) for _ in range(5)]
    for a, b in zip(first, again, strict=True):
        assert _contains(space, a), f"{name}: sampled {a!r} outside {space}"
        np.testing.assert_array_equal(flatten(a), flatten(b))


@pytest.mark.parametrize("name", sorted(SPACES))
def test_actions_marked_reject_are_invalid(name):
    space = SPACES[name]
    cases = bad_actions(space, sample_action(space, np.random.default_rng(0)))
    assert any(kind == REJECT for _, _, kind in cases)
    valid_but_marked = [label for label, action, kind in cases if kind == REJECT and _contains(space, action)]
    assert not valid_but_marked, f"{name}: marked for rejection but valid: {valid_but_marked}"


CORNER_SPACES = ("box", "box_2d_unbounded", "box_int", "multidiscrete", "multibinary")


def _bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """The values ``corner_action`` uses for ``low`` and ``high`` (±1 stands in for an infinite Box bound)."""
    if isinstance(space, spaces.Box):
        return np.where(np.isfinite(space.low), space.low, -1.0), np.where(np.isfinite(space.high), space.high, 1.0)
    if isinstance(space, spaces.MultiDiscrete):
        return space.start + 0 * space.nvec, space.start + space.nvec - 1
    return np.zeros(space.shape), np.ones(space.shape)  # MultiBinary


@pytest.mark.parametrize("name", CORNER_SPACES)
def test_corner_actions_are_the_promised_corners(name):
    """``["low"]`` is the all-low action, ``["high"]`` the all-high one (all zeros / all ones for MultiBinary),
    ``["low", "high"]`` alternates; every corner action is valid."""
    space = SPACES[name]
    low, high = _bounds(space)
    rng = np.random.default_rng(0)
    for kinds in (["low"], ["high"], ["low", "high"], ["zero"], ["mid", "random"]):
        assert _contains(space, corner_action(space, rng, kinds)), f"{name}: {kinds} outside {space}"
    np.testing.assert_array_equal(corner_action(space, rng, ["low"]), low.astype(space.dtype))
    np.testing.assert_array_equal(corner_action(space, rng, ["high"]), high.astype(space.dtype))
    alternating = np.where(np.arange(low.size) % 2 == 0, low.ravel(), high.ravel()).reshape(space.shape)
    np.testing.assert_array_equal(corner_action(space, rng, ["low", "high"]), alternating.astype(space.dtype))
