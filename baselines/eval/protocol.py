"""Per env id: how to compare agents on it and how to train RL on it. A new id needs one entry in ``protocol.yml``
(beside this module; ``settings()`` reads and validates it on first use, ``EnvSetting`` documents its keys).

An entry is one row of the benchmark's protocol (``docs/benchmark.md``). It names the paper's algorithm (the
reference of the paired differences), the naive baseline (score 0) and the clairvoyant anchor (score 1): a
privileged agent that knows the hidden parameters and never learns, or, where the exact offline optimum is cheap
and closed-form, its headline value (``oracle_value``, e.g. regret 0 of Lemma 4's benchmark). It says how the
instance is drawn (``instance_kwarg``: the env kwarg that fixes it, which the held-out track sets per evaluation
seed; None when the reset seed draws it), which agents are ablations of the paper's algorithm (another reading of
the printed text), and explains each sanity flag of the benchmark's table
(``explanations``, keyed as ``baselines.eval.sanity`` names the flags; the report prints them) and each surprise of
a learning-curve page (``regime:dominates:<row>``, ``regime:level:<row>``: ``baselines.eval.horizons``). It also gives
the metrics to report with their direction,
the per-step ``info`` keys to plot as curves, the env kwargs every agent runs with (where the default
preset's metrics would not compare RL and the papers' agents fairly) and the env kwargs that make RL
learning sensible, with the observation wrapper RL sees the env through (``rl_wrapper``: training,
rl-zoo3's ``env_wrapper`` and the RL-to-Agent adapter apply the same one). The RL kwargs may change
only how an action is read (or what the agent observes within the information rule), never the
dynamics, the reward or the metrics, so RL and reference agents are scored on the same scale.
The RL hyperparameters themselves live in rl-zoo3's YAML format under ``baselines/rl/hyperparams/``.

Ids without an entry still work with ``compare`` (means and intervals, no paired differences and no
RL); ``benchmark`` skips them with a note.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from cluster_envs.registration import RL_IDS

HIGHER, LOWER = 1, -1
AS_PRINTED, OUR_READING, OURS = "as printed", "our reading: ", "ours, after the paper"  # EnvSetting.paper_reading
# Env kwargs that change only how an action is read or what the agent observes (and how an infeasible action
# is handled, which a reference agent never sends), never the dynamics, the reward or the metrics. An agent
# needing any other kwarg at a value the comparison does not use faces a different problem (e.g. opm_gc's
# capacities on ClusterApprox-v1), so `compare` does not put it next to the others.
# ClusterBilinear-v0's max_visible_jobs only sizes the per-job view; ClusterApprox-v1's sets which jobs can run.
FORMAT_KWARGS = frozenset({"action_mode", "observation_mode", "observation_format", "invalid_action"})
ENV_FORMAT_KWARGS = {"ClusterBilinear-v0": frozenset({"max_visible_jobs"})}


def format_kwargs(env_id: str) -> frozenset[str]:
    """The env kwargs of ``env_id`` that change only the action or observation format."""
    return FORMAT_KWARGS | ENV_FORMAT_KWARGS.get(env_id, frozenset())


@dataclass(frozen=True)
class EnvSetting:
    paper_agent: str
    naive_agent: str
    oracle_agent: str | None  # the clairvoyant 1-anchor (privileged); None: score 1 is oracle_value
    headline: str
    metrics: Mapping[str, int]  # metric -> HIGHER or LOWER is better, in report order
    curves: tuple[str, ...]  # scalar per-step info keys, plotted as the paper plots them
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)  # every agent's, on top of the default preset
    rl_env_kwargs: Mapping[str, Any] = field(default_factory=dict)  # the RL agent's own needs
    rl_algo_env_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # per algorithm, on top
    rl_wrapper: str | None = None  # "module.Class" of a gymnasium.ObservationWrapper RL sees the env through
    oracle_value: float | None = None
    oracle_value_name: str = "the env's offline benchmark"  # what oracle_value is the headline value of
    instance_kwarg: str | None = None  # the env kwarg fixing the instance; None: the reset seed draws it
    ablations: Mapping[str, str] = field(default_factory=dict)  # agent -> which reading of the paper it is
    # a sanity flag (baselines.eval.sanity), a horizons page's surprise (regime:dominates|level:<row>) or its note on
    # where a row stands at t = T (regime:note:<row>) -> why
    explanations: Mapping[str, str] = field(default_factory=dict)
    rl_algo: str = "ppo"  # the benchmark's RL row (a baselines.rl.config.ALGOS name; its interface: rl_needs(rl_algo))
    rl_steps: int = 200_000  # training steps of the benchmark's RL row
    rl_steps_quick: int = 50_000  # ... and of `benchmark --quick`
    rl_seeds: int = 5  # training seeds of the benchmark's RL row (0 .. rl_seeds - 1), each a run of its own
    kwargs_reasons: Mapping[str, str] = field(default_factory=dict)  # env_kwargs key -> why every agent runs with it
    # agent -> its tuning budget on the validation seeds and where the study is (cluster-envs tune-agent; PPO's in
    # docs/appendix/rl_curves/); an agent not listed runs with its printed/default constants
    tuning: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    # What the paper's-algorithm row is: "as printed", "our reading: <what we read>" (the paper's algorithm where
    # its text is ambiguous or wrong, read as stated) or "ours, after the paper" (our design; it does not enter the
    # paper's-algorithm aggregate). "" while not stated.
    paper_reading: str = ""

    def __post_init__(self) -> None:
        if self.headline not in self.metrics:
            raise ValueError(f"headline={self.headline!r} must be one of the metrics {list(self.metrics)}")
        if (self.oracle_agent is None) == (self.oracle_value is None):
            raise ValueError("give exactly one of oracle_agent and oracle_value (the clairvoyant 1-anchor)")
        for name in ("rl_steps", "rl_steps_quick", "rl_seeds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        reading = self.paper_reading
        stated = reading.startswith(OUR_READING) and reading.removeprefix(OUR_READING).strip()
        if reading not in ("", AS_PRINTED, OURS) and not stated:
            raise ValueError(
                f"paper_reading={reading!r} must be {AS_PRINTED!r}, {OURS!r} or {OUR_READING!r} followed by the reading"
            )
        unknown = sorted(set(self.kwargs_reasons) - set(self.env_kwargs))
        if unknown:
            raise ValueError(f"kwargs_reasons names {unknown}, which are not among env_kwargs {list(self.env_kwargs)}")
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(self, "env_kwargs", MappingProxyType(dict(self.env_kwargs)))
        object.__setattr__(self, "rl_env_kwargs", MappingProxyType(dict(self.rl_env_kwargs)))
        for name in ("ablations", "explanations", "kwargs_reasons", "tuning"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        algo_kwargs = {algo: MappingProxyType(dict(kw)) for algo, kw in self.rl_algo_env_kwargs.items()}
        object.__setattr__(self, "rl_algo_env_kwargs", MappingProxyType(algo_kwargs))

    @property
    def paper_label(self) -> str:
        """The paper's-algorithm row's label: "paper (as printed)", "paper (our reading: ...)" or "ours, after the
        paper"."""
        if self.paper_is_ours:
            return OURS
        return f"paper ({self.paper_reading or 'reading not stated'})"

    @property
    def paper_tag(self) -> str:
        """``paper_label`` in short, for a row label: "paper, as printed", "paper, our reading", "ours, after the
        paper" (or "paper" while not stated)."""
        if self.paper_is_ours:
            return OURS
        if not self.paper_reading:
            return "paper"
        return "paper, our reading" if self.paper_reading.startswith(OUR_READING) else f"paper, {AS_PRINTED}"

    @property
    def paper_is_ours(self) -> bool:
        return self.paper_reading == OURS

    @property
    def rl_training_kwargs(self) -> dict[str, Any]:
        """The env kwargs RL trains with (and the ``env_kwargs`` of the rl-zoo3 YAML sections)."""
        return {**self.env_kwargs, **self.rl_env_kwargs}

    def rl_needs(self, algo: str) -> dict[str, Any]:
        """The env kwargs a trained ``algo`` agent needs (e.g. MaskablePPO: binary actions)."""
        return {**self.rl_env_kwargs, **self.rl_algo_env_kwargs.get(algo, {})}

    def training_kwargs(self, algo: str) -> dict[str, Any]:
        """The env kwargs ``algo`` trains with: the ``env_kwargs`` of its rl-zoo3 YAML section."""
        return {**self.env_kwargs, **self.rl_needs(algo)}

    @property
    def reference_agents(self) -> list[str]:
        """The agents every comparison runs: the paper's algorithm, the naive baseline and the oracle."""
        return [a for a in (self.paper_agent, self.naive_agent, self.oracle_agent) if a is not None]

    @property
    def oracle_text(self) -> str:
        if self.oracle_agent is not None:
            return f"`{self.oracle_agent}`"
        return f"{self.oracle_value_name} (`{self.headline}` = {self.oracle_value:g})"

    def kwargs_text(self, env_kwargs: Mapping[str, Any]) -> str:
        """What a comparison run with ``env_kwargs`` says of the entry's env kwargs that have a reason: the value
        every agent ran with and why, or that the caller replaced the benchmark's value."""
        parts = []
        for key, reason in self.kwargs_reasons.items():
            ours, used = self.env_kwargs[key], env_kwargs.get(key)
            if used == ours:
                parts.append(f"`{key}={ours!r}` for every agent: {reason}.")
            else:
                parts.append(f"`{key}={used!r}` for every agent, set by the caller (the benchmark's `{key}={ours!r}`: "
                             f"{reason}).")  # fmt: skip
        return " ".join(parts)


