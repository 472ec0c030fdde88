"""ClusterBilinear-v0's job arrivals replayed from the Azure LLM inference trace of 2023
(``arrivals="azure_llm_2023"``, read by :func:`cluster_envs.common.azure_llm.load_llm_trace` from ``trace_dir``).

**Jobs.** Every request of both services, in arrival order; a job's class is its service and its size class
within the service (the service's requests split at the quantiles of their tokens,
:meth:`~cluster_envs.common.azure_llm.LLMTrace.size_classes`): class ``s · sizes + c``, so ``num_job_classes``
must be twice the number of size classes.

**Time.** The trace's hour is cut into slots of ``SLOT_SECONDS``. The model admits at most one arrival per slot
(Sec. II), so a request that lands in a slot already holding one is admitted in the next free slot (a FIFO front
end; the trace's order is kept and no request is lost). An episode replays ``horizon`` consecutive slots of the
admitted sequence from an offset drawn from the episode's arrivals stream, so seeds see different windows.

**Rates.** The class rates λ_i are the admitted arrivals per slot over the whole trace, and ρ_i = λ_i / μ_i the
traffic the oracle LP (eq. 1) is solved with: privileged, as the oracle is; agents see neither.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from cluster_envs.common.azure_llm import HOW_TO_PASS, SERVICES, LLMTrace, load_llm_trace
from cluster_envs.common.fluid import capped_cumulative_work
from cluster_envs.common.traces import trace_folder

NAME = "azure_llm_2023"
# seconds per slot: the time compression of the preset, chosen by measurement so that the fluid servers are busy
# for the whole slot in at least half of the slots (docs/results/traces/report.md measures the share per preset)
SLOT_SECONDS = 0.1
BACKLOG_TOL = 1e-9  # relative to a slot's capacity: the rounding of the cumulative sums, not work left


@dataclass(frozen=True, eq=False)
class TraceArrivals:
    """The admitted arrival sequence: per slot of the whole trace the class of the job it admits, -1 for none."""

    classes: np.ndarray  # (slots,) int64
    n_classes: int

    @property
    def rates(self) -> np.ndarray:
        """λ_i: the admitted arrivals of class i per slot over the whole trace."""
        return np.bincount(self.classes[self.classes >= 0], minlength=self.n_classes) / self.classes.size

    def window(self, rng: np.random.Generator, horizon: int) -> np.ndarray:
        """``horizon + 1`` consecutive slots (the model's A(1) … A(T+1)) from an offset drawn from ``rng``
        (``horizon`` < the trace's slots: the config checks it)."""
        slots = horizon + 1
        start = int(rng.integers(self.classes.size - slots + 1))
        return self.classes[start : start + slots].copy()


def admitted_classes(trace: LLMTrace, n_sizes: int, slot_seconds: float = SLOT_SECONDS) -> np.ndarray:
    """Per slot of ``slot_seconds``, the class of the request admitted in it (-1: none): requests in arrival
    order, each in the first free slot at or after its own."""
    job_class = trace.service * n_sizes + trace.size_classes(n_sizes)
    wanted = np.floor(trace.arrival / slot_seconds).astype(np.int64)
    # the first free slot at or after each request's own: slot_k = max(wanted_k, slot_{k-1} + 1), a running max
    ranks = np.arange(wanted.size)
    slots = np.maximum.accumulate(wanted - ranks) + ranks
    out = np.full(int(slots[-1]) + 1, -1, dtype=np.int64)
    out[slots] = job_class
    return out


def trace_arrivals(trace_dir: str | os.PathLike | None, num_job_classes: int) -> TraceArrivals:
    """The admitted arrivals of the trace in ``trace_dir`` for ``num_job_classes`` classes (two per size class:
    one per service); a ``ValueError`` naming ``num_job_classes`` when it is odd. Read once per process for a
    folder and class count (every env of a run builds its config from it)."""
    folder = trace_folder(trace_dir, NAME, HOW_TO_PASS)
    return _trace_arrivals(str(folder.resolve()), num_job_classes)


@functools.lru_cache(maxsize=4)
def _trace_arrivals(folder: str, num_job_classes: int) -> TraceArrivals:
    if num_job_classes % len(SERVICES):
        raise ValueError(
            f"num_job_classes={num_job_classes} with arrivals={NAME!r}: allowed are multiples of {len(SERVICES)} "
            f"(each of the services {', '.join(SERVICES)} split into the same number of size classes)"
        )
    classes = admitted_classes(load_llm_trace(folder), num_job_classes // len(SERVICES))
    classes.flags.writeable = False  # shared by every env of the process
    return TraceArrivals(classes, num_job_classes)


def binding_share(arrivals: np.ndarray, mu: np.ndarray, n_servers: int) -> float:
    """The share of slots in which capacity binds: a fluid version of the n servers, each serving work at rate 1,
    fed with each arriving job's mean work 1/μ_i, still has work at the end of the slot (so every server was busy
    for the whole slot, whatever the schedule). Arrivals of -1 bring none."""
    work = np.where(arrivals >= 0, 1.0 / mu[np.maximum(arrivals, 0)], 0.0)
    backlog = np.cumsum(work) - capped_cumulative_work(work, n_servers)
    return float(np.mean(backlog > BACKLOG_TOL * n_servers))
