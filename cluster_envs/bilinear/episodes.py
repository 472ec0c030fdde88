"""Compiled episode starts of the batched ``ClusterBilinear-v0``: the draws of ``ClusterBilinearEnv.reset``.

A reset draws one entropy value from the env's generator and spawns six streams from it
(:func:`~cluster_envs.common.seeding.episode_streams`); the instance and the arrivals are drawn from two of them,
and the slot's draws continue the three next. :func:`draw_episodes` does the same for many copies at once
(:func:`~cluster_envs.bilinear.rng.spawned_state` is NumPy's ``SeedSequence`` and ``PCG64`` seeding), and
:func:`start_episodes` writes the state a fresh simulator starts from into the copies' rows. The batched env's
equality test against B single envs checks every draw.
"""

from __future__ import annotations

from cluster_envs.bilinear import kernel
from cluster_envs.bilinear.rng import next_double, spawned_state
from cluster_envs.common.numba_cache import cached_njit

INSTANCE_CHILD, ARRIVALS_CHILD = range(2)  # children 0 and 1 of the reset's SeedSequence; 2, 3, 4: the kernel's streams
# the arrays start_episodes takes after the copies, in its order
START_ARRAYS = ("arrivals", "jobs", "job_stats", "counters", "slot_stats", "stats", "obs")


@cached_njit
def draw_episodes(copies, entropies, cdf, total, streams, u, v, theta, rng, arrivals):
    """For copy c = ``copies[i]`` with entropy ``entropies[i]``: its instance stream's U[0, 1] features into
    ``u[i]``, ``v[i]`` and ``theta[i]`` (``unit_rows`` normalises them), its arrivals into ``arrivals[c]``
    (``sample_arrivals``: a coin < ``total`` per slot, then classes by ``Generator.choice`` with cumulative
    probabilities ``cdf``) and its slot streams' states into ``rng[c]``. ``streams``: scratch (1, 2, 6) uint64."""
    slots = arrivals.shape[1]
    for i in range(copies.size):
        c, entropy = copies[i], entropies[i]
        spawned_state(entropy, INSTANCE_CHILD, streams, 0, 0)
        spawned_state(entropy, ARRIVALS_CHILD, streams, 0, 1)
        for k in range(rng.shape[1]):
            spawned_state(entropy, 2 + k, rng, c, k)
        for a in range(u.shape[1]):
            for q in range(u.shape[2]):
                u[i, a, q] = next_double(streams, 0, 0)
        for a in range(v.shape[1]):
            for q in range(v.shape[2]):
                v[i, a, q] = next_double(streams, 0, 0)
        for q in range(theta.shape[1]):
            theta[i, q] = next_double(streams, 0, 0)
        for t in range(slots):
            arrivals[c, t] = 1 if next_double(streams, 0, 1) < total else 0
        for t in range(slots):
            x, cls = next_double(streams, 0, 1), 0
            while cls < cdf.size and cdf[cls] <= x:  # searchsorted(cdf, x, side="right")
                cls += 1
            arrivals[c, t] = cls if arrivals[c, t] else -1


@cached_njit
def start_episodes(copies, arrivals, jobs, job_stats, counters, slot_stats, stats, obs):
    """The rows of each copy in ``copies`` as a fresh simulator has them: no slot run, Q(1) = A(1)."""
    for i in range(copies.size):
        c = copies[i]
        counters[c], slot_stats[c], stats[c], obs[c], jobs[c], job_stats[c] = 0, 0.0, 0.0, 0.0, 0, 0.0
        if arrivals[c, 0] >= 0:  # the observation: Q(1), then no slot's N and Σξ yet
            jobs[c, 0, 0] = arrivals[c, 0]
            counters[c, kernel.N_JOBS] = counters[c, kernel.NEXT_ID] = 1
            obs[c, arrivals[c, 0]] = 1.0
