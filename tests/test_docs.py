"""Every registered id has its spec-sheet page, linked from the README, and the pages' examples run as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from cluster_envs.registration import ENV_ENTRY_POINTS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "envs").glob("*.md"))


@pytest.mark.parametrize("env_id", sorted(ENV_ENTRY_POINTS))
def test_every_id_has_a_sheet_linked_from_the_readme(env_id):
    assert (ROOT / "docs" / "envs" / f"{env_id}.md").is_file()
    assert f"(docs/envs/{env_id}.md)" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_sheet_examples_run(page):
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks, f"{page.name} has no example"
    for code in blocks:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, str(page), "exec"), {})
