"""The docs site's tutorial (docs/tutorial.py, shown by docs/tutorial.md) runs, at tiny step counts."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_tutorial_runs_end_to_end(tmp_path, monkeypatch, capsys):
    pytest.importorskip("stable_baselines3")
    monkeypatch.setenv("CLUSTER_ENVS_TUTORIAL", "tiny")
    monkeypatch.chdir(tmp_path)
    namespace = runpy.run_path(str(ROOT / "docs" / "tutorial.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert namespace["TINY"] and "PPO - mwu_extended, regret:" in out and "PPO on seed 0: regret" in out
    assert (tmp_path / "results" / "tutorial" / "report.md").is_file()
    for seed in range(namespace["RL_SEEDS"]):  # one run per training seed
        assert (tmp_path / "results" / "models" / "ppo-ClusterSLA-v1" / f"seed{seed}" / "model.zip").is_file()


def test_the_page_shows_every_section_of_the_script():
    script = (ROOT / "docs" / "tutorial.py").read_text()
    page = (ROOT / "docs" / "tutorial.md").read_text()
    sections = re.findall(r"# --8<-- \[start:(\w+)\]", script)
    assert sections and re.findall(r'--8<-- "tutorial.py:(\w+)"', page) == sections


@pytest.mark.slow
def test_the_page_shows_what_the_tutorial_prints(tmp_path, monkeypatch, capsys):
    """docs/tutorial_output.txt, which the page includes, is what the full tutorial prints now (a fresh model cache:
    PPO trains). After an intended change: `python docs/tutorial.py > docs/tutorial_output.txt`."""
    pytest.importorskip("stable_baselines3")
    monkeypatch.delenv("CLUSTER_ENVS_TUTORIAL", raising=False)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "docs" / "tutorial.py"), run_name="__main__")
    assert capsys.readouterr().out == (ROOT / "docs" / "tutorial_output.txt").read_text()


def test_the_page_includes_the_generated_output():
    page = (ROOT / "docs" / "tutorial.md").read_text()
    assert '--8<-- "tutorial_output.txt"' in page and (ROOT / "docs" / "tutorial_output.txt").is_file()
