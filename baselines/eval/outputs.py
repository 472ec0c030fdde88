"""Where the commands write, and the rule that keeps one command from overwriting another's report.

Every command writes under ``results/``, one folder per command (``results/<command>/...``, see
``default_out``), and every trained RL model of ``compare`` and ``benchmark``, from the CLI or from Python,
lives in one cache, ``results/models/`` (``MODELS_DIR``), so the same model is never trained twice.

A command checks its output folder before it computes anything (``check``) and claims it when it writes
(``claim``): the folder gets a small ``OWNER_FILE`` naming the command. A folder that already holds files of
another command (or files of unknown origin) is refused with a clear error, unless ``force`` is given
(``--force`` on the command line); a rerun of the same command replaces its own outputs. A path naming a
file is always refused.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS_DIR = Path("results")
MODELS_DIR = RESULTS_DIR / "models"
OWNER_FILE = ".cluster-envs.json"


def default_out(command: str, *parts: str) -> Path:
    """``results/<command>/<parts...>``, e.g. ``default_out("compare", "ClusterSLA-v0")``."""
    return RESULTS_DIR.joinpath(command, *parts)


def check(out_dir: str | Path, command: str, *, force: bool = False) -> Path:
    """Refuse ``out_dir`` as the output folder of ``command`` (e.g. ``"compare"``, ``"reproduce sla"``) when it
    names a file (``NotADirectoryError``), or when it holds outputs of another command or unknown files and
    ``force`` is false (``FileExistsError``). Creates nothing: commands call it before they compute."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output folder {str(out)!r} is an existing file; name a folder")
    owner = owner_of(out)
    if not force and owner != command and out.is_dir() and any(out.iterdir()):
        holds = f"the outputs of `cluster-envs {owner}`" if owner else "files that no cluster-envs command wrote"
        raise FileExistsError(
            f"output folder {str(out)!r} already holds {holds}; choose another folder (--out, out_dir=) "
            f"or overwrite with --force (force=True)"
        )
    return out


def claim(out_dir: str | Path, command: str, *, force: bool = False) -> Path:
    """``check``, then create ``out_dir`` and mark it as ``command``'s; return it."""
    out = check(out_dir, command, force=force)
    out.mkdir(parents=True, exist_ok=True)
    (out / OWNER_FILE).write_text(json.dumps({"command": command}) + "\n")
    return out


def owner_of(out_dir: str | Path) -> str | None:
    """The command that claimed ``out_dir`` last, or None."""
    path = Path(out_dir) / OWNER_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())["command"]
    except (ValueError, KeyError, TypeError):
        return None
