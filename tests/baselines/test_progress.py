"""Progress in a pipe or log: plain lines, at least one per LOG_INTERVAL even while nothing advances."""

from __future__ import annotations

import io
import time

from baselines.eval import progress


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


def test_a_long_episode_of_run_shows_a_step_bar_with_its_horizon(monkeypatch, capsys):
    """`cluster-envs run` on a slow episode: the bar counts the episode's steps out of its horizon (an estimate);
    episodes shorter than STEP_BAR_DELAY show none."""
    from baselines.cli import main
    from baselines.eval import harness

    monkeypatch.setattr(harness, "STEP_BAR_DELAY", 0.0)
    argv = ["run", "ClusterSLA-v1", "--agent", "owm", "--seeds", "0", "--set", "preset=example_1_1", "--set",
            "horizon=300"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err  # pytest's capture is not a terminal: plain lines
    assert "owm seed 0:" in err and "/300 [" in err
    monkeypatch.setattr(harness, "STEP_BAR_DELAY", 60.0)
    assert main(argv) == 0
    assert "owm seed 0:" not in capsys.readouterr().err


def test_a_log_gets_no_more_than_a_line_per_interval(monkeypatch):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.5)
    stream = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", stream)
    bar = progress.progress_bar(total=10_000, desc="train", unit="step")
    start = time.monotonic()
    while time.monotonic() - start < 2.2:  # frequent updates for about four intervals
        bar.update()
        time.sleep(0.0002)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert 3 <= len(lines) <= 2 + 5, lines  # the first and the last line, and about one per interval between
