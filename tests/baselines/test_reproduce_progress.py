"""`cluster-envs reproduce <setting>`: a progress bar over the runs of every reproduction (on stderr unless
--quiet: a live bar on a terminal, plain lines every 30 s elsewhere), and every reproduction writes ``report.md``
(audit 9)."""

from __future__ import annotations

import importlib
import inspect
import io
import re
import sys

import pytest

from baselines import cli
from baselines.reproduce import approx, bilinear, multiserver


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _finished_bars(err: str) -> dict[str, tuple[int, int]]:
    """The last state (done, total) of every tqdm bar written to ``err``, by description."""
    return {
        desc: (int(done), int(total))
        for desc, done, total in re.findall(r"([^\r\n]+?): +\d+%\|[^|]*\| (\d+)/(\d+)", err)
    }


@pytest.mark.parametrize("setting", cli.reproductions())
@pytest.mark.parametrize(
    ("terminal", "quiet", "shown"), [(True, False, True), (True, True, False), (False, False, True)]
)
def test_cli_shows_progress_unless_quiet(setting, terminal, quiet, shown, monkeypatch, tmp_path):
    module = importlib.import_module(f"baselines.reproduce.{setting}")
    assert "progress" in inspect.signature(module.run).parameters
    seen = {}

    def fake_run(scale, out_dir, progress):
        seen.update(scale=scale, progress=progress)
        return tmp_path / "report.md"

    monkeypatch.setattr(module, "run", fake_run)
    if terminal:
        monkeypatch.setattr(sys, "stderr", _Terminal())
    assert cli.main(["reproduce", setting, "--out", str(tmp_path), *(["--quiet"] if quiet else [])]) == 0
    assert seen == {"scale": "small", "progress": shown}


def test_bilinear_shows_a_full_bar_per_experiment_and_writes_report_md(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    tiny = {"reps": 2, "horizons": (20, 40), "scaling": (20, 40), "iterations": 100}
    monkeypatch.setitem(bilinear.SCALES, "tiny_test", tiny)
    report = bilinear.run("tiny_test", tmp_path)
    assert report == tmp_path / "report.md" and "## E6" in report.read_text()
    bars = _finished_bars(capsys.readouterr().err)
    assert sorted(bars) == ["E1", "E2", "E3", "E4", "E5", "E6"]
    assert all(done == total > 0 for done, total in bars.values()), bars  # every run counted, none left out


def test_approx_and_multiserver_bars_count_their_episodes(capsys):
    tasks = [(("k",), "ClusterApprox-v1", "fair", {}, {"horizon": 30}, seed) for seed in (0, 1)]
    approx.run_tasks(tasks, workers=1, progress=True)
    multiserver.run_many([("hauf", 0, {"preset": "small", "horizon": 20}, {})], 1, True, "sweeps")
    assert _finished_bars(capsys.readouterr().err) == {"ClusterApprox episodes": (2, 2), "sweeps": (1, 1)}
    approx.run_tasks(tasks[:1], workers=1, progress=False)
    assert capsys.readouterr().err == ""