PROTOCOL_FILE = Path(__file__).with_name("protocol.yml")
FLATTEN = "gymnasium.wrappers.FlattenObservation"  # the rl_wrapper of the ids with Dict observations
DIRECTIONS = {"higher": HIGHER, "lower": LOWER}


class ProtocolError(ValueError):
    """A protocol file that does not describe valid entries; the message names the file and the key."""


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_kwargs(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(key, str) for key in value)


def _is_texts(value: Any) -> bool:
    return _is_kwargs(value) and all(isinstance(text, str) for text in value.values())


def _is_algo_kwargs(value: Any) -> bool:
    return _is_kwargs(value) and all(_is_kwargs(kwargs) for kwargs in value.values())


def _is_metrics(value: Any) -> bool:
    return _is_kwargs(value) and all(direction in DIRECTIONS for direction in value.values())


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


# Field -> (its check, what the file must give).
FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "paper_agent": (_is_str, "an agent name"),
    "naive_agent": (_is_str, "an agent name"),
    "oracle_agent": (_optional(_is_str), "an agent name or null"),
    "headline": (_is_str, "a metric name"),
    "metrics": (_is_metrics, "a mapping metric -> higher or lower"),
    "curves": (_is_str_list, "a list of info keys"),
    "env_kwargs": (_is_kwargs, "a mapping of env kwargs"),
    "rl_env_kwargs": (_is_kwargs, "a mapping of env kwargs"),
    "rl_algo_env_kwargs": (_is_algo_kwargs, "a mapping algorithm -> mapping of env kwargs"),
    "rl_wrapper": (_optional(_is_str), "a 'module.Class' name or null"),
    "oracle_value": (_optional(_is_number), "a number or null"),
    "oracle_value_name": (_is_str, "a text"),
    "instance_kwarg": (_optional(_is_str), "an env kwarg name or null"),
    "ablations": (_is_texts, "a mapping agent -> text"),
    "explanations": (_is_texts, "a mapping sanity flag -> text"),
    "rl_algo": (_is_str, "an algorithm name"),
    "rl_steps": (_is_int, "an integer"),
    "rl_steps_quick": (_is_int, "an integer"),
    "rl_seeds": (_is_int, "an integer"),
    "kwargs_reasons": (_is_texts, "a mapping env kwarg -> text"),
    "tuning": (_is_texts, "a mapping agent -> text"),
    "notes": (_is_str, "a text"),
    "paper_reading": (_is_str, "'as printed', 'our reading: <the reading>' or 'ours, after the paper'"),
}


