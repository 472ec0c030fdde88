"""The Azure LLM inference trace of 2023 behind the ``azure_llm_2023`` presets, read from a folder the user names.

The trace (Patel et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024;
github.com/Azure/AzurePublicDataset, CC-BY 4.0) is not shipped: ``trace_dir`` names a folder holding its two CSVs,
one row per request of one hour (16 November 2023) of two production services:

* ``AzureLLMInferenceTrace_code.csv`` (8,819 requests, the coding assistant) and
* ``AzureLLMInferenceTrace_conv.csv`` (19,366 requests, the conversation service), each with the columns
  ``TIMESTAMP`` (the invocation time, ``2023-11-16 18:17:03.9799600``), ``ContextTokens`` and
  ``GeneratedTokens`` (non-negative integers).

**Time.** The replay window runs from the first request of either service to the last and is cut into
``horizon`` equal slots; a request arrives in slot ``⌊(time − start) / length⌋``. A request's size is its
tokens, context plus generated: the work it brings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cluster_envs.common.traces import read_columns, trace_folder

NAME = "azure_llm_2023"
SERVICES = ("code", "conv")  # the file stems' suffixes, in the order of the presets' tenants
FILES = {service: f"AzureLLMInferenceTrace_{service}.csv" for service in SERVICES}
COLUMNS = {"TIMESTAMP": str, "ContextTokens": float, "GeneratedTokens": float}
HOW_TO_PASS = f"pass trace_dir=<folder with the Azure LLM inference 2023 CSVs {' and '.join(FILES.values())}>"


@dataclass(frozen=True, eq=False)
class LLMTrace:
    """Per request: its service (index into ``SERVICES``), arrival time in seconds from the window's start and
    tokens (context + generated), sorted by arrival."""

    service: np.ndarray  # (n,) int
    arrival: np.ndarray  # (n,) float seconds, 0 at the first request
    tokens: np.ndarray  # (n,) float

    @property
    def span(self) -> float:
        """Seconds from the first request to the last."""
        return float(self.arrival[-1])

    def arrival_slots(self, horizon: int) -> np.ndarray:
        """Per request, the 0-based slot of its arrival among ``horizon`` equal slots of the window."""
        length = (self.span if self.span > 0 else 1.0) * (1 + 1e-12) / horizon  # the last request is in the last slot
        return np.minimum(np.floor(self.arrival / length).astype(np.int64), horizon - 1)

    def size_classes(self, n_sizes: int) -> np.ndarray:
        """Per request, its size class 0..n_sizes-1 within its service: the service's requests split at the
        quantiles 1/n_sizes, 2/n_sizes, ... of their tokens (class 0 the smallest)."""
        classes = np.zeros(self.tokens.size, dtype=np.int64)
        for s in range(len(SERVICES)):
            mine = self.service == s
            cuts = np.quantile(self.tokens[mine], np.arange(1, n_sizes) / n_sizes)
            classes[mine] = np.searchsorted(cuts, self.tokens[mine], side="right")
        return classes

    def slot_tokens(self, n_sizes: int, horizon: int) -> np.ndarray:
        """Tokens arriving per tenant and slot, shape (2 · n_sizes, horizon): tenant ``s · n_sizes + c`` is service
        ``SERVICES[s]``'s size class ``c``."""
        tenant = self.service * n_sizes + self.size_classes(n_sizes)
        cell = tenant * horizon + self.arrival_slots(horizon)
        return np.bincount(cell, weights=self.tokens, minlength=len(SERVICES) * n_sizes * horizon).reshape(-1, horizon)


def _parse_times(stamps: np.ndarray, file: str) -> np.ndarray:
    """``TIMESTAMP`` strings as datetime64[ns]; a ``ValueError`` naming the file, line and column of a bad one."""
    try:
        return np.asarray(stamps, dtype="datetime64[ns]")
    except ValueError:
        pass
    for row, stamp in enumerate(stamps):  # find the bad row (only on error)
        try:
            np.datetime64(stamp, "ns")
        except ValueError:
            raise ValueError(
                f"trace_dir: {file} line {row + 2} column 'TIMESTAMP' is {str(stamp)!r}, not a time like "
                "'2023-11-16 18:17:03.9799600'"
            ) from None
    raise AssertionError("unreachable: numpy refused the column but accepted every stamp")


def load_llm_trace(trace_dir: str | os.PathLike | None) -> LLMTrace:
    """Read both services' CSVs from ``trace_dir``; a ``ValueError`` naming the file, line and column of what is
    missing or malformed (a missing folder or file, a missing column, a bad time, a negative or non-integer token
    count)."""
    folder = trace_folder(trace_dir, NAME, HOW_TO_PASS)
    services, times, tokens = [], [], []
    for s, file in enumerate(FILES.values()):
        table = read_columns(folder / file, "trace_dir", COLUMNS)
        for column in ("ContextTokens", "GeneratedTokens"):
            values = table[column]
            bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values != np.round(values)))
            if bad.size:
                raise ValueError(
                    f"trace_dir: {file} line {bad[0] + 2} column {column!r} is {float(values[bad[0]])!r}; "
                    "allowed: a non-negative whole number of tokens"
                )
        times.append(_parse_times(table["TIMESTAMP"], file))
        tokens.append(table["ContextTokens"] + table["GeneratedTokens"])
        services.append(np.full(tokens[-1].size, s, dtype=np.int64))
    stamps = np.concatenate(times)
    order = np.argsort(stamps, kind="stable")
    seconds = (stamps[order] - stamps[order][0]).astype(np.float64) / 1e9
    return LLMTrace(np.concatenate(services)[order], seconds, np.concatenate(tokens)[order])
