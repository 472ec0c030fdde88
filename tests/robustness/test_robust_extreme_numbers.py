"""Extreme numbers for every numeric keyword of every id (issue 28): checked as numbers before any conversion, a
``ValueError`` naming the keyword and the allowed range, never an ``OverflowError``, a ``MemoryError`` or a hang."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cluster_envs.common.domains import MAX_SIZE, AnyOf, Number

from .robust_common import IDS

EXTREMES = {
    "10**400": 10**400,
    "-10**400": -(10**400),
    "int64 max": np.int64(2**63 - 1),
    "int64 min": np.int64(-(2**63)),
    "uint64 max": np.uint64(2**64 - 1),
    "1e308": 1e308,
    "MAX_SIZE + 1": MAX_SIZE + 1,
}


def numeric_keywords(env_id: str) -> list[tuple[str, Number]]:
    domains = type(gym.make(env_id).unwrapped.config).DOMAINS
    found = []
    for name, domain in domains.items():
        options = domain.options if isinstance(domain, AnyOf) else (domain,)
        found += [(name, option) for option in options if isinstance(option, Number)][:1]
    return found


@pytest.mark.parametrize("env_id", IDS)
def test_extreme_numbers_are_refused_by_name_or_accepted_whole(env_id):
    for name, domain in numeric_keywords(env_id):
        for label, value in EXTREMES.items():
            try:
                env = gym.make(env_id, **{name: value})
            except ValueError as err:
                assert name in str(err), f"{env_id} {name}={label}: {err}"
                continue
            stored = _entries(getattr(env.unwrapped.config, name))  # (a config may spread a scalar per class)
            assert all(type(x) in (int, float) for x in stored), f"{env_id} {name}={label} stored as {stored!r:.80}"
            assert domain.ceiling is None or max(stored) <= domain.ceiling, f"{env_id} {name}={label}"


@pytest.mark.parametrize("env_id", IDS)
def test_minus_zero_and_an_int_for_a_real_are_stored_as_floats(env_id):
    for name, domain in numeric_keywords(env_id):
        if domain.integer:
            continue
        for value in (-0.0, 1):
            try:
                env = gym.make(env_id, **{name: value})
            except ValueError:
                continue  # outside this keyword's range (or a joint constraint)
            stored = _entries(getattr(env.unwrapped.config, name))
            assert all(type(x) is float and not np.signbit(x) for x in stored), f"{env_id} {name}={value!r}: {stored}"


@pytest.mark.parametrize(
    ("env_id", "kwargs", "keyword"),
    [
        ("ClusterBilinear-v0", {"num_server_classes": 10**9}, "num_server_classes"),
        ("ClusterBilinear-v0", {"horizon": 10**8}, "horizon"),
        ("ClusterApprox-v1", {"horizon": np.int64(2**63 - 1)}, "horizon"),
        ("ClusterSLA-v1", {"n_users": 10**400}, "n_users"),
    ],
)
def test_a_size_that_would_exhaust_memory_is_refused_at_construction_by_name(env_id, kwargs, keyword):
    with pytest.raises(ValueError, match=keyword):
        gym.make(env_id, **kwargs)


def _entries(value) -> tuple:
    return tuple(value) if isinstance(value, tuple) else (value,)


SECOND_KERNEL_PROBE = """
import gc, json, gymnasium as gym, cluster_envs
from numba.core.registry import CPUDispatcher

def signatures():
    return {f"{d.py_func.__module__}.{d.py_func.__qualname__}": len(d.signatures) for d in gc.get_objects()
            if isinstance(d, CPUDispatcher) and d.py_func.__module__.startswith("cluster_envs")}

found = []
for noise_std in (1.0, 1):
    env = gym.make("ClusterBilinear-v0", noise_std=noise_std)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    found.append(signatures())
print(json.dumps(found))
"""


def test_an_int_for_a_real_compiles_no_second_kernel():
    """ClusterBilinear-v0 with ``noise_std=1`` compiled a second kernel for the int (19-25 s, issue 28). In a fresh
    interpreter, so that no other test's kernels are in the counts."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SECOND_KERNEL_PROBE], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    after_float, after_int = json.loads(done.stdout.splitlines()[-1])
    assert {k: (n, after_int[k]) for k, n in after_float.items() if after_int.get(k, n) > n} == {}