def parse_entry(env_id: str, entry: Any, source: Path | str = PROTOCOL_FILE) -> EnvSetting:
    """One entry of a protocol file as an ``EnvSetting``; a ``ProtocolError`` names ``source`` and the key."""
    where = f"{source}: {env_id}"
    if not isinstance(entry, dict):
        raise ProtocolError(f"{where}: an entry must be a mapping of EnvSetting fields, got {type(entry).__name__}")
    fields = {f.name: f for f in dataclasses.fields(EnvSetting)}
    unknown = sorted(set(entry) - set(fields), key=str)
    if unknown:
        raise ProtocolError(f"{where}: unknown key {unknown[0]!r}; allowed: {sorted(fields)}")
    required = [name for name, f in fields.items() if f.default is MISSING and f.default_factory is MISSING]
    missing = [name for name in required if name not in entry]
    if missing:
        raise ProtocolError(f"{where}: missing required key {missing[0]!r} (required: {required})")
    for key, value in entry.items():
        check, wanted = FIELD_TYPES[key]
        if not check(value):
            raise ProtocolError(f"{where}.{key}: must be {wanted}, got {value!r}")
    values = dict(entry)
    values["metrics"] = {metric: DIRECTIONS[direction] for metric, direction in entry["metrics"].items()}
    values["curves"] = tuple(entry["curves"])
    try:
        return EnvSetting(**values)
    except ValueError as error:
        raise ProtocolError(f"{where}: {error}") from None


