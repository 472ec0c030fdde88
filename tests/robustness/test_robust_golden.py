"""Golden trajectory hashes: every registered id must match its checked-in file (docs/versioning.md)."""

from __future__ import annotations

import json

import pytest

from cluster_envs.registration import RL_IDS

from .robust_common import REGISTERED as IDS
from .robust_golden import GOLDEN_DIR, compare, golden_path


@pytest.mark.parametrize("env_id", IDS)
def test_trajectory_matches_golden_file(env_id):
    problems = compare(env_id)
    assert not problems, (
        f"{env_id} differs from {golden_path(env_id).name}:\n  "
        + "\n  ".join(problems)
        + "\nIf the change is intended, bump the id's -vN, add a CHANGELOG.md line and regenerate the file "
        "(docs/versioning.md)."
    )


def test_no_golden_file_without_a_registered_id():
    stale = sorted(p.stem for p in GOLDEN_DIR.glob("*.json") if p.stem not in IDS)
    assert not stale, f"golden files for ids that are no longer registered: {stale}"


def test_a_missing_golden_file_says_how_to_make_it(tmp_path, monkeypatch):
    from . import robust_golden

    monkeypatch.setattr(robust_golden, "GOLDEN_DIR", tmp_path / "golden")
    message = " ".join(compare(IDS[0]))
    assert "no golden trajectory file" in message and f"--update {IDS[0]}" in message


def test_golden_files_record_what_they_hash():
    for path in GOLDEN_DIR.glob("*.json"):
        stored = json.loads(path.read_text())
        assert len(stored["seeds"]) == 3 and set(stored["runs"]) == {str(s) for s in stored["seeds"]}
        # an RL-ready id keeps only the minimal info (fixed shapes), which has no scalar key to hash
        assert stored["info_keys"] or path.stem in RL_IDS, f"{path.name}: no scalar info key is hashed"
