"""Make before-1a8fe3e-{full,quick}.json: the leaderboard tables published on main at commit 1a8fe3e (the full and
quick runs of 35b1797, in docs/benchmark.md), in the shape of a run's headline.json, for
`cluster-envs benchmark --before`. Run from the repository root: python docs/results/data/make_before.py"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

COMMIT = "1a8fe3e"
ROLES = {4: "paper", 5: "ppo", 7: "best heuristic", 8: "oracle"}  # column -> role in the tables of that commit
SECTIONS = {"full": "### The full run", "quick": "### The quick run"}
TRACKS = {"#### Held-out instances (headline)": "held-out instances", "#### Fixed instance": "fixed instance"}
CELL = re.compile(r"^`(?P<agent>[^`]+)` (?P<mean>\S+)(?: \[(?P<low>\S+), (?P<high>\S+)\])?")


def cell(text: str) -> dict | None:
    match = CELL.match(text.strip())
    if match is None:  # "—" or "not run: ..."
        return None
    number = lambda x: None if x is None else float(x)  # noqa: E731
    return {"agent": match["agent"], "mean": float(match["mean"]), "ci_low": number(match["low"]),
            "ci_high": number(match["high"])}  # fmt: skip


def tables(page: str, section: str) -> dict:
    text = page[page.index(SECTIONS[section]) :]
    text = text[: text.index("### The quick run")] if section == "full" else text
    tracks, track = {}, None
    for line in text.splitlines():
        for heading, name in TRACKS.items():
            if line.startswith(heading):
                track = tracks.setdefault(name, {})
        if track is not None and line.startswith("| Cluster"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            scores = {role: cell(cells[column]) for column, role in ROLES.items()}
            track[cells[0]] = {"scores": {role: c for role, c in scores.items() if c is not None}}
        if line.startswith("#### Sanity notes"):
            track = None
    return tracks


if __name__ == "__main__":
    page = subprocess.run(["git", "show", f"{COMMIT}:docs/benchmark.md"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    for section in SECTIONS:
        data = {
            "source": f"the {section} run published on main at {COMMIT} (docs/benchmark.md, run on 35b1797), "
            "under the former statistics: every seed normalized by the anchors' means over seeds, intervals an "
            "unpaired bootstrap over evaluation seeds (PPO: over training seeds)",
            "made_by": "python docs/results/data/make_before.py",
            "quick": section == "quick",
            "tracks": tables(page, section),
        }
        path = Path(__file__).with_name(f"before-{COMMIT}-{section}.json")
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        print(path, sum(len(t) for t in data["tracks"].values()), "rows")