def read_data_file(path: Path | str, error: type[ValueError]) -> Any:
    """The YAML file at ``path`` (an experiment's data: the protocol, the studies), or ``error`` naming the file."""
    try:
        with open(path, encoding="utf-8") as file:
            return yaml.safe_load(file)
    except yaml.YAMLError as problem:
        raise error(f"{path}: not valid YAML: {problem}") from None


def load_protocol(path: Path | str) -> dict[str, EnvSetting]:
    """The entries of the protocol file at ``path``, env id -> ``EnvSetting``, validated."""
    data = read_data_file(path, ProtocolError)
    if not isinstance(data, dict) or not all(isinstance(env_id, str) for env_id in data):
        raise ProtocolError(f"{path}: must be a mapping env id -> entry")
    return {env_id: parse_entry(env_id, entry, path) for env_id, entry in data.items()}


@functools.cache
def settings() -> dict[str, EnvSetting]:
    """The benchmark's protocol, env id -> entry, read from ``protocol.yml`` on first use (then cached)."""
    return load_protocol(PROTOCOL_FILE)


class _Settings(MutableMapping):
    """``settings()`` as a module-level mapping, read on first access rather than at import."""

    def __getitem__(self, env_id: str) -> EnvSetting:
        return settings()[env_id]

    def __setitem__(self, env_id: str, setting: EnvSetting) -> None:
        settings()[env_id] = setting

    def __delitem__(self, env_id: str) -> None:
        del settings()[env_id]

    def __iter__(self) -> Iterator[str]:
        return iter(settings())

    def __len__(self) -> int:
        return len(settings())

    def __repr__(self) -> str:
        return f"SETTINGS({list(self)})"


SETTINGS: MutableMapping[str, EnvSetting] = _Settings()


def env_setting(env_id: str) -> EnvSetting | None:
    """The entry of ``env_id`` (``"cluster_envs:"`` prefix allowed), or None if it has none."""
    return SETTINGS.get(env_id.split(":")[-1])


def require_setting(env_id: str) -> EnvSetting:
    setting = env_setting(env_id)
    if setting is None:
        known = list(SETTINGS)
        raise ValueError(f"env_id={env_id!r} has no entry in baselines/eval/{PROTOCOL_FILE.name}; known: {known}")
    return setting


def rl_base(env_id: str) -> tuple[str, dict[str, Any]]:
    """``env_id`` without a ``"cluster_envs:"`` prefix and no kwargs, or for an RL-ready id (``Cluster<Name>RL-vN``)
    its base id and the kwargs the RL-ready id fixes."""
    name = env_id.split(":")[-1]
    base, fixed = RL_IDS.get(name, (name, {}))
    return base, dict(fixed)


