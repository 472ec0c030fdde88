"""RL interface ablations: train variants of an env id's RL setup over training seeds and score them on the
benchmark's evaluation seeds, next to the reference agents.

A study is one env id and a list of ``Variant``s (action mode, observation or action wrappers, algorithm,
hyperparameters), each a change on top of the shipped setup (the settings entry and the YAML section).
``run`` trains each variant with each training seed (stable-baselines3 directly, DummyVecEnv as ``cluster-envs
train``), evaluates the deterministic policy at the checkpoints on the evaluation seeds and appends one row per
(variant, training seed, checkpoint, evaluation seed) to ``<out>/<study>.csv``. ``table`` turns the rows into
a Markdown table: per variant and checkpoint, the headline metric and the normalized score (the benchmark's:
naive 0, oracle 1) as mean and 95% bootstrap interval over training seeds, each seed's value being its mean
over the evaluation seeds; the reference agents' rows come from ``cluster-envs compare <id> --agents all``
saved in ``<out>/refs/<id>/results.json`` (the ``refs`` command writes them), and a figure of the curves.

    cluster-envs ablate refs ClusterSLA-v1 --seeds 0-4
    cluster-envs ablate run sla_action_mode --seeds 0-2 --checkpoints 50000,100000
    cluster-envs ablate table sla_action_mode

Learning curves are the same rows at many checkpoints (``--checkpoints 25000,50000,...``): ``table`` adds, per
variant, the plateau (the first checkpoint whose mean normalized score lies inside the 95% interval of the best
checkpoint's), from which a benchmark budget (``rl_steps``) is read. The ``<key>_update`` studies compare the
shipped PPO update with the fast one of ``cluster-envs bench``'s training section (128 copies, rollout 8,192,
minibatch 2,048, 4 epochs) on every id with a settings entry.

Training runs on the id's native batched env (``baselines.rl.train.make_vec_env``, the path ``cluster-envs train``
takes; step for step the same as a ``DummyVecEnv``) where the variant allows it (no wrapper but
``FlattenObservation``; action masks only where the batched env computes them, as ClusterMultiServer-v0's and
ClusterGang-v0's do), else on a ``DummyVecEnv`` of the variant's wrapped envs. Evaluation is the harness's
(``baselines.eval.harness.evaluate``, the model as an ``SB3Agent``: :func:`policy_agent`): the evaluation seeds
as one batch of the native env where training ran on it, else episode by episode. The agent reads the variant's
wrappers as the model trained through them: observation wrappers (``BanditStatsObservation``) map its observation,
a mask wrapper (``SlotMaskAction``) gives its mask from the observation (``action_mask_from``).
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.eval.harness import evaluate, play_batch, start_batch
from baselines.eval.protocol import FLATTEN, SETTINGS, parse_seeds, read_data_file, require_setting, training_seed
from baselines.eval.stats import iqm, mean_interval, normalized
from baselines.perf.training import FAST_UPDATE
from baselines.rl.agent import SB3Agent, action_mask_function
from baselines.rl.config import MASKED, RunConfig, wrapper_class
from baselines.rl.diagnostics import action_shares, append_row, diagnostics_callback
from baselines.rl.diagnostics import markdown as diagnostics_markdown
from baselines.rl.runs import save_run
from baselines.rl.train import make_vec_env, new_model

STATS = "baselines.rl.wrappers.BanditStatsObservation"
SLOT_MASK = "baselines.rl.wrappers.SlotMaskAction"
SHIPPED = object()  # a Variant's wrappers: the settings entry's rl_wrapper


@dataclass(frozen=True)
class Variant:
    """A change of the shipped RL setup. ``section`` names the YAML file whose section gives the hyperparameters
    (default ``algo``'s); ``hyperparams`` replace keys of it (``"normalize"``, ``"n_envs"`` or model kwargs);
    ``sb3_defaults`` keeps only the policy (SB3's default hyperparameters, no normalization). ``wrappers`` are
    applied in order around the env (action wrappers first: they read the raw observation)."""

    name: str
    algo: str = "ppo"
    section: str | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrappers: Any = SHIPPED
    hyperparams: Mapping[str, Any] = field(default_factory=dict)
    sb3_defaults: bool = False
    hyperparams_file: str | None = None  # a YAML file in place of baselines/rl/hyperparams/<section>.yml


# The fast update of `cluster-envs bench`'s training section as PPO hyperparameters: 128 copies whose rollouts
# make FAST_UPDATE["rollout"] steps per update (a study variant's `fast_update: true`).
COPIES = 128
FAST = {"n_envs": COPIES, "n_steps": FAST_UPDATE["rollout"] // COPIES, "batch_size": FAST_UPDATE["batch_size"],
        "n_epochs": FAST_UPDATE["n_epochs"]}  # fmt: skip
STUDIES_FILE = Path(__file__).with_name("studies.yml")
VARIANT_KEYS = {
    "name": (str, "a text"),
    "algo": (str, "an algorithm name"),
    "section": (str, "an algorithm's YAML file name"),
    "env_kwargs": (dict, "a mapping of env kwargs"),
    "wrappers": (list, "a list of 'module.Class' names"),
    "hyperparams": (dict, "a mapping of hyperparameters"),
    "fast_update": (bool, "true or false"),
    "sb3_defaults": (bool, "true or false"),
    "hyperparams_file": (str, "a YAML file's path"),
}


class StudyError(ValueError):
    """A study file that does not describe valid studies; the message names the file and the key."""


def parse_variant(where: str, entry: Any) -> Variant:
    """One variant of a study file as a ``Variant``; a ``StudyError`` names ``where`` and the key."""
    if not isinstance(entry, dict):
        raise StudyError(f"{where}: a variant must be a mapping, got {entry!r}")
    unknown = sorted(set(entry) - set(VARIANT_KEYS), key=str)
    if unknown:
        raise StudyError(f"{where}: unknown key {unknown[0]!r}; allowed: {sorted(VARIANT_KEYS)}")
    if "name" not in entry:
        raise StudyError(f"{where}: missing required key 'name'")
    for key, value in entry.items():
        kind, wanted = VARIANT_KEYS[key]
        if not isinstance(value, kind) or (kind is list and not all(isinstance(name, str) for name in value)):
            raise StudyError(f"{where}.{key}: must be {wanted}, got {value!r}")
    values = {key: value for key, value in entry.items() if key != "fast_update"}
    if entry.get("fast_update", False):
        values["hyperparams"] = {**FAST, **entry.get("hyperparams", {})}
    if "wrappers" in values:
        values["wrappers"] = tuple(values["wrappers"])
    return Variant(**values)


def load_studies(path: Path | str) -> dict[str, tuple[str, tuple[Variant, ...]]]:
    """The studies of the file at ``path``, name -> (env id, variants), validated."""
    data = read_data_file(path, StudyError)
    if not isinstance(data, dict):
        raise StudyError(f"{path}: must be a mapping study name -> study")
    studies = {}
    for name, study in data.items():
        where = f"{path}: {name}"
        if not isinstance(study, dict) or set(study) != {"env_id", "variants"}:
            raise StudyError(f"{where}: a study must be a mapping with exactly the keys env_id and variants")
        if study["env_id"] not in SETTINGS:
            raise StudyError(f"{where}.env_id: {study['env_id']!r} has no protocol entry; known: {list(SETTINGS)}")
        if not isinstance(study["variants"], list) or not study["variants"]:
            raise StudyError(f"{where}.variants: must be a non-empty list of variants")
        variants = tuple(parse_variant(f"{where}.variants[{i}]", v) for i, v in enumerate(study["variants"]))
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            raise StudyError(f"{where}.variants: names must be distinct, got {names}")
        studies[str(name)] = (study["env_id"], variants)
    return studies


@functools.cache
def studies() -> dict[str, tuple[str, tuple[Variant, ...]]]:
    """The studies of ``studies.yml``, read on first use (then cached)."""
    return load_studies(STUDIES_FILE)


class _Studies(Mapping):
    """``studies()`` as a module-level mapping, read on first access rather than at import."""

    def __getitem__(self, name: str) -> tuple[str, tuple[Variant, ...]]:
        return studies()[name]

    def __iter__(self):
        return iter(studies())

    def __len__(self) -> int:
        return len(studies())


STUDIES: Mapping[str, tuple[str, tuple[Variant, ...]]] = _Studies()


# -- one run -------------------------------------------------------------------------------------------


@dataclass
class Setup:
    env_id: str
    headline: str
    env_kwargs: dict[str, Any]
    wrappers: tuple[str, ...]
    config: RunConfig


def setup(env_id: str, variant: Variant) -> Setup:
    setting = require_setting(env_id)
    config = RunConfig.resolve(variant.section or variant.algo, env_id, variant.env_kwargs, variant.hyperparams_file)
    config.algo = variant.algo
    env_kwargs = {**setting.training_kwargs(variant.algo), **dict(variant.env_kwargs)}
    config.env_kwargs = env_kwargs
    # The section as written (a saved run's config.yml) says what the variant changed, so a variant's run never
    # matches the shipped YAML where `compare` and `benchmark` look for a reusable run.
    if variant.sb3_defaults:
        config.model_kwargs = {"policy": config.model_kwargs["policy"]}
        config.normalize = None
        config.section = {k: v for k, v in config.section.items() if k in ("env_kwargs", "env_wrapper", "policy")}
    config.section.update(variant.hyperparams)
    for key, value in variant.hyperparams.items():
        if key == "normalize":
            config.normalize = value
        elif key == "n_envs":
            config.n_envs = int(value)
        else:
            config.model_kwargs[key] = value
    if variant.algo == "ppo_lstm":
        config.model_kwargs["policy"] = "MlpLstmPolicy"
    wrappers = (setting.rl_wrapper,) if variant.wrappers is SHIPPED else tuple(variant.wrappers)
    wrappers = tuple(w for w in wrappers if w)
    config.wrapper = wrappers[0] if wrappers == (FLATTEN,) else None
    return Setup(env_id, setting.headline, env_kwargs, wrappers, config)


def native(s: Setup) -> bool:
    """Whether the variant may train on the id's batched env: no wrapper but the flattening the native adapter
    does itself (``make_vec_env`` still falls back to a DummyVecEnv where the batched env cannot run the config,
    e.g. action masks it does not compute)."""
    return set(s.wrappers) <= {FLATTEN}


def make_env(s: Setup, monitor: bool = False) -> gym.Env:
    env = gym.make(s.env_id, **s.env_kwargs)
    if monitor:
        from stable_baselines3.common.monitor import Monitor

        env = Monitor(env)
    for name in s.wrappers:
        env = _import(name)(env)
    return env


def _import(name: str) -> type:
    if name == FLATTEN or name == STATS:
        return wrapper_class(name)
    module, _, cls = name.rpartition(".")
    return getattr(__import__(module, fromlist=[cls]), cls)


def policy_agent(s: Setup, model: Any, normalizer: Any, deterministic: bool = True) -> SB3Agent:
    """``model`` as the harness's agent on the variant's env, reading it as the model trained on it: the variant's
    observation wrappers map the raw observation, and a masked algorithm's mask is its mask wrapper's
    (``action_mask_from``, from the raw observation) or else the env's. A mask wrapper goes before the observation
    wrappers (it reads the raw observation); any other wrapper is refused."""
    kinds = [issubclass(_import(name), gym.ObservationWrapper) for name in s.wrappers]
    masks = [name for name, observes in zip(s.wrappers, kinds, strict=True) if not observes]
    observes = [name for name, observes in zip(s.wrappers, kinds, strict=True) if observes]
    if any(not hasattr(_import(name), "action_mask_from") for name in masks) or kinds != sorted(kinds):
        raise ValueError(f"wrappers {list(s.wrappers)}: the harness plays mask wrappers (with action_mask_from) "
                         "followed by observation wrappers only")  # fmt: skip
    action_mask = None
    if s.config.algo in MASKED:
        action_mask = _import(masks[0]).action_mask_from if masks else action_mask_function(s.env_id)
    raw = None
    if observes:
        with gym.make(s.env_id, **s.env_kwargs) as env:
            raw = env.observation_space
    return SB3Agent(model, normalizer, name=s.config.algo, wrappers=observes, action_mask=action_mask,
                    observation_space=raw, deterministic=deterministic)  # fmt: skip


def headline_values(s: Setup, model: Any, normalizer: Any, seeds: Sequence[int], batched: bool) -> list[float]:
    """The headline metric of the deterministic policy on each evaluation seed (``harness.evaluate``; with
    ``batched``, all seeds as one batch of the native env, where the variant trained on it)."""
    agent = policy_agent(s, model, normalizer)
    table = evaluate(s.env_id, [agent], seeds, env_kwargs=s.env_kwargs, batched=batched)
    return table.values(agent.name, s.headline).tolist()


class _ReadingActions:
    """``agent`` playing a batch of ``env``, appending each batch of actions to ``actions`` as the env reads them
    (``read_actions``, where it has an action mode: ClusterApprox's occupants) before it steps them."""

    def __init__(self, agent: SB3Agent, env: Any, actions: list[np.ndarray]) -> None:
        self.agent, self.actions = agent, actions
        self.read = getattr(env.unwrapped, "read_actions", None)

    def act_batch(self, observations: Any) -> np.ndarray:
        action = self.agent.act_batch(observations)
        self.actions.append(np.array(action if self.read is None else self.read(action)))
        return action


def checkpoint_probe(s: Setup, model: Any, normalizer: Any, seeds: Sequence[int]) -> dict[str, float]:
    """The greedy (deterministic) and the sampled policy on the evaluation seeds, one batch of the native env:
    their mean headline value and the shares of their action components, as the env reads them (ClusterApprox: the
    occupant per machine, also for ``action_mode="paced_priority"``'s Box), that are 0 (ClusterApprox: idle) or
    repeat the step before's (NaN for an action read as real numbers). The sampled play draws from torch's
    generator, which is restored after it, so a run's training does not depend on whether it is probed."""
    import torch

    out: dict[str, float] = {}
    for name, deterministic in (("greedy", True), ("sampled", False)):
        state = torch.get_rng_state()
        actions: list[np.ndarray] = []
        agent = policy_agent(s, model, normalizer, deterministic)
        env, agent, observations = start_batch(s.env_id, agent, seeds, env_kwargs=s.env_kwargs)
        try:
            endings = play_batch(env, _ReadingActions(agent, env, actions), observations)
        finally:
            env.close()
        torch.set_rng_state(state)
        out[f"{name}_value"] = float(np.mean([end.info["episode_summary"][s.headline] for end in endings]))
        shares = action_shares(np.stack(actions))
        out.update({f"{name}_{key}": value for key, value in shares.items()})
    return out


def train_and_evaluate(
    env_id: str, variant: Variant, seed: int, checkpoints: Sequence[int], eval_seeds: Sequence[int],
    save: Path | None = None, on_checkpoint: Callable[[list[dict[str, Any]]], None] | None = None,
    diagnose: Path | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Train ``variant`` with training seed ``seed``, evaluating at each checkpoint (env steps) and handing that
    checkpoint's rows to ``on_checkpoint`` (a long run's curve is kept as it goes). With ``save``, the
    final model is saved there as ``cluster-envs train`` saves a run (a shipped model can be one of a curve's
    seeds: with the shipped setup, its config is the one ``compare`` and ``benchmark`` match). With ``diagnose``,
    one row per update is appended to that CSV (``baselines.rl.diagnostics``) and, on the native env, one row per
    checkpoint (``checkpoint_probe``) to ``<its stem>-checkpoints.csv``."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    s = setup(env_id, variant)
    if native(s):
        vec_env, used = make_vec_env(s.config, training_seed(seed))
    else:
        vec_env, used = DummyVecEnv([lambda: make_env(s, monitor=True)] * s.config.n_envs), "dummy"
    model = new_model(s.config, vec_env, seed)
    model.get_env().seed(training_seed(seed))  # as baselines.rl.train.train: training seeds never meet evaluation seeds
    callback = None if diagnose is None else diagnostics_callback(diagnose, variant=variant.name, train_seed=seed)
    rows, seconds, cpu_seconds = [], 0.0, 0.0
    for checkpoint in sorted(checkpoints):
        start, cpu_start = time.perf_counter(), time.process_time()
        model.learn(total_timesteps=max(checkpoint - model.num_timesteps, 1), callback=callback,
                    reset_num_timesteps=False)  # fmt: skip
        seconds += time.perf_counter() - start
        cpu_seconds += time.process_time() - cpu_start
        normalizer = model.get_vec_normalize_env()
        values = headline_values(s, model, normalizer, eval_seeds, batched=used == "native")
        new = [
            {
                "variant": variant.name,
                "train_seed": seed,
                "timesteps": int(model.num_timesteps),
                "train_seconds": round(seconds, 2),
                "eval_seed": eval_seed,
                "value": value,
            }
            for eval_seed, value in zip(eval_seeds, values, strict=True)
        ]
        rows += new
        if on_checkpoint is not None:
            on_checkpoint(new)
        if diagnose is not None and used == "native":
            probe = checkpoint_probe(s, model, normalizer, eval_seeds)
            head = {"variant": variant.name, "train_seed": seed, "timesteps": int(model.num_timesteps)}
            append_row(diagnose.with_name(f"{diagnose.stem}-checkpoints.csv"), {**head, **probe})
    if save is not None:
        save_run(save, model, s.config, seed, train_seconds=seconds, steps_per_second=model.num_timesteps / seconds,
                 steps_per_cpu_second=model.num_timesteps / cpu_seconds, vectorization=used, threads=1)  # fmt: skip
    vec_env.close()
    return rows


def run(
    study: str, seeds: Sequence[int], checkpoints: Sequence[int], eval_seeds: Sequence[int], out: Path,
    variants: Sequence[str] | None = None, save: bool = False, diagnose: bool = False,
) -> Path:  # fmt: skip
    """Append every (variant, seed, checkpoint)'s rows to ``<out>/<study>.csv`` as each checkpoint is evaluated
    (with ``save``, each final model to ``<out>/models/<study>/<variant>/seed<seed>``; with ``diagnose``, one row
    per update to ``<out>/<study>-diagnostics.csv``)."""
    env_id, all_variants = study_of(study)
    chosen = [v for v in all_variants if variants is None or v.name in variants]
    if variants is not None and len(chosen) != len(variants):
        raise ValueError(f"variants must be among {[v.name for v in all_variants]}, got {list(variants)}")
    for v in chosen:  # before any training: a clean clone has no tuning results
        if v.hyperparams_file and not Path(v.hyperparams_file).is_file():
            raise FileNotFoundError(
                f"variant {v.name!r} of {study} reads {v.hyperparams_file}, which is missing: a tuning run writes it "
                f"(`cluster-envs tune run {env_id} --algo {v.algo} OPTIONS`, then "
                f"`cluster-envs tune write {env_id} --algo {v.algo} OPTIONS --to {v.hyperparams_file}`, OPTIONS as in "
                f"the comment of the id's section of baselines/rl/hyperparams/{v.algo}.yml); or leave the variant out "
                "with --variants"
            )
    path = out / f"{study}.csv"
    out.mkdir(parents=True, exist_ok=True)
    for variant in chosen:
        for seed in seeds:
            folder = out / "models" / study / variant.name.replace(" ", "_") / f"seed{seed}" if save else None
            train_and_evaluate(env_id, variant, seed, checkpoints, eval_seeds, folder,
                               on_checkpoint=lambda rows: _append(path, study, rows),
                               diagnose=out / f"{study}-diagnostics.csv" if diagnose else None)  # fmt: skip
    return path


def _append(path: Path, study: str, rows: list[dict[str, Any]]) -> None:
    new = not path.is_file()
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
    print(f"{study} | {rows[0]['variant']} | seed {rows[0]['train_seed']}: {rows[0]['timesteps']} steps, "
          f"{np.mean([r['value'] for r in rows]):.4g}", flush=True)  # fmt: skip


def study_of(study: str) -> tuple[str, tuple[Variant, ...]]:
    if study not in STUDIES:
        raise ValueError(f"study={study!r} is not known; allowed: {list(STUDIES)}")
    return STUDIES[study]


# -- tables --------------------------------------------------------------------------------------------


@dataclass
class References:
    """The reference agents' headline means on the evaluation seeds, and the normalization's 0 and 1."""

    headline: str
    means: dict[str, float]
    naive: float
    top: float
    roles: dict[str, str]  # "paper", "naive", "best heuristic", "oracle" -> agent

    @classmethod
    def load(cls, path: Path) -> References:
        from agents.registry import agent_class

        data = json.loads(path.read_text())
        setting = require_setting(data["env_id"])
        headline = data["headline"]
        means = {r["agent"]: r["mean"] for r in data["summary"] if r["metric"] == headline}
        naive = means[setting.naive_agent]
        top = setting.oracle_value
        if top is None:
            top = means[setting.oracle_agent or setting.paper_agent]
        skip = {setting.paper_agent, setting.naive_agent, setting.oracle_agent, *setting.ablations}  # as benchmark
        heuristics = [a for a in means if a not in skip and not agent_class(data["env_id"], a).privileged]
        roles = {"paper": setting.paper_agent, "naive": setting.naive_agent}
        if heuristics:
            roles["best heuristic"] = max(heuristics, key=lambda a: float(normalized(means[a], naive, top)))
        if setting.oracle_agent:
            roles["oracle"] = setting.oracle_agent
        return cls(headline, means, naive, top, roles)


def summarize(rows: list[dict[str, str]], refs: References) -> list[dict[str, Any]]:
    """Per variant and checkpoint: mean and interval over training seeds of the per-seed means."""
    groups: dict[tuple[str, int], dict[int, list[float]]] = {}
    for r in rows:
        checkpoint = int(r["timesteps"])  # PPO stops at the end of a rollout, past the checkpoint asked for
        groups.setdefault((r["variant"], checkpoint), {}).setdefault(int(r["train_seed"]), []).append(float(r["value"]))
    table = []
    for (variant, checkpoint), by_seed in groups.items():
        per_seed = np.array([np.mean(v) for v in by_seed.values()])
        scores = normalized(per_seed, refs.naive, refs.top)
        table.append(
            {
                "variant": variant,
                "steps": checkpoint,
                "seeds": len(per_seed),
                "value": float(per_seed.mean()),
                "value_ci": _interval(per_seed),
                "score": float(scores.mean()),
                "score_ci": _interval(scores),
                "score_iqm": float(iqm(scores)),
                "per_seed": per_seed.tolist(),
            }
        )
    order = list(dict.fromkeys(row["variant"] for row in table))  # variants as run, checkpoints ascending
    return sorted(table, key=lambda row: (order.index(row["variant"]), row["steps"]))


def _interval(per_training_seed: np.ndarray) -> tuple[float | None, float | None]:
    """The interval over training seeds (each value a mean over the evaluation seeds); none with one seed."""
    return mean_interval(per_training_seed) if per_training_seed.size >= 2 else (None, None)


def plateaus(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant, its plateau: the first checkpoint whose mean normalized score lies inside the 95% interval of
    the best checkpoint's (so no later checkpoint is better beyond the training seeds' spread), and that best
    row. A variant with one checkpoint has it as its plateau; read it as converged only with later checkpoints."""
    out = {}
    for variant in dict.fromkeys(r["variant"] for r in table):
        rows = [r for r in table if r["variant"] == variant]
        best = max(rows, key=lambda r: r["score"])
        low = best["score"] if best["score_ci"][0] is None else best["score_ci"][0]
        first = next(r for r in rows if r["score"] >= low)
        out[variant] = {"steps": first["steps"], "score": first["score"], "best_steps": best["steps"],
                        "best_score": best["score"], "best_ci": best["score_ci"]}  # fmt: skip
    return out


def markdown(study: str, table: list[dict[str, Any]], refs: References) -> str:
    env_id, _ = study_of(study)
    lines = [
        f"| {env_id} | steps | training seeds | `{refs.headline}` | normalized score | IQM |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in table:
        lines.append(
            f"| {row['variant']} | {row['steps']:,} | {row['seeds']} | {row['value']:.4g} {_ci(row['value_ci'])} "
            f"| {row['score']:.3f} {_ci(row['score_ci'], 3)} | {row['score_iqm']:.3f} |"
        )
    for role, agent in refs.roles.items():
        value = refs.means[agent]
        score = float(normalized(value, refs.naive, refs.top)) + 0.0
        lines.append(f"| {role}: `{agent}` | — | — | {value:.4g} | {score:.3f} | — |")
    curves = {v: p for v, p in plateaus(table).items() if sum(r["variant"] == v for r in table) > 1}
    if curves:
        lines.append("")
        for variant, p in curves.items():
            lines.append(
                f"- {variant}: plateau at {p['steps']:,} steps (score {p['score']:.3f}; best {p['best_score']:.3f} "
                f"{_ci(p['best_ci'], 3)} at {p['best_steps']:,})"
            )
    return "\n".join(lines)


def _ci(ci: tuple[float, float], digits: int = 4) -> str:
    low, high = ci
    return "" if low is None else f"[{low:.{digits}g}, {high:.{digits}g}]"


def plot(study: str, table: list[dict[str, Any]], refs: References, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env_id, _ = study_of(study)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, variant in enumerate(dict.fromkeys(r["variant"] for r in table)):
        rows = sorted((r for r in table if r["variant"] == variant), key=lambda r: r["steps"])
        steps = [r["steps"] for r in rows]
        ax.plot(steps, [r["score"] for r in rows], marker="o", color=f"C{k}", label=variant)
        low, high = (np.array(side, dtype=np.float64) for side in zip(*(r["score_ci"] for r in rows), strict=True))
        ax.fill_between(steps, low, high, color=f"C{k}", alpha=0.2)
    for role, agent in refs.roles.items():
        ax.axhline(float(normalized(refs.means[agent], refs.naive, refs.top)), ls=":", lw=1, color="grey")
        ax.annotate(f"{role} ({agent})", (0, float(normalized(refs.means[agent], refs.naive, refs.top))),
                    xycoords=("axes fraction", "data"), fontsize=7, color="grey")  # fmt: skip
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"normalized {refs.headline} (naive 0, oracle 1)")
    ax.set_title(f"{env_id}: {study}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def refs(env_id: str, seeds: Sequence[int], out: Path, workers: int = 1) -> Path:
    """Every reference agent of ``env_id`` on the evaluation seeds (``compare``), saved in ``<out>/refs/<id>``."""
    from baselines.eval.compare import compare
    from baselines.eval.report import write_report

    comparison = compare(env_id, "all", seeds=seeds, workers=workers, progress=False)
    return write_report(comparison, out / "refs" / env_id)


# -- command line --------------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs ablate``."""
    parser.add_argument("--out", type=Path, default=Path("results/ablation"), help="results folder")
    sub = parser.add_subparsers(dest="action", required=True)
    r = sub.add_parser("refs", help="the reference agents on the evaluation seeds")
    r.add_argument("env_id")
    r.add_argument("--seeds", default="0-4", help="evaluation seeds (default 0-4, the quick benchmark's)")
    r.add_argument("--workers", type=int, default=1)
    t = sub.add_parser("run", help="train and evaluate a study's variants")
    t.add_argument("study", choices=list(STUDIES))
    t.add_argument("--seeds", default="0-2", help="training seeds (default 0-2)")
    t.add_argument("--checkpoints", default="100000", help="comma-separated env steps at which to evaluate")
    t.add_argument("--eval-seeds", default="0-4", help="evaluation seeds (default 0-4, the quick benchmark's)")
    t.add_argument("--variants", default=None, help="variant names separated by ; (default all)")
    t.add_argument("--save", action="store_true", help="save each final model under <out>/models/")
    t.add_argument("--diagnose", action="store_true", help="one row per update to <out>/<study>-diagnostics.csv")
    d = sub.add_parser("diagnostics", help="Markdown table of a study's --diagnose rows, per probed checkpoint")
    d.add_argument("study", choices=list(STUDIES))
    m = sub.add_parser("table", help="Markdown table (and figure) of a study's rows")
    m.add_argument("study", choices=list(STUDIES))
    m.add_argument("--figure", type=Path, default=None, help="write the curves here (PNG)")


def run_from_args(args: argparse.Namespace) -> None:
    """``cluster-envs ablate``: the references, a study's runs, or its tables."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.action == "refs":
        print(refs(args.env_id, parse_seeds(args.seeds), args.out, args.workers))
    elif args.action == "run":
        variants = args.variants.split(";") if args.variants else None
        checkpoints = [int(float(c)) for c in args.checkpoints.split(",")]
        run(
            args.study,
            parse_seeds(args.seeds),
            checkpoints,
            parse_seeds(args.eval_seeds),
            args.out,
            variants,
            args.save,
            args.diagnose,
        )
    elif args.action == "diagnostics":
        updates, probes = (_rows(args.out / f"{args.study}-diagnostics{suffix}.csv") for suffix in ("", "-checkpoints"))
        print(diagnostics_markdown(updates, probes))
    else:
        env_id, _ = study_of(args.study)
        references = References.load(args.out / "refs" / env_id / "results.json")
        with (args.out / f"{args.study}.csv").open() as handle:
            table = summarize(list(csv.DictReader(handle)), references)
        print(markdown(args.study, table, references))
        if args.figure is not None:
            print(f"\n![{args.study}]({plot(args.study, table, references, args.figure)})")
