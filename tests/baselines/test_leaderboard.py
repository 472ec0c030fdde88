"""The leaderboard stays alive: the entries in leaderboard/ replay (on every CI run a sample, ``ci_sample``: every
env and every entry from outside the reference agents, one episode each; with ``-m slow`` every entry on three
episodes), so a change that alters an entry's result fails here unless the env id's version is bumped; the page is
built from the entries."""

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


def episode_envs(record: dict) -> list[str]:
    """The env id of each of the record's episodes, in the order ``validate``'s indices count them."""
    return [result["env_id"] for result in record["results"] for _ in result["episodes"]]


def ci_sample() -> list:
    """The replays of the default run (about a second each): every entry that is not a reference agent (the shipped
    RL runs and the outside submissions) on its shortest episode, and per env the first episode of its naive anchor's
    entry (a cheap agent: the env's dynamics are what it checks), so that every env is replayed."""
    records = {path: read_record(path) for path in ENTRIES}
    sample = [(path, shortest_episode(r)) for path, r in records.items() if r["entry"]["kind"] != "registered"]
    naive = {res["env_id"]: res["anchors"]["naive"] for r in records.values() for res in r["results"]}
    by_name = {r["entry"]["name"]: path for path, r in records.items() if r["entry"]["kind"] == "registered"}
    for env_id, anchor in naive.items():
        path = by_name.get(anchor)
        if path is not None and env_id in episode_envs(records[path]):
            sample.append((path, episode_envs(records[path]).index(env_id)))
    return [pytest.param(path, index, id=f"{path.stem}-{episode_envs(records[path])[index]}") for path, index in sample]


@pytest.mark.parametrize(("path", "index"), ci_sample())
def test_a_sample_of_the_entries_replays(path, index):
    (line,) = validate(path, replay_agent(read_record(path)), indices=[index])
    assert "agree" in str(line)


@pytest.mark.slow
@pytest.mark.parametrize("path", ENTRIES, ids=[p.stem for p in ENTRIES])
def test_every_entry_replays(path):
    """Every entry on its shortest episode and two more, evenly spaced over its envs, seeds and runs."""
    record = read_record(path)
    lines = validate(path, replay_agent(record), indices=[shortest_episode(record)])
    lines += validate(path, replay_agent(record), sample=2)
    assert all("agree" in str(line) for line in lines)


def test_the_ci_sample_covers_every_env_and_every_entry_from_outside():
    sampled = {(param.values[0], episode_envs(read_record(param.values[0]))[param.values[1]]) for param in ci_sample()}
    covered = {env for path in ENTRIES for env in episode_envs(read_record(path))}
    assert {env for _, env in sampled} == covered
    outside = {path for path in ENTRIES if read_record(path)["entry"]["kind"] != "registered"}
    assert outside <= {path for path, _ in sampled}


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
    path, index = ci_sample()[-1].values  # a reference entry's episode that the default run replays
    record = read_record(path)
    episodes = [episode for result in record["results"] for episode in result["episodes"]]
    metric = next(m for m, v in episodes[index]["metrics"].items() if v is not None and v == v)  # finite
    episodes[index]["metrics"][metric] += 1.0
    changed = tmp_path / path.name
    changed.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=f"seed {episodes[index]['seed']}.*metric {metric!r} recorded"):
        validate(changed, indices=[index])


def test_every_sanity_flag_of_the_entries_is_explained():
    """A surprise (below the naive anchor, above the clairvoyant one, two agents identical) is published with its
    explanation: the protocol's, or leaderboard/notes.yml's for entries from outside."""
    from baselines.eval.leaderboard import NOTES, read_notes
    from baselines.eval.protocol import env_setting

    notes = read_notes(ROOT / "leaderboard" / NOTES)
    unexplained = [
        f"{path.name}: {result['env_id']} {flag}"
        for path in ENTRIES
        for result in read_record(path)["results"]
        for flag in result["flags"]
        if flag not in env_setting(result["env_id"]).explanations and flag not in notes.get(result["env_id"], {})
    ]
    assert not unexplained, f"explain these in leaderboard/{NOTES} (or the protocol): {unexplained}"
