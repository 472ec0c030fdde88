"""The Alibaba GPU cluster trace of 2023 behind the ``alibaba_gpu_2023`` presets, read from a folder the user names.

The trace (Weng et al., "Beware of Fragmentation", USENIX ATC '23; github.com/alibaba/clusterdata) is not
shipped: ``trace_dir`` names a folder holding its CSVs in the public schema, of which two are read:

* ``openb_node_list_all_node.csv`` (1,523 nodes): ``cpu_milli``, ``memory_mib``, ``gpu`` (whole GPUs);
* ``openb_pod_list_default.csv`` (8,152 pods): ``cpu_milli``, ``memory_mib``, ``num_gpu``, ``gpu_milli`` (the
  share of one GPU a GPU-sharing pod asks for), ``qos``, ``creation_time`` and ``deletion_time`` (seconds).

Requests and capacities are kept in CPU cores, GiB and GPUs (a pod asks ``num_gpu · gpu_milli / 1000`` GPUs).

**Time.** Both settings replay the trace in ``horizon`` equal slots. The window starts at the 1 % quantile
of the creation times (``START_QUANTILE``) and ends at the last creation: 23 of the trace's first 82 pods were
created days to months before the rest, and stretching the window over them would leave three quarters of the
slots empty. A pod created in the window arrives in slot ``⌊(creation − start) / length⌋``; a pod's
running demand is its request times the part of each slot between its creation and deletion.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cluster_envs.common.traces import read_columns, trace_folder

NAME = "alibaba_gpu_2023"
NODE_FILE = "openb_node_list_all_node.csv"
POD_FILE = "openb_pod_list_default.csv"
NODE_COLUMNS = {"cpu_milli": float, "memory_mib": float, "gpu": float}
POD_COLUMNS = {"cpu_milli": float, "memory_mib": float, "num_gpu": float, "gpu_milli": float, "qos": str,
               "creation_time": float, "deletion_time": float}  # fmt: skip
RESOURCES = ("cpu", "memory", "gpu")  # the device types k = 0, 1, 2
START_QUANTILE = 0.01
# The largest request or capacity field accepted, in the file's own units (milli-cores, MiB, GPUs, milli-GPUs): the
# public trace's largest is 1,048,576 MiB; a thousand times more is no real node or pod, and keeps every sum finite
MAX_FIELD = 1e9
# The amount columns of each file; the first three give RESOURCES (a pod's GPUs are num_gpu · gpu_milli / 1000)
AMOUNT_COLUMNS = {NODE_FILE: ("cpu_milli", "memory_mib", "gpu"),
                  POD_FILE: ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")}  # fmt: skip
HOW_TO_PASS = f"pass trace_dir=<folder with the Alibaba GPU 2023 CSVs {NODE_FILE} and {POD_FILE}>"


@dataclass(frozen=True, eq=False)
class GpuTrace:
    """The columns the presets use: node capacities and pod requests as (3, n) arrays in cores, GiB and GPUs."""

    node_capacity: np.ndarray  # (3, n_nodes)
    pod_request: np.ndarray  # (3, n_pods)
    qos: np.ndarray  # (n_pods,) str
    created: np.ndarray  # (n_pods,) seconds
    deleted: np.ndarray  # (n_pods,) seconds
    folder: Path  # where the files were read, for errors that name a file's line

    def field(self, file: str, resource: int, index: int) -> str:
        """Where ``file``'s record ``index`` (a node or a pod, 0-based) gives ``RESOURCES[resource]``."""
        column = "num_gpu × gpu_milli" if (file, resource) == (POD_FILE, 2) else AMOUNT_COLUMNS[file][resource]
        return f"{str(self.folder / file)!r} line {index + 2} column {column!r}"

    def window(self, horizon: int) -> tuple[float, float]:
        """``(start, slot length)`` of the replay in ``horizon`` slots (see the module docstring)."""
        start = float(np.quantile(self.created, START_QUANTILE))
        span = float(self.created.max()) - start
        return start, (span if span > 0 else 1.0) * (1 + 1e-12) / horizon  # the last creation falls in the last slot

    def arrival_slots(self, horizon: int) -> np.ndarray:
        """Per pod, the 0-based slot of its creation, or -1 for a pod created before the window."""
        start, length = self.window(horizon)
        slots = np.floor((self.created - start) / length).astype(np.int64)
        return np.where(self.created < start, -1, np.minimum(slots, horizon - 1))

    def running_demand(self, weights: np.ndarray, horizon: int) -> np.ndarray:
        """``Σ_pods weight · (time alive in slot t) / length`` per slot, shape (horizon,): with a pod's GPUs as
        weights, the GPUs it holds on average over each slot."""
        start, length = self.window(horizon)
        bounds = length * np.arange(horizon + 1)  # times from the window's start: smaller sums, less rounding
        alive = _alive_integral(self.created - start, weights, bounds) - _alive_integral(
            self.deleted - start, weights, bounds
        )
        return np.maximum(np.diff(alive) / length, 0.0)  # rounding can leave -1e-12 where nothing runs


def _alive_integral(times: np.ndarray, weights: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``Σ_i w_i · max(b − times_i, 0)`` at every bound ``b``, by sorting (no pods × bounds matrix)."""
    order = np.argsort(times, kind="stable")
    times, weights = times[order], weights[order]
    cum_w = np.concatenate([[0.0], np.cumsum(weights)])
    cum_wt = np.concatenate([[0.0], np.cumsum(weights * times)])
    before = np.searchsorted(times, bounds, side="right")
    return cum_w[before] * bounds - cum_wt[before]


def load_gpu_trace(trace_dir: str | os.PathLike | None) -> GpuTrace:
    """Read the node and pod CSVs of ``trace_dir``; a ``ValueError`` naming the file and its expected columns
    when one is missing or malformed, and the file, line and column of a request or capacity outside
    ``[0, MAX_FIELD]`` or of a deletion before its creation."""
    folder = trace_folder(trace_dir, NAME, HOW_TO_PASS)
    nodes = read_columns(folder / NODE_FILE, "trace_dir", NODE_COLUMNS)
    pods = read_columns(folder / POD_FILE, "trace_dir", POD_COLUMNS)
    for file, table in ((NODE_FILE, nodes), (POD_FILE, pods)):
        for column in AMOUNT_COLUMNS[file]:
            bad = np.flatnonzero((table[column] < 0) | (table[column] > MAX_FIELD))
            if bad.size:
                raise ValueError(
                    f"trace_dir: {str(folder / file)!r} line {bad[0] + 2} column {column!r} is "
                    f"{table[column][bad[0]]:g} ({len(bad)} such row(s)); allowed: [0, {MAX_FIELD:.0e}]"
                )
    node_capacity = np.stack([nodes["cpu_milli"] / 1000, nodes["memory_mib"] / 1024, nodes["gpu"]])
    pod_request = np.stack(
        [pods["cpu_milli"] / 1000, pods["memory_mib"] / 1024, pods["num_gpu"] * pods["gpu_milli"] / 1000]
    )
    created, deleted = pods["creation_time"], pods["deletion_time"]
    late = np.flatnonzero(deleted < created)
    if late.size:  # non-finite times were refused by read_columns
        raise ValueError(
            f"trace_dir: {str(folder / POD_FILE)!r} has pods deleted before their creation (lines "
            f"{(late[:5] + 2).tolist()}); columns creation_time, deletion_time; allowed: deletion_time ≥ creation_time"
        )
    return GpuTrace(node_capacity, pod_request, pods["qos"], created, deleted, folder)
