"""The leaderboard stays alive: every entry in leaderboard/ replays (on every CI run one episode of each, its first
shortest one, so that every env is replayed through the entries made for it within seconds; with ``-m slow`` two
more, evenly spaced over its envs, seeds and runs), so a change that alters an entry's result fails here unless the
env id's version is bumped; the page is built from the entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines.eval.leaderboard import aggregate, read_entries, render
from baselines.eval.record import read_record
from baselines.eval.validate import shortest_episode, validate

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
    (line,) = validate(path, replay_agent(record), indices=[shortest_episode(record)])
    assert "agree" in line


@pytest.mark.slow
@pytest.mark.parametrize("path", ENTRIES, ids=[p.stem for p in ENTRIES])
def test_every_entry_replays_across_its_envs(path):
    record = read_record(path)
    assert all("agree" in line for line in validate(path, replay_agent(record), sample=2))


def test_the_ci_sample_covers_every_env_of_the_protocol():
    """The default run's replays (one per entry) reach every env the entries cover."""
    covered, replayed = set(), set()
    for path in ENTRIES:
        record = read_record(path)
        episodes = [result["env_id"] for result in record["results"] for _ in result["episodes"]]
        covered |= set(episodes)
        replayed.add(episodes[shortest_episode(record)])
    assert replayed == covered


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


def test_the_ci_replay_fails_when_an_entry_s_result_changes(tmp_path):
    """What the default run replays is checked: the same episode with one metric changed fails, naming it."""
    if not ENTRIES:
        pytest.skip("no entries in leaderboard/")
    path = min((p for p in ENTRIES if read_record(p)["entry"]["kind"] == "registered"), key=lambda p: p.stat().st_size)
    record = read_record(path)
    index = shortest_episode(record)
    episodes = [episode for result in record["results"] for episode in result["episodes"]]
    metric = next(m for m, v in episodes[index]["metrics"].items() if v is not None and v == v)  # finite
    episodes[index]["metrics"][metric] += 1.0
    changed = tmp_path / path.name
    changed.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=f"seed {episodes[index]['seed']}.*metric {metric!r} recorded"):
        validate(changed, indices=[index])
