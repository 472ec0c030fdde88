"""Progress in a pipe or log: plain lines, at least one per LOG_INTERVAL even while nothing advances."""

from __future__ import annotations

import io
import time

from baselines import progress


def test_a_log_gets_plain_lines_while_a_long_step_runs(monkeypatch):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.2)
    stream = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", stream)  # not a terminal
    bar = progress.progress_bar(total=3, desc="episodes", unit="episode")
    assert isinstance(bar, progress.LogBar)
    bar.update()
    time.sleep(0.7)  # one long "episode": the heartbeat still reports
    bar.update(2)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and all(line.startswith("episodes:") for line in lines)
    assert sum("1/3" in line for line in lines) >= 2, lines  # the state was repeated while the step ran
    assert "3/3" in lines[-1]


def test_iterating_counts_every_item_and_disabled_is_silent(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", stream)
    assert list(progress.progress_bar(range(4), desc="runs", unit="run")) == [0, 1, 2, 3]
    assert "4/4" in stream.getvalue().splitlines()[-1]
    stream.truncate(0)
    assert list(progress.progress_bar(range(2), desc="runs", unit="run", enabled=False)) == [0, 1]
    assert stream.getvalue() == ""
