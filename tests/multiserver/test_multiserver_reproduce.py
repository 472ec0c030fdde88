"""The paper-001 reproduction module runs end to end on a shrunken scale and writes its report and figures."""

from __future__ import annotations

import pytest

from baselines.reproduce import multiserver


def test_reproduction_smoke(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    tiny = dict(multiserver.SCALES["small"], horizon=120, sweep_horizon=15, seeds=range(2))
    tiny.update(rho=(0.8, 1.0), edge_prob=(0.3,), n_ports=(2,), n_servers=(5,), overhead_ports=(2, 3))
    tiny.update(overhead_servers=(4, 5), overhead_base=(2, 5), overhead_t=40)
    monkeypatch.setitem(multiserver.SCALES, "tiny_test", tiny)
    monkeypatch.setattr(multiserver, "DELTA_VARIANTS", ("A", "default"))
    monkeypatch.setattr(multiserver, "G_VARIANTS", ("g3",))
    monkeypatch.setattr(multiserver, "FIG6_GRID", ((2, 0.5),))
    report = multiserver.run("tiny_test", tmp_path, workers=1)
    text = report.read_text()
    for heading in ("Figs. 2–3", "Fig. 4", "Fig. 5", "Fig. 7", "Fig. 9", "Fig. 13", "Where literal ESDP loses"):
        assert heading in text
    assert (tmp_path / "fig2_cumulative_aou.png").stat().st_size > 0
    assert (tmp_path / "fig_rho.png").stat().st_size > 0
    with pytest.raises(ValueError, match="scale"):
        multiserver.run("huge", tmp_path)


def test_comparison_alone_covers_every_esdp_reading(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    tiny = dict(multiserver.SCALES["small"], horizon=60)
    monkeypatch.setitem(multiserver.SCALES, "tiny_test", tiny)
    text = multiserver.comparison("tiny_test", tmp_path, seeds=range(2), workers=1, progress=False).read_text()
    for reading in multiserver.ESDP_READINGS:
        assert f"| {reading} vs lcf |" in text
    assert "CPU of the deciding thread" in text and "Fig. 5" not in text
