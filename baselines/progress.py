"""The progress bar of every long loop here: harness episodes, RL training steps, reproduction runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str, unit: str,
                 enabled: bool = True) -> Any:  # fmt: skip
    """A tqdm bar on stderr (a widget in notebooks). Disabled, it is a silent bar with the same interface
    (iterate, ``update``, ``close``), so callers need no branches. The CLI enables it on a terminal only."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not enabled)