def rl_setting(env_id: str) -> EnvSetting:
    """The entry RL trains ``env_id`` under: its own, or for an RL-ready id its base id's with the id's fixed kwargs
    as the RL kwargs of every algorithm (the id fixes the interface; the problem's env kwargs stay the entry's)."""
    base, fixed = rl_base(env_id)
    setting = require_setting(base)
    if not fixed:
        return setting
    return dataclasses.replace(setting, rl_env_kwargs=fixed, rl_algo_env_kwargs={})


# -- seed rules: which episodes evaluate, validate and train ------------------------------------------------------

TRAIN_SEED_BASE = 1_000_000_000  # training env seeds are >= this; evaluation seeds must be below it
# The benchmark's evaluation seeds per protocol (``cluster-envs benchmark --quick`` and without it; the leaderboard's
# records are on the quick ones).
EVALUATION_SEEDS = {"quick": range(5), "full": range(10)}
# The seeds every RL choice (tuning, learning curves for budgets) is validated on: disjoint from the benchmark's
# evaluation seeds 0-9 and from the training seeds, so no choice is fitted to the episodes that score it.
VALIDATION_SEEDS = (100, 101, 102, 103, 104)
HELD_OUT_INSTANCE_BASE = 1000  # held-out track: evaluation seed s runs on instance HELD_OUT_INSTANCE_BASE + s


def check_eval_seeds(seeds: list[int]) -> None:
    """Evaluation seeds: at least one, distinct (a repeated seed is the same episode counted twice), non-negative
    and below the training seeds."""
    if not seeds:
        raise ValueError("seeds must name at least one evaluation seed")
    repeated = sorted(s for s, count in Counter(seeds).items() if count > 1)
    if repeated:
        raise ValueError(f"seeds must be distinct; repeated: {repeated[:3]}")
    bad = [s for s in seeds if not 0 <= s < TRAIN_SEED_BASE]
    if bad:
        raise ValueError(f"seeds {bad[:3]} must be non-negative and below {TRAIN_SEED_BASE}, where training starts")


def training_seed(seed: int, resumed_at: int = 0) -> int:
    """The seed of the first training env: above every evaluation seed, and fresh when a run is resumed."""
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    state = np.random.SeedSequence([seed, resumed_at]).generate_state(1)[0]
    return TRAIN_SEED_BASE + int(state % 2**30)


def instance_kwargs(env_id: str, env_kwargs: Mapping[str, Any], kwarg: str | None, seed: int | None) -> dict[str, Any]:
    """The env kwargs that pin an evaluation episode's instance: ``{kwarg: HELD_OUT_INSTANCE_BASE + seed}`` on the
    held-out track, the instance the env builds from ``env_kwargs`` on the fixed track, {} where the reset seed
    draws it."""
    if kwarg is None:
        return {}
    if seed is not None:
        return {kwarg: HELD_OUT_INSTANCE_BASE + seed}
    env = gym.make(env_id, **env_kwargs)
    value = getattr(env.unwrapped.config, kwarg)
    env.close()
    return {kwarg: value}


MAX_SEEDS = 100_000  # far beyond any evaluation; a longer --seeds list is a typo, not a request for memory


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"0,3,7"`` → [0, 3, 7]; ranges and lists combine (``"0-2,9"``).

    The ends and the count are checked before any range is expanded, so a huge range fails at once."""
    ranges = []
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            ranges.append(range(int(low), int(high if dash else low) + 1))
    except ValueError:
        raise ValueError(f"--seeds {text!r} is malformed; use a range like 0-4 or a list like 0,3,7") from None
    try:
        for seeds in ranges:
            if not seeds:
                raise ValueError(f"range {seeds.start}-{seeds.stop - 1} is empty")
            check_eval_seeds(sorted({seeds[0], seeds[-1]}))
        count = sum(len(seeds) for seeds in ranges)
        if count > MAX_SEEDS:
            raise ValueError(f"names {count} seeds; at most {MAX_SEEDS} are allowed")
        seeds = [seed for part in ranges for seed in part]
        check_eval_seeds(seeds)
    except ValueError as err:
        raise ValueError(f"--seeds {text!r}: {err}") from None
    return seeds
