"""Every registered id has its spec-sheet page, linked from the README, and every relative link resolves (the
pages' code blocks run in tests/test_doc_blocks.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cluster_envs.registration import ENV_ENTRY_POINTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("env_id", sorted(ENV_ENTRY_POINTS))
def test_every_id_has_a_sheet_linked_from_the_readme(env_id):
    assert (ROOT / "docs" / "envs" / f"{env_id}.md").is_file()
    assert f"(docs/envs/{env_id}.md)" in (ROOT / "README.md").read_text()


DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_relative_links_resolve(doc):
    """A pip user has only the repository: every relative Markdown link must name a file in it."""
    targets = re.findall(r"\]\(([^)\s]+)\)", doc.read_text())
    local = [t.split("#")[0] for t in targets if not t.startswith(("http://", "https://", "mailto:", "#"))]
    missing = [t for t in local if not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to missing files: {missing}"
