"""Where the commands write, and the rules that keep outputs whole: one command per folder at a time, each file
complete or absent, and a folder that says whether its run finished.

Every command writes under ``results/``, one folder per command (``results/<command>/...``, see
``default_out``), and every trained RL model of ``compare`` and ``benchmark``, from the CLI or from Python,
lives in one cache, ``results/models/`` (``MODELS_DIR``), so the same model is never trained twice.

A command checks its output folder before it computes anything (``check``) and claims it when it writes
(``claim``): the folder gets a small ``OWNER_FILE`` naming the command. A folder that already holds files of
another command (or files of unknown origin) is refused with a clear error, unless ``force`` is given
(``--force`` on the command line); a rerun of the same command replaces its own outputs. A path naming a
file is always refused.

A command of the CLI holds its folder for the whole run (``exclusive``): the folder is created and probed for
writability before any work, locked (``LOCK_FILE``, an OS lock that ends with the process however it ends, so a
second run into the folder is refused with the first one's pid and start time), and marked incomplete
(``INCOMPLETE_FILE``, a note a reader sees) until the run ends well: then ``OWNER_FILE`` records it as complete and the
note is removed, last. Every file is written to a temporary name in its folder and renamed into place (``atomic``,
``write_text``), so a killed run leaves whole files, and a folder without its completion says so.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

RESULTS_DIR = Path("results")
MODELS_DIR = RESULTS_DIR / "models"
OWNER_FILE = ".cluster-envs.json"
LOCK_FILE = ".cluster-envs.lock"
INCOMPLETE_FILE = "INCOMPLETE.md"


class OutputInUseError(FileExistsError):
    """The output folder is held by another run (the message names its pid and start time)."""


def default_out(command: str, *parts: str) -> Path:
    """``results/<command>/<parts...>``, e.g. ``default_out("compare", "ClusterSLA-v1")``."""
    return RESULTS_DIR.joinpath(command, *parts)


def check(out_dir: str | Path, command: str, *, force: bool = False) -> Path:
    """Refuse ``out_dir`` as the output folder of ``command`` (e.g. ``"compare"``, ``"reproduce sla"``) when it
    names a file (``NotADirectoryError``), or when it holds outputs of another command or unknown files and
    ``force`` is false (``FileExistsError``). Creates nothing: commands call it before they compute."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output folder {str(out)!r} is an existing file; name a folder")
    owner = owner_of(out)
    if not force and owner != command and out.is_dir() and any(p.name != LOCK_FILE for p in out.iterdir()):
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
    if owner_of(out) != command:  # (already the command's: kept, with what ``exclusive`` recorded of the run)
        write_text(out / OWNER_FILE, json.dumps({"command": command}) + "\n")
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


def status(out_dir: str | Path) -> dict | None:
    """What ``OWNER_FILE`` records of the folder's last run (command, pid, start, ``complete``), or None."""
    try:
        return json.loads((Path(out_dir) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def exclusive(out_dir: str | Path, command: str, *, force: bool = False) -> Iterator[Path]:
    """Hold ``out_dir`` for one run of ``command``: ``check`` it, create it and probe that it is writable (an
    ``OSError`` naming the folder, before any work), lock it (``OutputInUseError`` naming the holder's pid and start
    time) and mark it incomplete; on a normal exit record the run as complete and remove the mark, last. An exception
    or a kill leaves the mark: the folder says its outputs are incomplete (an exception before any output was written
    leaves nothing: the folders the run created are removed)."""
    import fcntl

    out = check(out_dir, command, force=force)
    created = [folder for folder in (out, *out.parents) if not folder.exists()]  # innermost first
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{LOCK_FILE}.probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        handle = open(out / LOCK_FILE, "a+")  # noqa: SIM115  (held until the run ends)
    except OSError as err:
        raise OSError(f"cannot write to the output folder {str(out)!r}: {err.strerror or err}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that has not written its pid yet"
        handle.close()
        raise OutputInUseError(
            f"output folder {str(out)!r} is in use by another run ({holder}); wait for it to end or choose another "
            "folder (--out, out_dir=)"
        ) from None
    try:
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        facts = {"command": command, "pid": os.getpid(), "started": started}
        handle.seek(0), handle.truncate()
        handle.write(f"pid {os.getpid()}, started {started}, `cluster-envs {command}`\n")
        handle.flush()
        write_text(out / INCOMPLETE_FILE, f"# Incomplete\n\n`cluster-envs {command}` (pid {os.getpid()}, started "
                   f"{started}) is writing this folder, or was stopped before it finished: until this file is gone, "
                   "its outputs are not a finished run.\n")  # fmt: skip
        write_text(out / OWNER_FILE, json.dumps({**facts, "complete": False}) + "\n")
        try:
            yield out
        except BaseException:
            _forget_if_unwritten(out, created)
            raise
        finished = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        write_text(out / OWNER_FILE, json.dumps({**facts, "complete": True, "finished": finished}) + "\n")
        (out / INCOMPLETE_FILE).unlink(missing_ok=True)
    finally:
        handle.close()  # releases the lock


def _forget_if_unwritten(out: Path, created: list[Path]) -> None:
    """A run that failed before writing anything (a bad argument found late, say) leaves no trace: its bookkeeping
    files go, and so do the folders it created. A folder with any output keeps its incomplete mark."""
    own = {INCOMPLETE_FILE, OWNER_FILE, LOCK_FILE}
    if any(path.name not in own for path in out.iterdir()):
        return
    for name in own:  # the held lock stays on the open handle until it is closed
        (out / name).unlink(missing_ok=True)
    for folder in created:
        with contextlib.suppress(OSError):  # another run may have written beside it meanwhile
            folder.rmdir()


@contextlib.contextmanager
def atomic(path: str | Path) -> Iterator[Path]:
    """A temporary name beside ``path`` to write to; renamed to ``path`` when the block ends without an exception
    (removed otherwise), so ``path`` is always absent, the old file or the whole new one."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> Path:
    """``Path(path).write_text(text)``, atomically (``atomic``)."""
    with atomic(path) as partial:
        partial.write_text(text)
    return Path(path)


def save_figure(fig, path: str | Path, **kwargs) -> Path:
    """``fig.savefig(path, **kwargs)``, atomically (``atomic``), in the format of ``path``'s suffix."""
    with atomic(path) as partial:
        fig.savefig(partial, format=Path(path).suffix.lstrip("."), **kwargs)
    return Path(path)


def run_facts() -> dict[str, str]:
    """The commit this package runs from (noting uncommitted changes) and the UTC date: what a generated page cites."""
    git = ["git", "-C", str(Path(__file__).resolve().parents[2])]
    try:
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                timeout=10).stdout.strip()  # fmt: skip
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True, timeout=10).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown (not a git checkout)", ""
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"commit": commit + (" (with local changes)" if dirty else ""), "date": date}


def provenance(command: str) -> str:
    """The line a generated page opens with: the command that wrote it, the commit it ran on and the UTC date."""
    facts = run_facts()
    return f"Generated by `{command}` on commit {facts['commit']}, {facts['date']}. Do not edit by hand."
