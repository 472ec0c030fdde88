"""A trained run's manifest: the content hash of each of its files and the facts that identify it.

Every run folder (``<algo>-<env_id>/seed<k>/`` in the model cache, ``<env_id>/<algo>/seed<k>/`` shipped) holds a
``manifest.json`` written last, when the run is complete: ``{"identity": {...}, "files": {name: sha256}}``, the
identity being the env id and its version, the env kwargs, the algorithm, the training seed and the steps trained
(from ``meta.json``). ``verify`` reads it back: a run whose file is missing, changed or not listed, whose
``meta.json`` says something else than the manifest, or that sits in the folder of another training seed, is not a
run to evaluate, and every reason is returned in words. ``cluster-envs manifest DIR...`` writes the
manifests of the runs under ``DIR`` (e.g. the shipped ones, after checking them).

``cluster-envs manifest --repoint NEW_ID DIR...`` re-points verified shipped runs to a new version of
their env id whose default configuration steps the same (the bump changed only non-default presets, and the golden
hashes of both versions agree): ``meta.json`` and ``config.yml`` name the new id, the run moves to
``<models>/<NEW_ID>/<algo>/seed<k>`` and its manifest is rewritten. The weights are untouched (no retraining).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

MANIFEST_FILE = "manifest.json"
RUN_FILES = ("model.zip", "vecnormalize.pkl", "config.yml", "meta.json", "training.csv")
REQUIRED_FILES = ("model.zip", "config.yml", "meta.json")
FORMAT = 1


class DamagedRunError(ValueError):
    """A run folder that is not the complete, unchanged run its manifest describes (the message says why)."""


def file_hash(path: Path) -> str:
    """The SHA-256 of the file ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def identity(meta: dict[str, Any]) -> dict[str, Any]:
    """What identifies a run, from its ``meta.json``: env id and version, env kwargs, algorithm, seed, steps."""
    env_id = meta["env_id"]
    match = re.search(r"-v(\d+)$", env_id)
    return {
        "env_id": env_id,
        "env_version": int(match.group(1)) if match else None,
        "env_kwargs": meta["env_kwargs"],
        "algo": meta["algo"],
        "training_seed": meta["seed"],
        "total_timesteps": meta["total_timesteps"],
    }


def write(run: str | Path) -> Path:
    """Write the manifest of the complete run in ``run`` (its files as they are now) and return its path; the
    manifest goes to a temporary name first, so a run is never seen with half a manifest."""
    run = Path(run)
    meta = json.loads((run / "meta.json").read_text())
    files = {name: file_hash(run / name) for name in RUN_FILES if (run / name).is_file()}
    manifest = {"format": FORMAT, "identity": identity(meta), "files": files}
    path = run / MANIFEST_FILE
    partial = path.with_name(f".{MANIFEST_FILE}.partial")
    partial.write_text(json.dumps(manifest, indent=2) + "\n")
    partial.replace(path)
    return path


def problems(run: str | Path) -> list[str]:
    """Why the run in ``run`` may not be evaluated, each reason in words (empty when its files are the manifest's)."""
    run = Path(run)
    path = run / MANIFEST_FILE
    if not path.is_file():
        return [f"it has no {MANIFEST_FILE} (an incomplete run, or saved before runs carried one)"]
    try:
        manifest = json.loads(path.read_text())
        listed, stated = dict(manifest["files"]), dict(manifest["identity"])
    except (ValueError, KeyError, TypeError):
        return [f"its {MANIFEST_FILE} is not a manifest"]
    found = [f"{name} is missing" for name in listed if not (run / name).is_file()]
    found += [f"{name} is not in the manifest" for name in RUN_FILES if name not in listed and (run / name).is_file()]
    found += [f"the manifest lists no {name}" for name in REQUIRED_FILES if name not in listed]
    found += [f"{name} differs from the manifest (changed or damaged)" for name, digest in listed.items()
              if (run / name).is_file() and file_hash(run / name) != digest]  # fmt: skip
    if found:
        return found
    try:
        meta = identity(json.loads((run / "meta.json").read_text()))
    except (ValueError, KeyError, TypeError):
        return ["its meta.json does not state the run (env id, algorithm, seed, env kwargs, steps)"]
    if meta != stated:
        found.append(f"meta.json ({meta}) is not the run of the manifest ({stated})")
    folder_seed = re.fullmatch(r"seed(\d+)", run.name)
    if folder_seed and int(folder_seed.group(1)) != stated.get("training_seed"):
        found.append(f"it is the run of training seed {stated.get('training_seed')} in the folder of seed "
                     f"{folder_seed.group(1)}")  # fmt: skip
    return found


def repoint(run: str | Path, env_id: str) -> Path:
    """Re-point the verified shipped run in ``run`` (``<models>/<env_id>/<algo>/seed<k>``) to ``env_id``, a new
    version of its id, and return its new folder ``<models>/<env_id>/<algo>/seed<k>``: ``meta.json`` and
    ``config.yml`` (rl-zoo3's section, keyed by the id) name the new id and the manifest is rewritten. A run that does
    not verify, or one that names another id than its version's, is refused before anything changes."""
    import yaml

    run = Path(run)
    if found := problems(run):
        raise DamagedRunError(f"{run} is not a run to re-point: {'; '.join(found)}")
    meta = json.loads((run / "meta.json").read_text())
    old = meta["env_id"].split(":")[-1]
    if re.sub(r"-v\d+$", "", old) != re.sub(r"-v\d+$", "", env_id) or old == env_id:
        raise ValueError(f"env_id={env_id!r} must be another version of the run's id {old!r}")
    config = yaml.safe_load((run / "config.yml").read_text())
    if list(config) != [old]:
        raise DamagedRunError(f"{run}/config.yml is not the section of {old!r}: {list(config)}")
    out = run.parent.parent.parent / env_id / run.parent.name / run.name
    if out.exists():
        raise ValueError(f"{out} exists; remove it first")
    (run / "meta.json").write_text(json.dumps({**meta, "env_id": env_id}, indent=2))
    (run / "config.yml").write_text(yaml.safe_dump({env_id: config[old]}, sort_keys=False))  # as training wrote it
    out.parent.mkdir(parents=True, exist_ok=True)
    run.rename(out)
    for folder in (run.parent, run.parent.parent):  # the old id's folders, once empty
        if not any(folder.iterdir()):
            folder.rmdir()
    write(out)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs manifest``."""
    parser.add_argument("folders", nargs="+", type=Path,
                        help="run folders, or folders with runs (any folder holding meta.json)")  # fmt: skip
    parser.add_argument("--repoint", metavar="NEW_ID", help="re-point the verified runs to this version of their id")


def run_from_args(args: argparse.Namespace) -> None:
    """``cluster-envs manifest``: write the manifest of every run under ``args.folders`` (or, with ``--repoint``,
    re-point them all to a new version of their id: all or none)."""
    missing = [str(folder) for folder in args.folders if not folder.is_dir()]
    if missing:
        raise FileNotFoundError(f"folders must be existing folders; not found: {missing}")
    runs = sorted({p.parent for folder in args.folders for p in folder.rglob("meta.json")})
    if not runs:
        raise FileNotFoundError(f"folders hold no run (a folder with meta.json): {[str(f) for f in args.folders]}")
    if args.repoint:
        refused = {run: found for run in runs if (found := problems(run))}
        if refused:
            raise DamagedRunError("; ".join(f"{run}: {', '.join(found)}" for run, found in refused.items()))
        for run in runs:
            print(f"re-pointed {run} -> {repoint(run, args.repoint)}")
        return
    for run in runs:
        print(f"wrote {write(run)}")
