"""Episode files that make a long reproduction resumable: each finished episode is kept on disk under a name
hashed from what decides it, and read back instead of rerun, so a run stopped by a time limit resumes where it
was and keeps its finished episodes."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def episode_name(*decides: Any) -> str:
    """A file name hashed from ``decides`` (env id, agent, keywords, seed, ...) in a canonical form (sorted keys),
    so the same episode gets the same file whatever its keywords' order or the label it is run under."""
    episode = json.dumps(list(decides), sort_keys=True, default=repr)
    return f"{hashlib.sha1(episode.encode()).hexdigest()}.pkl"


def cached(path: Path | None, compute: Callable[[], T]) -> T:
    """The object pickled at ``path`` if it exists, else ``compute()``, written there first (whole or not at all:
    to a temporary name, then renamed). ``path=None``: no file, ``compute()``."""
    if path is not None and path.exists():
        return pickle.loads(path.read_bytes())
    result = compute()
    if path is not None:
        partial = path.with_suffix(".part")
        partial.write_bytes(pickle.dumps(result))
        partial.replace(path)
    return result
