"""Reading a numeric table from a user's file (a load trace, a job trace): one loader for every setting.

:func:`read_table` returns a non-empty 2-D float64 array, :func:`read_columns` the named columns of a CSV with a
header (numbers and text); both raise an error that names the argument the path came from; each setting then
checks what its table means (orientation, columns, ranges).
"""

from __future__ import annotations

import csv
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np


def read_table(path: str | Path, name: str, what: str, *, header: bool = False) -> np.ndarray:
    """The table in ``path`` as a 2-D float64 array (at least one row): a ``.npy`` file, the first array of a
    ``.npz`` archive, or else comma-separated text (``#`` starts a comment).

    ``name`` is the argument that gave the path and ``what`` what the file should hold; both are in every
    error: ``FileNotFoundError`` for a missing file, ``ValueError`` for an empty, truncated, corrupt or
    non-numeric one. ``header=True`` skips a first text line that is a header (a field that is no number, like
    ``job_id``); a data row such as ``1,0,1e3`` or ``1,0,nan`` stays data.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{name}: no file at {str(path)!r}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            data = np.load(path, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                if not archive.files:
                    raise ValueError("the .npz archive holds no array")
                data = archive[archive.files[0]]
        else:
            skip = _header_rows(path) if header else 0
            with warnings.catch_warnings():  # "input contained no data": reported below as an error
                warnings.simplefilter("ignore", UserWarning)
                data = np.loadtxt(path, delimiter=",", comments="#", dtype=np.float64, ndmin=2, skiprows=skip)
        if np.iscomplexobj(data):  # a float conversion would drop the imaginary part with only a warning
            raise ValueError(f"it holds complex numbers (dtype {data.dtype})")
        data = np.asarray(data, dtype=np.float64)
    except (ValueError, EOFError, OSError, UnicodeDecodeError, zipfile.BadZipFile) as err:
        raise ValueError(f"{name}: {str(path)!r} is not a readable {what} ({err})") from None
    if data.ndim != 2 or data.size == 0:
        raise ValueError(f"{name}: {str(path)!r} must hold a non-empty table ({what}), got shape {data.shape}")
    return data


def _header_rows(path: Path) -> int:
    """1 if the first line is a header (a field that is no number), else 0."""
    with open(path) as handle:
        first = handle.readline().partition("#")[0]
    try:
        [float(field) for field in first.split(",")]
    except ValueError:
        return 1
    return 0


def read_columns(path: str | Path, name: str, columns: dict[str, type]) -> dict[str, np.ndarray]:
    """The named columns of the comma-separated file ``path`` (a header line, then one row per record).

    ``columns`` maps each required column to ``float`` (parsed as float64; an empty field is an error) or
    ``str`` (kept as text; empty allowed). Other columns are ignored. Every error is a ``ValueError`` that
    names ``name`` (the argument the path came from), the file and the expected columns: a missing or
    unreadable file, a missing column, a row of the wrong length, a non-numeric field, no rows.
    """
    path = Path(path)
    expected = f"expected a CSV with the columns {list(columns)}"
    if not path.is_file():
        raise ValueError(f"{name}: no file at {str(path)!r}; {expected}")
    try:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{name}: {str(path)!r} is not a readable CSV ({err}); {expected}") from None
    if not rows:
        raise ValueError(f"{name}: {str(path)!r} is empty; {expected}")
    header = [field.strip() for field in rows[0]]
    missing = [column for column in columns if column not in header]
    if missing:
        raise ValueError(f"{name}: {str(path)!r} lacks the column(s) {missing}; {expected}, got {header}")
    body = rows[1:]
    if not body:
        raise ValueError(f"{name}: {str(path)!r} has a header but no rows; {expected}")
    short = next((i for i, row in enumerate(body) if len(row) != len(header)), None)
    if short is not None:
        raise ValueError(
            f"{name}: {str(path)!r} line {short + 2} has {len(body[short])} fields, the header {len(header)}"
        )
    out: dict[str, np.ndarray] = {}
    for column, kind in columns.items():
        values = [row[header.index(column)].strip() for row in body]
        if kind is str:
            out[column] = np.asarray(values, dtype=str)
            continue
        try:
            out[column] = np.asarray(values, dtype=np.float64)
        except ValueError as err:
            raise ValueError(f"{name}: {str(path)!r} column {column!r} is not numeric ({err}); {expected}") from None
    return out


def trace_folder(trace_dir: str | os.PathLike | None, preset: str, how_to_pass: str) -> Path:
    """``trace_dir`` as a folder ``Path``; a ``ValueError`` saying ``how_to_pass`` it when it is None (``preset``
    needs its data), not a path, or not a folder. The files in it are each reader's to check."""
    if trace_dir is None:
        raise ValueError(f"the {preset} preset needs its data: {how_to_pass}")
    if not isinstance(trace_dir, str | os.PathLike):
        raise ValueError(f"trace_dir must be a folder path (str or os.PathLike), got {trace_dir!r}; {how_to_pass}")
    folder = Path(trace_dir)
    if not folder.is_dir():
        raise ValueError(f"trace_dir={str(folder)!r} is not a folder; {how_to_pass}")
    return folder
