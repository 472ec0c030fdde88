"""A trained run as a folder: ``model.zip``, ``vecnormalize.pkl`` (the VecNormalize statistics, when normalization
is on), ``config.yml`` (the hyperparameters used), ``meta.json`` and the training curve (``training.csv``,
``training.png``); writing and reading it, and where the package ships runs (``SHIPPED_MODELS_DIR``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baselines.rl import manifest
from baselines.rl.config import RunConfig

# Trained runs shipped with the package: models/<env_id>/<algo>/seed<k>/ holds the run of training seed k as `train`
# saves it (see baselines.rl.store).
SHIPPED_MODELS_DIR = Path(__file__).parent / "models"


def write_run_files(files: Mapping[str, bytes], out: str | Path) -> Path:
    """Write a run returned by ``TrainTask.run`` into ``out``, replacing the run there (a cache folder): into a
    sibling folder first, renamed into place when complete, so a killed write leaves no half run at ``out``."""
    import shutil
    import tempfile

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    for name, data in files.items():
        path = partial / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return out


def shipped_run(env_id: str, algo: str, seed: int) -> Path | None:
    """The folder of the run shipped with the package for ``env_id``, ``algo`` and training seed ``seed``, if any."""
    path = SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo / f"seed{seed}"
    return path if (path / "meta.json").is_file() else None


def shipped_seeds(env_id: str, algo: str) -> list[int]:
    """The training seeds of the runs shipped for ``env_id`` and ``algo``, ascending."""
    folder = SHIPPED_MODELS_DIR / env_id.split(":")[-1] / algo
    names = [p.name.removeprefix("seed") for p in folder.glob("seed*") if (p / "meta.json").is_file()]
    return sorted(int(n) for n in names if n.isdigit())


def save_run(out: str | Path, model: Any, config: RunConfig, seed: int, **facts: Any) -> None:
    """Save a model, its VecNormalize statistics (if any), the hyperparameters and ``meta.json`` in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None:
        normalizer.save(str(out / "vecnormalize.pkl"))
    _write_config(out / "config.yml", config)
    meta = {
        "env_id": config.env_id,
        "algo": config.algo,
        "seed": seed,
        "env_kwargs": config.env_kwargs,
        "env_wrapper": config.wrapper,
        "total_timesteps": int(model.num_timesteps),
        **facts,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=repr))
    manifest.write(out)


def as_json_value(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), so saved and live kwargs compare equal."""
    return json.loads(json.dumps(value, default=repr))


def as_yaml_value(value: Any) -> Any:
    """``value`` as it reads back from ``config.yml``, so saved and live hyperparameters compare equal."""
    import yaml

    return yaml.safe_load(yaml.safe_dump(value, sort_keys=False))


def saved_config(out: Path) -> Any:
    """The hyperparameters a run in ``out`` was trained with (its ``config.yml``), or None without one."""
    import yaml

    path = out / "config.yml"
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def _write_config(path: Path, config: RunConfig) -> None:
    import yaml

    path.write_text(yaml.safe_dump(config.as_yaml_dict(), sort_keys=False))


def read_meta(out: Path) -> dict[str, Any]:
    path = out / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{out} holds no trained run (no meta.json)")
    return json.loads(path.read_text())
