"""Golden trajectories: one JSON per env id under ``tests/robustness/golden/``, compared by the test suite.

Each file holds, for the id's default preset and seeds 0, 1, 2, a SHA-256 of the first ``STEPS`` steps under
actions drawn from ``np.random.default_rng(seed)`` (the env reset with the same seed, and reset without a seed
at each episode end): one hash over observations, rewards and flags (``trajectory``) and one over the scalar
``info`` keys listed in the file (``info``). Values are rounded to 2^-30 relative precision before hashing,
so last-bit noise in a library's maths does not flip a hash while any real change does.

A changed hash means the env's behaviour changed: bump the id's ``-vN`` and add a ``CHANGELOG.md`` line
(docs/versioning.md). Regenerate, after review, with::

    python -m tests.robustness.robust_golden --update [ENV_ID ...]

(run from the repository root). ``--check`` prints which ids differ without writing.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator

from .robust_common import REGISTERED, flatten, sample_action, scalar_info

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
SEEDS = (0, 1, 2)
STEPS = 1000
MANTISSA_BITS = 30
UPDATE_COMMAND = "python -m tests.robustness.robust_golden --update"


def golden_path(env_id: str) -> Path:
    return GOLDEN_DIR / f"{env_id}.json"


def default_preset(env_id: str) -> str:
    env_class = load_env_creator(gym.spec(env_id).entry_point)
    return inspect.signature(env_class.__init__).parameters["preset"].default


def quantize(values: Any) -> np.ndarray:
    """float64 values rounded to ``MANTISSA_BITS`` bits of mantissa (NaN and inf kept)."""
    x = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(x)
    rounded = np.ldexp(np.round(mantissa * 2.0**MANTISSA_BITS) / 2.0**MANTISSA_BITS, exponent)
    return np.where(np.isfinite(x), rounded, x)


def trajectory_digest(env_id: str, seed: int, steps: int = STEPS, info_keys: list[str] | None = None) -> dict:
    """The hashes and a few readable totals of one seeded run (``info_keys=None``: every scalar key seen)."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    traj, info_hash = hashlib.sha256(), hashlib.sha256()
    obs, _ = env.reset(seed=seed)
    traj.update(quantize(flatten(obs)).tobytes())
    seen: set[str] = set()
    total_reward, episodes = 0.0, 0
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(sample_action(env.action_space, rng))
        traj.update(quantize(np.concatenate([flatten(obs), [reward]])).tobytes())
        traj.update(bytes([terminated, truncated]))
        scalars = scalar_info(info)
        seen.update(scalars)
        keys = sorted(scalars) if info_keys is None else info_keys
        info_hash.update(quantize([scalars.get(k, np.nan) for k in keys]).tobytes())
        info_hash.update(",".join(k for k in keys if k in scalars).encode())
        total_reward += float(reward)
        if terminated or truncated:
            episodes += 1
            obs, _ = env.reset()
            traj.update(quantize(flatten(obs)).tobytes())
    env.close()
    return {
        "trajectory": traj.hexdigest(),
        "info": info_hash.hexdigest(),
        "return": total_reward,
        "episodes_ended": episodes,
        "info_keys_seen": sorted(seen),
    }


def generate(env_id: str) -> dict:
    first = trajectory_digest(env_id, SEEDS[0])
    # The per-step key list must be fixed before hashing: use every key the first seed ever produced.
    keys = [k for k in first["info_keys_seen"] if not k.startswith("episode_summary.")]
    runs = {str(s): trajectory_digest(env_id, s, STEPS, keys) for s in SEEDS}
    return {
        "env_id": env_id,
        "preset": default_preset(env_id),
        "steps": STEPS,
        "seeds": list(SEEDS),
        "mantissa_bits": MANTISSA_BITS,
        "info_keys": keys,
        "runs": {s: {k: v for k, v in run.items() if k != "info_keys_seen"} for s, run in runs.items()},
        "regenerate": f"{UPDATE_COMMAND} {env_id}",
    }


def compare(env_id: str) -> list[str]:
    """Human-readable differences between the stored golden file of ``env_id`` and a fresh run ([] if equal)."""
    path = golden_path(env_id)
    if not path.exists():
        return [
            f"{env_id} has no golden trajectory file {path}; "
            f"generate it with `{UPDATE_COMMAND} {env_id}` from the repository root, review and commit it"
        ]
    stored = json.loads(path.read_text())
    problems = []
    if stored["preset"] != default_preset(env_id):
        problems.append(f"default preset is now {default_preset(env_id)!r}, golden file has {stored['preset']!r}")
    for seed in stored["seeds"]:
        want = stored["runs"][str(seed)]
        got = trajectory_digest(env_id, seed, stored["steps"], stored["info_keys"])
        missing = sorted(set(stored["info_keys"]) - set(got["info_keys_seen"]))
        if missing:
            problems.append(f"seed {seed}: info keys {missing} are no longer produced")
        for part in ("trajectory", "info"):
            if got[part] != want[part]:
                problems.append(
                    f"seed {seed}: {part} hash differs (return over {stored['steps']} steps: "
                    f"golden {want['return']!r}, now {got['return']!r})"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env_ids", nargs="*", help="ids to process (default: every registered id)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--update", action="store_true", help="write the golden files")
    action.add_argument("--check", action="store_true", help="compare with the golden files")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.env_ids) - set(REGISTERED))
    if unknown:
        parser.error(f"unknown env ids {unknown}; registered: {REGISTERED}")
    failed = False
    for env_id in args.env_ids or REGISTERED:
        if args.update:
            GOLDEN_DIR.mkdir(exist_ok=True)
            golden_path(env_id).write_text(json.dumps(generate(env_id), indent=2) + "\n")
            print(f"wrote {golden_path(env_id)}")
        else:
            problems = compare(env_id)
            failed |= bool(problems)
            print(f"{env_id}: " + ("ok" if not problems else "\n  ".join(["DIFFERS", *problems])))
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
