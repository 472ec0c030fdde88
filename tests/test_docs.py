"""Every registered id has its spec-sheet page, linked from the README, and every relative link resolves (the
pages' code blocks run in tests/test_doc_blocks.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
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


def _frames_module():
    spec = importlib.util.spec_from_file_location("docs_frames", ROOT / "docs" / "frames.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env_id", sorted(ENV_ENTRY_POINTS))
def test_the_sheets_frame_is_what_the_renderer_draws(env_id):
    """docs/envs/img/<id>.png is the env's rgb_array frame now (rerun `python docs/frames.py` after a change)."""
    image = pytest.importorskip("matplotlib.image")
    committed = image.imread(ROOT / "docs" / "envs" / "img" / f"{env_id}.png")[..., :3]
    drawn = _frames_module().frame(env_id)
    np.testing.assert_array_equal(np.round(committed * 255).astype(np.uint8), drawn)
    assert f"(img/{env_id}.png)" in (ROOT / "docs" / "envs" / f"{env_id}.md").read_text()


def test_citation_and_licence():
    """CITATION.cff has the keys CFF 1.2.0 requires and credits the four papers of the README's table; LICENSE is
    the MIT licence pyproject.toml declares."""
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and {"message", "title", "authors"} <= set(cff)
    readme = (ROOT / "README.md").read_text()
    assert len(cff["references"]) == 4
    for reference in cff["references"]:
        assert {"type", "title", "authors"} <= set(reference)
        assert f"*{reference['title']}*" in readme
        assert all(author["family-names"] in readme for author in reference["authors"])
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in pyproject and 'license-files = ["LICENSE"]' in pyproject
