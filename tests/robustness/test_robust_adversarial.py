"""Adversarial input for every registered id, preset and action mode: bad actions and out-of-range kwargs.

Every bad action must either be rejected with a ``ValueError`` naming ``action`` (and then leave the env
exactly as it was: it continues like an untouched deepcopy) or be handled (observation inside its space,
finite float reward, no numpy warning). Classes that are never valid (NaN, inf, wrong shape, None, strings,
dicts, complex numbers, out-of-range or fractional discrete choices) must be rejected. The bad actions are
built from each env's action space, so a new id is covered without editing this file.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from robust_common import IDS, action_modes, config_fields, presets, run_actions, sample_action, step_record

REJECT, EITHER = "reject", "handled or rejected"
# Action forms chosen by a kwarg other than preset / action_mode.
EXTRA_CASES = {"ClusterApprox-v1": [{"capacity": 2, "parallelism": 4}]}  # Sec. V-C: MultiBinary((K, M))


def _cases() -> list[tuple[str, dict]]:
    """Per id: the default, each preset with an action space not seen yet (resets can be slow), and each
    ``action_mode`` when the env module lists them in ``ACTION_MODES`` (the config convention)."""
    cases = []
    for env_id in IDS:
        seen = {repr(gym.make(env_id).action_space)}
        cases.append((env_id, {}))
        for preset in presets(env_id):
            space = repr(gym.make(env_id, preset=preset).action_space)
            if space not in seen:
                seen.add(space)
                cases.append((env_id, {"preset": preset}))
        default_mode = getattr(gym.make(env_id).unwrapped.config, "action_mode", None)
        cases += [(env_id, {"action_mode": m}) for m in action_modes(env_id) if m != default_mode]
        cases += [(env_id, kwargs) for kwargs in EXTRA_CASES.get(env_id, [])]
    return cases


CASES = _cases()


def _box_bad(space: spaces.Box, valid: np.ndarray) -> list[tuple[str, Any, str]]:
    def with_first(value: float, dtype=np.float64) -> np.ndarray:
        out = valid.astype(dtype)
        out.flat[0] = value
        return out

    size = valid.size
    return [
        ("nan entry", with_first(np.nan), REJECT),
        ("+inf entry", with_first(np.inf), REJECT if np.isfinite(space.high).all() else EITHER),
        ("-inf entry", with_first(-np.inf), REJECT if np.isfinite(space.low).all() else EITHER),
        ("all nan", np.full(space.shape, np.nan), REJECT),
        ("complex", valid.astype(np.complex128) + 1j, REJECT),
        ("huge 1e308", np.full(space.shape, 1e308), EITHER),
        ("-huge -1e308", np.full(space.shape, -1e308), EITHER),
        ("float32 max", np.full(space.shape, np.finfo(np.float32).max, dtype=np.float32), EITHER),
        ("one huge entry", with_first(1e308), EITHER),
        ("subnormal", np.full(space.shape, 5e-324), EITHER),
        ("negative", -np.abs(valid.astype(np.float64)) - 1.0, EITHER),
        ("all zeros", np.zeros(space.shape), EITHER),
        ("above high", np.where(np.isfinite(space.high), space.high + 1.0, 1e6), EITHER),
        ("below low", np.where(np.isfinite(space.low), space.low - 1.0, -1e6), EITHER),
        ("int dtype", np.round(valid).astype(np.int64), EITHER),
        ("bool dtype", valid > np.median(valid), EITHER),
        ("float16 dtype", valid.astype(np.float16), EITHER),
        ("object dtype", valid.astype(object), EITHER),
        ("wrong size +1", np.zeros(size + 1), REJECT),
        ("wrong size -1", np.zeros(size - 1), REJECT),
        ("extra axis", valid[None], REJECT),
        ("scalar", np.float64(valid.flat[0]), REJECT if size > 1 else EITHER),
        ("None", None, REJECT),
        ("list of None", [None] * size, REJECT),
        ("string", "0.5", REJECT),
        ("string array", np.array(["a"] * size), REJECT),
        ("numeric string array", np.full(space.shape, "1"), REJECT),
        ("dict", {"action": valid}, REJECT),
    ]


def _discrete_bad(space: spaces.Space, valid: np.ndarray) -> list[tuple[str, Any, str]]:
    valid = np.asarray(valid)
    nvec = np.asarray(space.nvec if isinstance(space, spaces.MultiDiscrete) else space.n)
    start = np.asarray(space.start)

    def with_first(value: Any, dtype=np.float64) -> np.ndarray:
        out = valid.astype(dtype).copy()
        out.flat[0] = value
        return out

    return [
        ("nan entry", with_first(np.nan), REJECT),
        ("inf entry", with_first(np.inf), REJECT),
        ("fractional", with_first(float(valid.flat[0]) + 0.5), REJECT),
        ("above range", with_first(int((start + nvec).flat[0]), np.int64), REJECT),
        ("below range", with_first(int(start.flat[0]) - 1, np.int64), REJECT),
        ("huge", with_first(1e308), REJECT),
        ("complex", valid.astype(np.complex128) + 1j, REJECT),
        ("integral floats", valid.astype(np.float64), EITHER),
        ("int8 dtype", valid.astype(np.int8) if nvec.max() < 127 else valid, EITHER),
        ("wrong size +1", np.zeros(valid.size + 1, dtype=np.int64), REJECT),
        ("extra axis", valid[None], REJECT),
        ("None", None, REJECT),
        ("string", "1", REJECT),
    ]


def bad_actions(space: spaces.Space, valid: Any) -> list[tuple[str, Any, str]]:
    """(label, action, expectation) for every class of bad input that fits ``space``."""
    if isinstance(space, spaces.Box):
        return _box_bad(space, np.asarray(valid))
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        if isinstance(space, spaces.MultiBinary):
            space = spaces.MultiDiscrete(np.full(space.shape, 2))
        return _discrete_bad(space, valid)
    if isinstance(space, spaces.Dict):
        out = [("None", None, REJECT), ("missing key", dict(list(valid.items())[1:]), REJECT)]
        for key, sub in space.spaces.items():
            out += [(f"{key}: {label}", {**valid, key: bad}, kind) for label, bad, kind in bad_actions(sub, valid[key])]
        return out
    raise NotImplementedError(f"no bad actions for {space}; extend test_robust_adversarial.bad_actions")


def _strict_step(env: gym.Env, action: Any) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow or cast warning means the input was not really handled
        return env.step(action)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=[f"{e}-{k}" for e, k in CASES])
def test_bad_actions_are_rejected_or_handled(env_id, kwargs):
    env = gym.make(env_id, **kwargs).unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=11)
    run_actions(env, [sample_action(env.action_space, rng) for _ in range(3)])
    problems = []
    for label, bad, kind in bad_actions(env.action_space, sample_action(env.action_space, rng)):
        twin = copy.deepcopy(env)
        probe = [sample_action(env.action_space, rng) for _ in range(3)]
        try:
            obs, reward, *_ = _strict_step(env, bad)
        except ValueError as err:
            if "action" not in str(err):
                problems.append(f"{label}: ValueError does not name the action: {err}")
            after, untouched = run_actions(env, probe), run_actions(twin, probe)
            if any(not np.array_equal(a[0], b[0]) or a[1:] != b[1:] for a, b in zip(after, untouched, strict=True)):
                problems.append(f"{label}: the rejected step changed the env")
            continue
        except Exception as err:  # noqa: BLE001  (any other exception or warning is the finding)
            problems.append(f"{label}: {type(err).__name__}: {err}")
            env = twin
            continue
        if kind == REJECT:
            problems.append(f"{label}: accepted, but it is never a valid action")
        elif not env.observation_space.contains(obs) or type(reward) is not float or not math.isfinite(reward):
            problems.append(f"{label}: accepted with observation outside its space or reward {reward!r}")
        env = twin  # go on from a state no odd action has touched
    assert not problems, f"{env_id} ({kwargs}):\n  " + "\n  ".join(problems)


def _container_variants(space: spaces.Space, action: np.ndarray) -> dict[str, Any]:
    """The same valid action in other containers: float64, list, tuple and, for integer spaces, other integer
    dtypes (and bool for MultiBinary)."""
    variants = {"float64": action.astype(np.float64), "list": action.tolist(), "tuple": tuple(action.tolist())}
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        for dtype in (np.int8, np.uint8, np.int32, np.int64):
            variants[np.dtype(dtype).name] = action.astype(dtype)
    if isinstance(space, spaces.MultiBinary):
        variants["bool"] = action.astype(bool)
        variants["list of bools"] = action.astype(bool).tolist()
    return variants


@pytest.mark.parametrize("env_id", IDS)
def test_equal_actions_in_other_containers_give_the_same_step(env_id):
    """A valid action as float64, list, tuple, another integer dtype or bool (MultiBinary) is the same action
    as the space's own dtype."""
    env = gym.make(env_id).unwrapped
    assert isinstance(env.action_space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary))
    rng = np.random.default_rng(1)
    env.reset(seed=4)
    run_actions(env, [sample_action(env.action_space, rng) for _ in range(3)])
    action = sample_action(env.action_space, rng)
    while isinstance(env.action_space, spaces.MultiBinary) and np.unique(action).size < 2:
        action = sample_action(env.action_space, rng)  # both values, so a dropped or flipped bit shows
    reference = step_record(copy.deepcopy(env).step(action))
    for label, variant in _container_variants(env.action_space, action).items():
        got = step_record(copy.deepcopy(env).step(variant))
        np.testing.assert_array_equal(got[0], reference[0], err_msg=f"{env_id}: {label} action")
        assert got[1:] == reference[1:], f"{env_id}: {label} action stepped differently"


