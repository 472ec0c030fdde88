"""The docs site's tutorial (docs/tutorial.py, shown by docs/tutorial.md) runs, at tiny step counts."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
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


NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def unshown_lines(printed: str, shown: str) -> list[str]:
    """The printed lines the shown output does not match: the same text around the numbers, each number within
    1e-3 of itself (or 1e-9: a zero in float noise); in PPO's lines the text alone, since PPO's training is
    bit-reproducible only on the platform it ran on (another CPU or torch build trains another network)."""
    printed_lines, shown_lines = printed.splitlines(), shown.splitlines()
    if len(printed_lines) != len(shown_lines):
        return [f"{len(printed_lines)} lines printed, {len(shown_lines)} shown"]
    unshown = []
    for now, then in zip(printed_lines, shown_lines, strict=True):
        same_text = NUMBER.split(now) == NUMBER.split(then)
        if "ppo" not in now.lower() and same_text:
            same_text = all(np.isclose(float(a), float(b), rtol=1e-3, atol=1e-9)
                            for a, b in zip(NUMBER.findall(now), NUMBER.findall(then), strict=True))  # fmt: skip
        if not same_text:
            unshown.append(f"printed {now!r}, shown {then!r}")
    return unshown


@pytest.mark.slow
def test_the_page_shows_what_the_tutorial_prints(tmp_path, monkeypatch, capsys):
    """docs/tutorial_output.txt, which the page includes, is what the full tutorial prints now (a fresh model cache:
    PPO trains), to ``unshown_lines``' precision. After an intended change:
    `python docs/tutorial.py > docs/tutorial_output.txt`."""
    pytest.importorskip("stable_baselines3")
    monkeypatch.delenv("CLUSTER_ENVS_TUTORIAL", raising=False)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "docs" / "tutorial.py"), run_name="__main__")
    assert unshown_lines(capsys.readouterr().out, (ROOT / "docs" / "tutorial_output.txt").read_text()) == []


def test_the_output_check_takes_float_noise_and_ppo_s_numbers_but_no_other_change():
    shown = "static regret 85.33 deficit 8.52651e-13\nppo regret 8.27\n"
    assert unshown_lines("static regret 85.33 deficit 1.1e-14\nppo regret 9.02\n", shown) == []
    assert unshown_lines("static regret 85.45 deficit 0\nppo regret 8.27\n", shown) != []
    assert unshown_lines("static regret 85.33 deficit 0\nppo return 8.27\n", shown) != []
    assert unshown_lines("static regret 85.33 deficit 0\n", shown) != []


def test_the_page_includes_the_generated_output():
    page = (ROOT / "docs" / "tutorial.md").read_text()
    assert '--8<-- "tutorial_output.txt"' in page and (ROOT / "docs" / "tutorial_output.txt").is_file()
