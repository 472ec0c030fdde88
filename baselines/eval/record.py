"""Submission records: one versioned JSON file per leaderboard entry and its declaration.

The schema (``SCHEMA_VERSION``) is documented in ``docs/leaderboard/submit.md``. A record holds the entry (name,
kind, source), its declaration (``DECLARATION_FIELDS``), the package's version and commit, the platform (machine,
CPU, Python and numeric libraries: ``platform_facts``), the protocol, and per
env and track: the env id with its version and the kwargs the agent ran with, the evaluation seeds and their
instances, the anchors' means, the normalized scores, and every episode's metrics with the digest of its action
sequence (``baselines.eval.harness.ActionDigest``). Records are written atomically (a temporary file renamed
over the target), so a reader never sees half a file.

``baselines.eval.validate`` replays a record's episodes.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

SCHEMA_VERSION = 1
DECLARATION_FIELDS = {
    "privileged": "true for an agent that reads hidden state (an offline oracle); never ranked with online agents",
    "training_env_steps": "env steps used to train (and tune) the agent, summed over runs; 0 for none",
    "training_cpu_hours": "CPU hours of training (0 for none)",
    "training_gpu_hours": "GPU hours of training (0 for none)",
    "source": "where the agent comes from: a paper, a repository, or a short description",
    "tuned_on_validation_seeds": "true if choices were made on the validation seeds 100-104 (never on 0-9)",
}
BUDGET_TRACKS = ((0, "no training"), (10**6, "≤ 10⁶ env steps"), (10**7, "≤ 10⁷ env steps"), (None, "unlimited"))


def check_declaration(declaration: Mapping[str, Any] | str | Path | None) -> dict[str, Any]:
    """The declaration (a mapping, or a YAML/JSON file's path) checked: every field of ``DECLARATION_FIELDS``, no
    other, each of its type; an error names the field."""
    if declaration is None:
        raise ValueError(f"a declaration is required, with the fields {list(DECLARATION_FIELDS)}")
    if isinstance(declaration, (str, Path)):
        import yaml

        path = Path(declaration)
        if not path.is_file():
            raise FileNotFoundError(f"declaration file {str(path)!r} does not exist")
        declaration = yaml.safe_load(path.read_text())
        if not isinstance(declaration, Mapping):
            raise ValueError(f"declaration file {str(path)!r} must hold a mapping of {list(DECLARATION_FIELDS)}")
    unknown = sorted(set(declaration) - set(DECLARATION_FIELDS))
    if unknown:
        raise ValueError(f"declaration field {unknown[0]!r} is unknown; the fields are {list(DECLARATION_FIELDS)}")
    for key, meaning in DECLARATION_FIELDS.items():
        if key not in declaration:
            raise ValueError(f"declaration field {key!r} is missing: {meaning}")
    out = dict(declaration)
    for key in ("privileged", "tuned_on_validation_seeds"):
        if not isinstance(out[key], bool):
            raise ValueError(f"declaration field {key!r} must be true or false, got {out[key]!r}")
    if isinstance(out["training_env_steps"], bool) or not isinstance(out["training_env_steps"], int):
        raise ValueError(
            f"declaration field 'training_env_steps' must be an integer, got {out['training_env_steps']!r}"
        )
    for key in ("training_env_steps", "training_cpu_hours", "training_gpu_hours"):
        if isinstance(out[key], bool) or not isinstance(out[key], (int, float)) or out[key] < 0:
            raise ValueError(f"declaration field {key!r} must be a non-negative number, got {out[key]!r}")
    if not isinstance(out["source"], str) or not out["source"].strip():
        raise ValueError("declaration field 'source' must be a non-empty text (a paper, a repository)")
    return out


def budget_track(declaration: Mapping[str, Any]) -> str:
    """The training-budget group of an entry (``BUDGET_TRACKS``)."""
    steps = declaration["training_env_steps"]
    return next(title for bound, title in BUDGET_TRACKS if bound is None or steps <= bound)


def package_facts() -> dict[str, Any]:
    """The package's name, version and git commit (None outside a git checkout)."""
    from cluster_envs import __version__

    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True,
                                timeout=10).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"name": "cluster-envs", "version": __version__, "commit": commit}


NUMERIC_STACK = ("numpy", "scipy", "numba", "torch", "onnxruntime")