BAD_KWARG_VALUES = [math.nan, math.inf, -math.inf, -1, 0, 0.5, -0.5, "x"]


def _kwarg_cases() -> list:
    cases = []
    for env_id in IDS:
        for f in config_fields(gym.make(env_id)):
            default = f.default
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                continue  # numeric scalar kwargs only: the others have their own per-setting tests
            cases += [(env_id, f.name, value) for value in BAD_KWARG_VALUES]
    return cases


@pytest.mark.parametrize(("env_id", "name", "value"), _kwarg_cases())
def test_out_of_range_kwarg_is_named_or_works(env_id, name, value):
    try:
        env = gym.make(env_id, **{name: value})
    except ValueError as err:
        assert name in str(err), f"{env_id}: {name}={value!r} raised a ValueError that does not name it: {err}"
        return
    except Exception as err:  # noqa: BLE001
        pytest.fail(f"{env_id}: {name}={value!r} raised {type(err).__name__} instead of ValueError: {err}")
    assert not (isinstance(value, float) and not math.isfinite(value)), f"{env_id}: {name}={value!r} was accepted"
    assert not isinstance(value, str), f"{env_id}: {name}={value!r} was accepted"
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = _strict_step(env, sample_action(env.action_space, rng))
        assert env.observation_space.contains(obs) and math.isfinite(reward)
        if terminated or truncated:
            break
