"""Eq. 1's allocation under either service model: the expected number of servers that serve, E[N_ij | Q(t), law].

Eq. 1 credits Σ_ij r_ij y_ij(t), y_ij(t) being the expected number of class-j servers working on class-i jobs in
slot t (spec §2.3): the expectation of the realised selections N_ij over the slot's randomised assignment, given
the queue and the decision. Under ``service_model="paper"`` every selection is paid, so E[N_ij | y] = y_ij and the
allocation requested is the allocation served. Under ``"exclusive"`` a server whose job another server took first
idles, so only the first of a job's selectors (in the slot's uniform random order) serves: a class-j server that
selects a job serves with probability E[1/(1 + S)], S the number of the other available servers selecting it, and
E[N_ij | Q, y] ≤ y_ij. :func:`class_reward` and :func:`job_reward` give Σ_ij r_ij E[N_ij | ·] for the two
randomised samplers of :mod:`~cluster_envs.bilinear.kernel` (``select_classes``, ``select_jobs``), exactly (the law
of S is a convolution of Bernoullis); the servers' choices of ``server_choice`` are the simulator's.
"""

from __future__ import annotations

from cluster_envs.common.numba_cache import cached_njit


@cached_njit
def first_share(work, caps_now, j):
    """E[1/(1 + S)]: the probability that a class-j server selecting a job is the first of its selectors in a
    uniform random order, where S, the other available servers selecting the job, is a sum of independent
    Bernoullis: n_j(t) − 1 of probability p_j and n_g(t) of probability p_g for g ≠ j. p (J,) is ``work[:J]``; the
    law of S is built in ``work[J : J + n(t)]``."""
    n_cols = caps_now.size
    work[n_cols], size = 1.0, 1
    for g in range(n_cols):
        p = min(work[g], 1.0)
        if p <= 0.0:
            continue  # a Bernoulli(0) leaves the law of S as it is
        for _ in range(caps_now[g] - (1 if g == j else 0)):  # convolve with one Bernoulli(p)
            work[n_cols + size] = 0.0
            for s in range(size, 0, -1):
                work[n_cols + s] = work[n_cols + s] * (1.0 - p) + work[n_cols + s - 1] * p
            work[n_cols] *= 1.0 - p
            size += 1
    share = 0.0
    for s in range(size):
        share += work[n_cols + s] / (s + 1)
    return share


@cached_njit
def _job_reward(r, c, caps_now, exclusive, work):
    """Σ_j r_cj E[class-j servers serving one class-c job], its per-server selection probabilities p (J,) in
    ``work[:J]``: n_j(t) p_j each under ``"paper"``, times :func:`first_share` under ``"exclusive"``."""
    total = 0.0
    for j in range(caps_now.size):
        if caps_now[j] > 0 and work[j] > 0.0:
            total += r[c, j] * caps_now[j] * work[j] * (first_share(work, caps_now, j) if exclusive else 1.0)
    return total


@cached_njit
def class_reward(r, y, queue, caps_now, exclusive, work):
    """Σ_ij r_ij E[N_ij | Q, y] when each of the n_j(t) available class-j servers selects class i with probability
    y_ij / n_j(t) and then a uniform waiting job of it (Alg. 1; ``select_classes``): per job p_ij = y_ij/(n_j(t) Q_i).
    ``work``: scratch of at least J + n(t) floats."""
    total = 0.0
    for i in range(queue.size):
        if queue[i] <= 0:
            continue
        for j in range(caps_now.size):
            work[j] = y[i, j] / (max(caps_now[j], 1) * queue[i])
        total += queue[i] * _job_reward(r, i, caps_now, exclusive, work)
    return total


@cached_njit
def job_reward(r, x, job_classes, n_jobs, caps_now, exclusive, work):
    """Σ_ij r_ij E[N_ij | x] when each available class-j server selects waiting job k with probability
    x_kj / n_j(t) (``select_jobs``; x flat, jobs × J, the first ``n_jobs`` classes in ``job_classes``)."""
    n_cols, total = caps_now.size, 0.0
    for k in range(n_jobs):
        for j in range(n_cols):
            work[j] = x[k * n_cols + j] / max(caps_now[j], 1)
        total += _job_reward(r, job_classes[k], caps_now, exclusive, work)
    return total
