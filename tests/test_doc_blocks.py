"""Every Python and shell code block of README.md and docs/ runs as pasted.

A page's Python blocks run in order in one namespace (as pasted into one session; in this process, whose numba
kernels are already loaded); its shell blocks run in order, each in bash with ``set -euo pipefail`` (as pasted into
one terminal: a block may use the files an earlier one wrote). Both run in a temporary
folder laid out like a clone of the repository (its files linked, no results/), where ``cluster-envs`` and
``python`` are this test's interpreter. A block preceded by ``<!-- no-run: reason -->`` is skipped (the reason is
required); one preceded by ``<!-- slow -->`` runs only with ``pytest -m slow``, where all of its page's blocks of
that language run in page order. A block made only of ``--8<--`` includes (pymdownx.snippets) shows a file that has its
own test (docs/tutorial.py: tests/test_tutorial.py) and is not code as written.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)
MARK = re.compile(r"<!--\s*(?P<kind>no-run|slow)\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
SKIPPED_IN_CLONE = {"results", "runs", "logs", "site", ".git"}
TIMEOUT = 1800  # seconds per block or page; the slow ones reproduce papers and train PPO


@dataclass
class Block:
    page: Path
    line: int
    kind: str  # "python" or "shell"
    code: str
    mark: str | None  # None, "no-run" or "slow"
    reason: str | None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        kind = LANGUAGES.get(match["lang"])
        if kind is None or all(line.strip().startswith("--8<--") for line in match["code"].strip().splitlines()):
            continue
        before = text[: match.start()].rstrip("\n ").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        indent = len(match["indent"])
        code = "\n".join(line[indent:] for line in match["code"].splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, kind, code, mark["kind"] if mark else None, mark["reason"] if mark else None))
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_every_skipped_block_says_why():
    unexplained = [f"{_name(b.page)}:{b.line}" for b in ALL if b.mark == "no-run" and not b.reason]
    assert not unexplained, f"<!-- no-run: reason --> needs a reason: {unexplained}"


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder that looks like a fresh clone, and an environment whose ``cluster-envs`` and ``python`` are ours."""
    work = tmp_path / "clone"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in SKIPPED_IN_CLONE:
            (work / entry.name).symlink_to(entry)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, command in (("python", ""), ("cluster-envs", " -m baselines.cli")):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}"{command} "$@"\n')
        shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return work, env


def _run(argv: list[str], code: str, where: str, clone: tuple[Path, dict[str, str]]) -> None:
    work, env = clone
    done = subprocess.run(argv, input=code, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, (
        f"{where} failed (exit {done.returncode}):\n{code}\n--- stderr ---\n{done.stderr[-3000:]}"
    )


def _page_params(kind: str) -> list:
    """Per page: its fast blocks of ``kind`` in the default run, and all of them (fast and slow) with ``-m slow``."""
    params = []
    for page in PAGES:
        runnable = [b for b in blocks(page) if b.kind == kind and b.mark != "no-run"]
        fast = [b for b in runnable if b.mark != "slow"]
        if fast:
            params.append(pytest.param(page, fast, id=_name(page)))
        if len(fast) < len(runnable):
            params.append(pytest.param(page, runnable, id=f"{_name(page)}-all", marks=[pytest.mark.slow]))
    return params


@pytest.mark.parametrize(("page", "runnable"), _page_params("python"))
def test_python_blocks_run_in_order(page, runnable, clone, monkeypatch):
    monkeypatch.chdir(clone[0])
    namespace: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for block in runnable:
            exec(compile(block.code, f"{_name(page)}:{block.line}", "exec"), namespace)


@pytest.mark.parametrize(("page", "runnable"), _page_params("shell"))
def test_shell_blocks_run_in_order(page, runnable, clone):
    for block in runnable:
        _run(["bash", "-c", "set -euo pipefail\n" + block.code], "", f"{_name(page)}:{block.line}", clone)
