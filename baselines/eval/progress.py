"""The progress bar of every long loop here: harness episodes and steps, RL training steps, reproduction runs.

On a terminal it is a live tqdm bar with a rate and a time estimate (a widget in notebooks). Elsewhere (a pipe,
a log file, CI) a live bar would be one ever-growing line of carriage returns, so it prints instead one plain
line at least every ``LOG_INTERVAL`` seconds, even while a single long step or episode is running: a long run
in a log shows that it is alive, how far it got and how long it has left.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from tqdm.autonotebook import tqdm as auto_tqdm  # tqdm's std bar, or its widget in a notebook
from tqdm.std import tqdm

LOG_INTERVAL = 30.0  # seconds between two progress lines when stderr is not a terminal


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str, unit: str,
                 enabled: bool = True, delay: float = 0.0, leave: bool = True) -> Any:  # fmt: skip
    """A progress bar on stderr with tqdm's interface (iterate, ``update``, ``close``); disabled, a silent one,
    so callers need no branches. ``delay``: show nothing for a loop that ends within so many seconds."""
    if not enabled:
        return tqdm(iterable, total=total, disable=True)
    if sys.stderr.isatty() or auto_tqdm is not tqdm:  # a terminal, or a notebook (tqdm.auto picked its widget)
        return auto_tqdm(iterable, total=total, desc=desc, unit=unit, delay=delay, leave=leave)
    # maxinterval too: tqdm's monitor thread would otherwise force a line every 10 s
    return LogBar(iterable, total=total, desc=desc, unit=unit, delay=delay, file=_Lines(sys.stderr),
                  mininterval=LOG_INTERVAL, maxinterval=LOG_INTERVAL, ascii=True)  # fmt: skip


class LogBar(tqdm):
    """A tqdm bar for logs: plain lines, at most every ``LOG_INTERVAL`` s on updates, and a heartbeat thread
    that prints the current state when no update came for ``LOG_INTERVAL`` s."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._stopped = threading.Event()
        if not self.disable:
            threading.Thread(target=self._heartbeat, daemon=True).start()

    def _heartbeat(self) -> None:
        while not self._stopped.wait(LOG_INTERVAL / 10):
            if self._time() - self.last_print_t >= LOG_INTERVAL:
                self.refresh()
                self.last_print_t = self._time()  # tqdm's own updates then wait a full interval too

    def __iter__(self) -> Iterator:
        # tqdm's own loop counts in a local variable between prints, which the heartbeat would not see.
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def close(self) -> None:
        self._stopped.set()
        super().close()


class _Lines:
    """A stream for tqdm that turns its carriage-return redraws into separate lines."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()
