"""A task for ``baselines.eval.backends.run_tasks`` that records its worker's pid and then sleeps (shutdown tests)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SleepingTask:
    folder: str
    seconds: float = 120.0

    def run(self) -> int:
        (Path(self.folder) / f"{os.getpid()}.pid").write_text("")
        time.sleep(self.seconds)
        return os.getpid()
