"""Resource guards of the exact oracles: estimate a solve's memory and time from the instance
before running it, and refuse with a ``ValueError`` naming the keywords to change when an estimate exceeds a limit.

Three solvers are guarded (estimates in their own modules, measured against real runs in docs/robustness.md):

* the knapsack DP of ``ClusterMultiServer-v0``'s regret oracle (:func:`cluster_envs.multiserver.knapsack.estimate`),
  checked at construction for the worst arrival pattern (every port that can have a job);
* the MILP of ``ClusterGang-v0``'s regret oracle (:func:`cluster_envs.multiserver.gang.milp_estimate`), likewise;
* the convex program of ``ClusterApprox-v1``'s offline oracle (:func:`cluster_envs.approx.model.oracle_estimate`),
  checked at construction on the instance of ``instance_seed`` and again at every reset on the drawn instance.

The limits are constants, not keywords: every guarded oracle has a keyword that turns it off
(``compute_regret=False``), which the message names with the size keywords. Callers
of the solvers themselves (scripts) can pass other limits to :func:`check`.
"""

from __future__ import annotations

from dataclasses import dataclass

MEMORY_LIMIT = 2 * 2**30
"""Bytes one solve may allocate (2 GiB: a tenth of a 20 GiB workstation, well above every preset's need)."""

ORACLE_TIME_LIMIT = 1.0
"""Estimated seconds of one per-slot oracle solve (knapsack DP, gang MILP). The oracle solves once per arrival
pattern (up to 2^|L|), on the step that first meets the pattern: 1 s keeps a step interactive."""

EPISODE_ORACLE_TIME_LIMIT = 600.0
"""Estimated seconds of ``ClusterApprox-v1``'s offline oracle program, solved once per reset (10 min, so that the
default preset's program stays allowed)."""


@dataclass(frozen=True)
class Estimate:
    """A solve's predicted peak allocation (bytes) and run time (seconds), with the size that drives them."""

    memory: float
    seconds: float
    size: str  # e.g. "|E| = 320 edges, capacity box 961 x 961 x 961"


def check(estimate: Estimate, what: str, remedy: str, *, memory_limit: float = MEMORY_LIMIT,
          time_limit: float = ORACLE_TIME_LIMIT) -> None:  # fmt: skip
    """``ValueError`` if ``estimate`` exceeds a limit: names ``what`` (the solver), the estimate, the limits and
    ``remedy`` (the keywords to change)."""
    if estimate.memory <= memory_limit and estimate.seconds <= time_limit:
        return
    raise ValueError(
        f"{what} would need about {estimate.memory / 2**30:.3g} GiB and {estimate.seconds:.3g} s per solve "
        f"({estimate.size}); the limits are {memory_limit / 2**30:.3g} GiB and {time_limit:.3g} s "
        f"(cluster_envs.common.guards). {remedy}"
    )
