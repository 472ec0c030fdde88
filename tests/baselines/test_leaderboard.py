"""The leaderboard stays alive: every entry in leaderboard/ replays (one episode of each, evenly spaced over its
envs, seeds and runs, on every CI run), so a change that alters an entry's result fails here unless the env id's
version is bumped; the page is built from the entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from baselines.eval.leaderboard import aggregate, read_entries, render
from baselines.eval.record import read_record
from baselines.eval.validate import validate

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = sorted((ROOT / "leaderboard").glob("*.json"))
POLICIES = ROOT / "leaderboard" / "policies"  # per entry name, the files of the entries submitted from outside


def replay_agent(record: dict) -> str | None:
    """What replays an entry: nothing for a reference agent or the shipped RL runs, else its file in
    ``POLICIES/<entry name>/``."""
    entry = record["entry"]
    if entry["kind"] in ("registered", "rl"):
        return None
    file, colon, name = entry["source"].rpartition(":") if entry["kind"] == "module" else (entry["source"], "", "")
    return str(POLICIES / entry["name"] / Path(file).name) + colon + name


@pytest.mark.parametrize("path", ENTRIES, ids=[p.stem for p in ENTRIES])
def test_every_entry_replays(path):
    record = read_record(path)
    (line,) = validate(path, replay_agent(record), sample=1)
    assert "agree" in line


def test_the_page_is_built_from_the_entries(tmp_path):
    if not ENTRIES:
        pytest.skip("no entries in leaderboard/")
    page = render(ROOT / "leaderboard", tmp_path).read_text()
    records = read_entries(ROOT / "leaderboard")
    for record in records:
        assert f"`{record['entry']['name']}`" in page
    envs, matrices = aggregate(records)
    for name, matrix in matrices.items():  # the aggregate's entries cover every env of the protocol
        assert matrix.shape[1] == len(envs) and f"| `{name}` |" in page.split("## Per env")[0]
    assert (tmp_path / "envs.png").is_file() and (tmp_path / "profiles.png").is_file() == bool(matrices)