def platform_facts() -> dict[str, Any]:
    """What the last bits of an episode's floats depend on besides the package: the machine and its CPU, Python and
    the numeric libraries (None for one not installed). Validation tells float noise from another policy with it."""
    cpu = platform.processor()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        cpu = next((line.partition(":")[2].strip() for line in cpuinfo.read_text().splitlines()
                    if line.startswith("model name")), cpu)  # fmt: skip
    facts = {"machine": platform.machine(), "cpu": cpu, "python": platform.python_version()}
    for name in NUMERIC_STACK:
        try:
            facts[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            facts[name] = None
    return facts


def env_version(env_id: str) -> str:
    return env_id.rpartition("-")[2]


def build_record(
    entry: Any, declaration: Mapping[str, Any], comparisons: Mapping[str, Any] | Sequence[Any], protocol: str
) -> dict[str, Any]:
    """The record of ``entry`` (an ``AgentSpec``, or a mapping with name, kind and source) from the comparisons it
    played in (one per env and track)."""
    from baselines.eval import sanity

    if isinstance(entry, Mapping):
        facts = {key: entry[key] for key in ("name", "kind", "source")}
        facts["algo"] = entry.get("algo")
    else:
        facts = {"name": entry.name, "kind": entry.kind, "source": entry.source, "algo": entry.algo}
    if facts["kind"] == "object":
        facts["source"] = "a Python object (validate with the same object or its MODULE:NAME)"
    name = facts["name"]
    results = []
    for comparison in comparisons.values() if isinstance(comparisons, Mapping) else comparisons:
        setting = comparison.setting
        scores = comparison.normalized_scores(name)
        score = comparison.normalized(name)
        top = setting.oracle_value
        if top is None:
            top = float(np.mean(comparison.values(setting.oracle_agent, setting.headline)))
        naive = float(np.mean(comparison.values(setting.naive_agent, setting.headline)))
        runs = comparison.rl_runs.get(name, {}).get("runs", [])
        results.append({
            "env_id": comparison.env_id,
            "env_version": env_version(comparison.env_id),
            "track": comparison.track,
            "env_kwargs": comparison.agent_env_kwargs[name],
            "seeds": comparison.seeds,
            "instances": {str(s): i for s, i in comparison.instances.items()},
            "headline": setting.headline,
            "anchors": {"naive": setting.naive_agent, "naive_mean": naive,
                        "clairvoyant": setting.oracle_agent or setting.oracle_value_name, "clairvoyant_mean": top},
            "normalized": {"over": score.get("interval") or score.get("no_interval"), "scores": scores.tolist(),
                           "mean": score["mean"], "ci_low": score["ci_low"], "ci_high": score["ci_high"]},
            "flags": [f.key for f in sanity.flags(comparison) if name in f.key.partition(":")[2].split("=")],
            "rl_runs": [{**{k: run[k] for k in ("training_seed", "total_timesteps", "source")},
                         "train_seconds": run.get("train_seconds"), "path": _relative(run["path"])} for run in runs],
            "episodes": [
                {"seed": e.seed, "training_seed": e.training_seed, "metrics": e.metrics,
                 "actions": e.actions.to_json()}
                for e in comparison.episodes if e.agent == name
            ],
        })  # fmt: skip
    return {
        "schema_version": SCHEMA_VERSION,
        "entry": facts,
        "declaration": dict(declaration),
        "budget_track": budget_track(declaration),
        "package": package_facts(),
        "platform": platform_facts(),
        "protocol": protocol,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "results": results,
    }


def _relative(path: str | Path) -> str:
    """A shipped run's folder relative to the repository (records never hold a machine's paths)."""
    root = Path(__file__).resolve().parents[2]
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return Path(path).name


def write_record(record: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``record`` to ``path`` atomically (a temporary file in the same folder, renamed over it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(record, out, indent=1, default=repr)
            out.write("\n")
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep a shared checkout's readers out
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_record(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"record {str(path)!r} does not exist")
    record = json.loads(path.read_text())
    if record.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"record {str(path)!r} has schema_version {record.get('schema_version')!r}; this package "
                         f"reads {SCHEMA_VERSION}")  # fmt: skip
    return record


def check_versions(record: Mapping[str, Any], where: str) -> None:
    """Refuse a record of another package version or env version, naming both."""
    from cluster_envs import __version__

    made = record["package"]["version"]
    if made != __version__:
        raise ValueError(f"{where} was made with cluster-envs {made}; this is cluster-envs {__version__}: evaluate "
                         "the agent again")  # fmt: skip
    registered = {env_id.rpartition("-")[0]: env_id for env_id in gym.registry}
    for result in record["results"]:
        env_id = result["env_id"]
        current = registered.get(env_id.rpartition("-")[0])
        if current is None:
            raise ValueError(f"{where} was made on {env_id}, which this package does not register")
        if env_version(current) != result["env_version"] or env_id not in gym.registry:
            raise ValueError(f"{where} was made on {env_id} ({result['env_version']}); this package has "
                             f"{current} ({env_version(current)}): evaluate the agent again")  # fmt: skip
