"""Validation by replay: a record's episodes (all, or an evenly spaced sample) replayed through the same episode
loop, every metric and action digest checked; a record of another package or env version is refused with both
versions named.

A replay on the platform the record was made on (``record.platform_facts``) is bit-exact: the action digests are
equal. Another CPU or numeric library sums the same floats in another order, which moves an action's last bits
(a network's output, a least-squares estimate) and from there every later float by as little: there the digest may
differ, and the replay agrees when every metric is within ``metrics_disagree``'s tolerance."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.eval.harness import ActionDigest, Task
from baselines.eval.record import check_versions, platform_facts, read_record
from baselines.eval.submission import agent_spec, for_env

METRIC_RTOL = 1e-6  # of the metric itself
# of the episode's largest metric: a difference of two totals (the regret) keeps their absolute rounding error
METRIC_SCALE_TOL = 1e-8


def metrics_disagree(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> str | None:
    """The first recorded metric the replay does not reproduce (missing, or further than ``METRIC_RTOL`` of itself
    plus ``METRIC_SCALE_TOL`` of the episode's largest metric), as "metric 'name' recorded x, replayed y"; None
    when every metric agrees."""
    scale = max((abs(v) for v in recorded.values() if v is not None and np.isfinite(v)), default=0.0)
    for metric, value in recorded.items():
        again = replayed.get(metric)
        if again is None or not np.isclose(again, value, rtol=METRIC_RTOL, atol=METRIC_SCALE_TOL * scale + 1e-12,
                                           equal_nan=True):  # fmt: skip
            return f"metric {metric!r} recorded {value!r}, replayed {again!r}"
    return None


def platform_difference(record: Mapping[str, Any]) -> str | None:
    """How the platform the record was made on differs from this one ("recorded on another platform: numpy 2.3.1
    then, 2.4.6 now"), None when it is the same."""
    made, here = record.get("platform"), platform_facts()
    if made is None:
        return "the record does not name the platform it was made on"
    changed = [f"{key} {made.get(key)} then, {value} now" for key, value in here.items() if made.get(key) != value]
    return "recorded on another platform: " + "; ".join(changed) if changed else None


def sample_indices(count: int, sample: int | None) -> list[int]:
    """Every index, or ``sample`` of them evenly spaced (deterministic: CI replays the same episodes every run)."""
    if sample is None or sample >= count:
        return list(range(count))
    if sample < 1:
        raise ValueError(f"sample must be a positive integer, got {sample}")
    return sorted({int(i) for i in np.linspace(0, count - 1, sample).round()})


def _players(record: Mapping[str, Any], result: Mapping[str, Any], agent: Any, algo: str | None) -> dict:
    """Training seed -> what a ``Task`` plays for this result's episodes."""
    entry = record["entry"]
    if entry["kind"] == "registered":
        return {None: entry["name"]}
    if entry["kind"] == "rl":
        from baselines.rl.agent import SavedPolicy

        root = Path(__file__).resolve().parents[2]
        return {run["training_seed"]: SavedPolicy.from_dir(root / run["path"], name=entry["name"])
                for run in result["rl_runs"]}  # fmt: skip
    if agent is None:
        raise ValueError(f"entry {entry['name']!r} ({entry['kind']}: {entry['source']}) is replayed with its agent: "
                         "pass --agent MODULE:NAME or --policy PATH (agent= in Python)")  # fmt: skip
    source = for_env(agent, result["env_id"])
    if isinstance(agent, str) and "{env}" in agent and result.get("policy_file"):
        recorded = Path(agent).parent / result["policy_file"]  # the model this result was made with
        source = str(recorded) if recorded.exists() else source
    spec = agent_spec(source, result["env_id"], name=entry["name"], algo=algo or entry.get("algo") or "ppo")
    format_kwargs = {k: v for k, v in result["env_kwargs"].items() if k in dict(spec.env_kwargs)}
    return {None: dataclasses.replace(spec, env_kwargs=tuple(sorted(format_kwargs.items())))}


def shortest_episode(record: Mapping[str, Any]) -> int:
    """The index (over every result's episodes, in record order) of the first of the record's shortest episodes
    (fewest steps): the cheapest replay of an entry, which CI makes on every run."""
    steps = [episode["metrics"]["steps"] for result in record["results"] for episode in result["episodes"]]
    return int(np.argmin(steps))


@dataclasses.dataclass(frozen=True)
class Replayed:
    """One episode replayed and found to agree: ``first_difference`` is the first step whose action differs (None:
    bit-exact), ``platform`` how the record's platform differs from this one (None: the same)."""

    label: str
    metrics: int
    steps: int
    first_difference: int | None
    platform: str | None

    @property
    def bit_exact(self) -> bool:
        return self.first_difference is None

    @property
    def actions(self) -> str:
        if self.bit_exact:
            return f"the actions agree over all {self.steps} steps"
        return f"the actions differ from step {self.first_difference} on; {self.platform}"

    def __str__(self) -> str:
        return f"{self.label}: {self.metrics} metrics agree ({self.actions})"


def validate(
    record_path: str | Path,
    agent: Any = None,
    *,
    sample: int | None = None,
    algo: str | None = None,
    indices: Sequence[int] | None = None,
) -> list[Replayed]:
    """Replay the record's episodes (``sample``: that many, evenly spaced over all of them; ``indices``: these, over
    every result's episodes in record order) with ``agent`` (needed unless the entry is a registered agent or a
    shipped RL run) and check every metric and action digest. Returns one ``Replayed`` per episode checked (its
    ``str`` is the line to print); a mismatch is a ``ValueError`` naming the first episode, step and metric."""
    where = f"record {str(record_path)!r}"
    record = read_record(record_path)
    check_versions(record, where)
    episodes = [(result, episode) for result in record["results"] for episode in result["episodes"]]
    if sample is not None and indices is not None:
        raise ValueError("give sample (K evenly spaced episodes) or indices (these episodes), not both")
    if indices is not None and not all(0 <= i < len(episodes) for i in indices):
        raise ValueError(f"indices must lie in 0..{len(episodes) - 1} (the record's episodes), got {list(indices)}")
    checked = []
    elsewhere = platform_difference(record)
    players: dict[int, dict] = {}
    for index in sample_indices(len(episodes), sample) if indices is None else list(indices):
        result, stored = episodes[index]
        key = id(result)
        if key not in players:
            players[key] = _players(record, result, agent, algo)
        player = players[key][stored["training_seed"]]
        instance = result["instances"][str(stored["seed"])]
        kwargs = dict(result["env_kwargs"])
        if instance != "reset seed":
            from baselines.eval.protocol import env_setting

            kwargs[env_setting(result["env_id"]).instance_kwarg] = instance
        replay = Task(result["env_id"], player, stored["seed"], env_kwargs=kwargs, digest=True).run()
        label = f"episode {result['env_id']} ({result['track']}) seed {stored['seed']}"
        if stored["training_seed"] is not None:
            label += f" training seed {stored['training_seed']}"
        step = ActionDigest.from_json(stored["actions"]).first_difference(replay.actions)
        if step is not None and elsewhere is None:
            raise ValueError(
                f"{where}: {label}: the actions differ from step {step} on (action digest "
                f"{stored['actions']['sha256'][:12]}… recorded, {replay.actions.sha256[:12]}… replayed, on the "
                "platform the record was made on)"
            )
        steps = int(replay.metrics["steps"])
        replayed = Replayed(label, len(stored["metrics"]), steps, step, None if step is None else elsewhere)
        mismatch = metrics_disagree(stored["metrics"], replay.metrics)
        if mismatch is not None:
            raise ValueError(f"{where}: {label}: {mismatch} ({replayed.actions})")
        checked.append(replayed)
    return checked
