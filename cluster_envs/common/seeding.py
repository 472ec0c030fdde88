"""Common random numbers: one independent stream per source of randomness.

An env's ``reset(seed=s)`` seeds ``self.np_random`` and then calls :func:`episode_streams`,
which spawns named children of one ``SeedSequence``. Because each exogenous source (instance,
arrivals, noise, ...) has its own stream and no stream is touched by the agent's actions, every
policy faces the same exogenous sequence for a given seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def episode_streams(np_random: np.random.Generator, names: Sequence[str]) -> dict[str, np.random.Generator]:
    """Draw one entropy value from the env's generator and spawn one generator per name."""
    return streams_from_entropy(int(np_random.integers(2**63)), names)


def streams_from_entropy(entropy: int, names: Sequence[str]) -> dict[str, np.random.Generator]:
    """The streams an episode with ``entropy`` gets (:func:`episode_streams` after its draw): a batched env that
    drew a copy's entropy itself rebuilds that copy's streams with it."""
    root = np.random.SeedSequence(int(entropy))
    return {
        name: np.random.Generator(np.random.PCG64(child))
        for name, child in zip(names, root.spawn(len(names)), strict=True)
    }
