"""``cluster-envs compare``: every agent on the same evaluation seeds, with honest statistics.

Reference agents and RL agents (the shipped runs, or trained on the spot into the cache ``results/models``) run
through the same ``rollout`` on the same seeds (common random numbers). Per agent and metric the report gives the
mean, the interquartile mean and a 95% bootstrap interval; against the paper's algorithm the paired
per-seed difference with its interval and the probability of improvement (the fraction of seeds on
which the agent does better, ties counting half); and the score normalized between the naive
baseline (0) and the clairvoyant anchor (1) on the headline metric.

Instances. Where the reset seed draws the instance (SLA, Approx, Bilinear), evaluation seeds lie below
``TRAIN_SEED_BASE`` and RL trains on envs seeded above it: RL never sees an evaluation instance. Where an env
kwarg fixes the instance (``EnvSetting.instance_kwarg``: MultiServer, Gang), ``held_out=True`` evaluates seed
``s`` on instance ``HELD_OUT_INSTANCE_BASE + s`` (the held-out track, the benchmark's headline), and by default
every agent runs on the preset's instance, the one RL trains on (the fixed-instance track). RL is refused in
the held-out track of such an env: its spaces are the instance's edge set, so a policy trained on one instance
cannot act on another.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents import agent_names
from agents.registry import agent_class
from baselines.eval.backends import run_tasks
from baselines.eval.harness import Episode, build_agent, env_kwargs_for, evaluate
from baselines.eval.protocol import (
    EnvSetting,
    check_eval_seeds,
    env_setting,
    format_kwargs,
    instance_kwargs,
    require_setting,
)
from baselines.eval.stats import (
    CONFIDENCE,
    degenerate,
    improvement_indicator,
    interval_over,
    iqm,
    mean_interval,
    normalized_score,
    run_scores,
)
from baselines.rl.agent import SavedPolicy
from baselines.rl.config import RunConfig
from baselines.rl.store import obtain_policies, training_seeds


@dataclass
class Comparison:
    env_id: str
    seeds: list[int]
    agents: list[str]
    episodes: list[Episode]
    setting: EnvSetting | None
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # every agent's
    agent_env_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> the kwargs it ran with
    excluded: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> the dynamics kwargs it needs
    privileged: set[str] = field(default_factory=set)
    rl_runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # RL agent -> {"requested", "runs"} (see compare)
    held_out: bool = True  # False: every agent on the env kwargs' instance, where an env kwarg fixes it
    instances: dict[int, Any] = field(default_factory=dict)  # evaluation seed -> the instance it ran on

    def training_seeds(self, agent: str) -> list[int | None]:
        """The training seeds of an RL agent's runs; ``[None]`` for an agent that does not train."""
        if agent not in self.rl_runs:
            return [None]
        return [run["training_seed"] for run in self.rl_runs[agent]["runs"]]

    def matrix(self, agent: str, metric: str) -> np.ndarray:
        """The metric of ``agent`` per training seed (rows, in the order of ``training_seeds``; one row for an agent
        that does not train) and evaluation seed (columns, in the order of ``seeds``)."""
        by_seed = {(e.training_seed, e.seed): e.metrics.get(metric, np.nan) for e in self.episodes if e.agent == agent}
        rows = self.training_seeds(agent)
        return np.array([[by_seed[(t, s)] for s in self.seeds] for t in rows], dtype=np.float64)

    def values(self, agent: str, metric: str) -> np.ndarray:
        """The metric of ``agent`` per evaluation seed, in the order of ``seeds`` (an RL agent's: the mean over its
        training seeds)."""
        return self.matrix(agent, metric).mean(axis=0)

    def samples(self, agent: str, per_seed: np.ndarray) -> np.ndarray:
        """The values ``agent``'s IQM runs over, from a (training seeds, evaluation seeds) array such as ``matrix``'s:
        a reference agent's evaluation seeds; an RL agent's runs, one per training seed, each its mean over the
        evaluation seeds (rliable's convention). Its intervals resample both levels (``stats.mean_interval``)."""
        return per_seed.mean(axis=1) if agent in self.rl_runs else per_seed[0]

    def traces(self, agent: str, key: str) -> list[np.ndarray]:
        return [e.trace[key] for e in self.episodes if e.agent == agent and key in e.trace]

    @property
    def metrics(self) -> dict[str, int]:
        """Metric -> direction (+1 higher is better, -1 lower, 0 unknown), in report order."""
        if self.setting is not None:
            return dict(self.setting.metrics)
        names = dict.fromkeys(k for e in self.episodes for k in e.metrics if k != "steps")
        return {name: 0 for name in names}

    @property
    def paper_agent(self) -> str | None:
        return self.setting.paper_agent if self.setting is not None else None

    def interval_text(self, agent: str | None = None) -> str:
        """What ``agent``'s intervals run over (``stats.interval_over``); without an agent, every row's."""
        n_eval = len(self.seeds)
        if agent is not None:
            return interval_over(n_eval, len(self.training_seeds(agent)))
        text = interval_over(n_eval)
        rl = {name: len(self.training_seeds(name)) for name in self.rl_runs}
        if rl and n_eval >= 2:
            text += "; RL rows " + ", ".join(
                f"`{name}`: {interval_over(n_eval, n).removeprefix(f'{CONFIDENCE:.0%} ')}" for name, n in rl.items()
            )
        return text

    def summary(self) -> list[dict[str, Any]]:
        """One row per agent and metric: evaluation seeds and runs, mean, IQM, interval; paired difference to the
        paper's algorithm with its interval and the probability of improvement (per evaluation seed, within each
        training seed of an RL agent; intervals two-level for RL rows, ``stats.mean_interval``)."""
        rows = []
        for metric, direction in self.metrics.items():
            reference = self.values(self.paper_agent, metric) if self.paper_agent else None
            for agent in self.agents:
                per_seed = self.matrix(agent, metric)
                row: dict[str, Any] = {"agent": agent, "metric": metric, "direction": direction}
                row.update(_describe(per_seed, self.samples(agent, per_seed)))
                if reference is not None and agent != self.paper_agent:
                    diff = per_seed - reference  # paired on the evaluation seeds
                    row["diff"] = float(diff.mean())
                    row["diff_low"], row["diff_high"] = _interval(diff)
                    if direction:
                        better = improvement_indicator(diff, direction)
                        row["p_improve"] = float(better.mean())
                        row["p_low"], row["p_high"] = _interval(better)
                rows.append(row)
        return rows

    @property
    def track(self) -> str:
        fixed = not self.held_out and self.setting is not None and self.setting.instance_kwarg is not None
        return "fixed instance" if fixed else "held-out instances"

    def anchors(self) -> tuple[np.ndarray, np.ndarray]:
        """The headline metric of the naive anchor and of the clairvoyant anchor (its agent, or the closed-form
        value) per evaluation seed."""
        setting = self.setting
        naive = self.values(setting.naive_agent, setting.headline)
        if setting.oracle_value is not None:
            return naive, np.full(naive.shape, float(setting.oracle_value))
        return naive, self.values(setting.oracle_agent, setting.headline)

    def degenerate_seeds(self) -> list[int]:
        """The evaluation seeds dropped from every normalized score (the protocol's rule, docs/benchmark.md): those
        on which the naive and clairvoyant anchors coincide (``stats.degenerate``), an instance on which no agent
        can be told apart from either anchor. [] without a settings entry."""
        if self.setting is None:
            return []
        return [s for s, same in zip(self.seeds, degenerate(*self.anchors()), strict=True) if same]

    def scored_seeds(self) -> list[int]:
        """The evaluation seeds normalized scores run over: every seed but the degenerate ones."""
        dropped = set(self.degenerate_seeds())
        return [s for s in self.seeds if s not in dropped]

    def normalized(self, agent: str) -> dict[str, Any] | None:
        """``agent``'s normalized headline score over ``scored_seeds`` (``stats.normalized_score``: ratio of means,
        paired interval, IQM of its runs), with ``interval`` (what it runs over) or ``no_interval`` (why there is
        none). None without a settings entry."""
        if self.setting is None:
            return None
        keep = np.isin(self.seeds, self.scored_seeds())
        n_eval = int(keep.sum())
        if n_eval == 0:
            why = f"every evaluation seed is degenerate (anchors coincide on {self.degenerate_seeds()})"
            return {"agent": agent, "mean": None, "iqm": None, "runs": 0, "ci_low": None, "ci_high": None,
                    "n": 0, "no_interval": why}  # fmt: skip
        naive, top = (a[keep] for a in self.anchors())
        row = normalized_score(self.matrix(agent, self.setting.headline)[:, keep], naive, top, agent in self.rl_runs)
        row = {"agent": agent, "n": n_eval, **row}
        if row["ci_low"] is not None:
            row["interval"] = interval_over(n_eval, len(self.training_seeds(agent)))
        return row

    def normalized_scores(self, agent: str) -> np.ndarray | None:
        """``agent``'s runs of normalized headline scores, paired per seed (``stats.run_scores``, over
        ``scored_seeds``): one per evaluation seed, or per training seed of an RL agent. None without a settings
        entry."""
        if self.setting is None:
            return None
        keep = np.isin(self.seeds, self.scored_seeds())
        naive, top = (a[keep] for a in self.anchors())
        return run_scores(self.matrix(agent, self.setting.headline)[:, keep], naive, top, agent in self.rl_runs)

    def normalized_summary(self) -> list[dict[str, Any]]:
        if self.setting is None:
            return []
        return [self.normalized(agent) for agent in self.agents]

    def heuristics(self) -> list[str]:
        """The online reference agents other than the paper's algorithm (and its ablations), the naive
        baseline and the RL agents."""
        setting = self.setting
        naive, ablations = (setting.naive_agent, set(setting.ablations)) if setting is not None else (None, set())
        skip = {self.paper_agent, naive, *ablations, *self.privileged, *self.rl_runs}
        return [a for a in self.agents if a not in skip]

    def training_instances(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per RL agent and training seed (a string key, as in JSON), the instances its run trained on."""
        return {
            name: {str(run["training_seed"]): run["training_instances"] for run in facts["runs"]}
            for name, facts in self.rl_runs.items()
        }

    def instance_record(self) -> dict[str, Any]:
        """The track, the instance of every evaluation seed and RL's training instances (for results files)."""
        return {
            "track": self.track,
            "degenerate_seeds": self.degenerate_seeds(),
            "evaluation_instances": {str(s): i for s, i in self.instances.items()},
            "training_instances": self.training_instances(),
        }


def _interval(per_seed: np.ndarray) -> tuple[float | None, float | None]:
    """The interval of the mean of a (training seeds, evaluation seeds) matrix; (None, None) on one evaluation seed
    (the report prints "—" and its header says why)."""
    return mean_interval(per_seed) if per_seed.shape[-1] >= 2 else (None, None)


def _describe(per_seed: np.ndarray, runs: np.ndarray) -> dict[str, Any]:
    low, high = _interval(per_seed)
    n_train, n_eval = per_seed.shape
    return {"n": n_eval, "runs": n_train, "mean": float(per_seed.mean()), "iqm": float(iqm(runs)), "ci_low": low,
            "ci_high": high}  # fmt: skip


def resolve_agents(env_id: str, agents: str | Sequence[str]) -> list[str]:
    """``"all"`` or names (a comma-separated string, or a list) -> the reference agents to run, in order, with
    the paper's algorithm, the naive baseline and the oracle added when the env has a settings entry (an empty
    list runs just those; a string naming no agent is an error)."""
    known = agent_names(env_id)
    if isinstance(agents, str):
        text, agents = agents, known if agents == "all" else [a.strip() for a in agents.split(",") if a.strip()]
        if not agents:  # e.g. `--agents ""`: a typo, not a request for the reference agents only (pass [] for that)
            raise ValueError(f"agents={text!r} names no agent; give 'all' or a comma-separated list of {known}")
    for name in agents:
        if name not in known:
            raise ValueError(f"agent={name!r} is not an agent of {env_id}; allowed: {known}")
    setting = env_setting(env_id)
    required = setting.reference_agents if setting else []
    return list(dict.fromkeys([*required, *agents]))


def compare(
    env_id: str,
    agents: str | Sequence[str] = "all",
    *,
    rl: Sequence[str] = (),
    seeds: Sequence[int] = range(10),
    env_kwargs: Mapping[str, Any] | None = None,
    rl_steps: int | None = None,
    rl_seeds: int | Sequence[int] | None = None,
    train_missing: bool = True,
    models_dir: str | Path | None = None,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: bool = True,
    held_out: bool = False,
    retrain: bool = False,
    threads: int = 1,
    submitted: Sequence[Any] = (),
) -> Comparison:
    """Run every agent on every seed and return the comparison (``write_report`` writes it out).

    The settings entry's ``env_kwargs`` apply to every agent, under the caller's ``env_kwargs``. An agent may
    add kwargs of the action/observation format (``format_kwargs``); one that needs other kwargs changes the
    dynamics, so it is left out of ``"all"`` (listed in ``excluded``) and refused when named.
    ``rl`` names RL algorithms. Each is one run per training seed (``rl_seeds``: n for seeds 0 .. n-1, or the seeds;
    default the entry's ``rl_seeds``), from ``baselines.rl.store.obtain_policies``: the shipped run, unless
    ``retrain`` or a ``models_dir`` whose run serves first (the rule of its module doc), else trained into the model
    folder (with ``threads`` torch threads, as tasks of the same backend as the episodes;
    ``train_missing=False`` trains only when no seed has a run). Every run plays every evaluation seed; its
    statistics run over its training seeds (``Comparison.samples``).
    ``held_out`` runs seed ``s`` of an env whose instance an env kwarg fixes on the held-out instance
    ``HELD_OUT_INSTANCE_BASE + s``; by default every seed runs on the env kwargs' instance (see the module doc).
    ``submitted``: agents from outside the package's registry, run next to the others on the same seeds (each a
    picklable spec with ``name``, ``privileged``, ``env_kwargs`` and ``build() -> Agent``:
    ``baselines.eval.submission.AgentSpec``); they may only add format kwargs, as RL agents.
    Every episode keeps the digest of its actions (``Episode.actions``), which submission records store.
    """
    seeds = list(seeds)
    check_eval_seeds(seeds)
    setting = env_setting(env_id)
    env_kwargs = {**(setting.env_kwargs if setting else {}), **dict(env_kwargs or {})}
    instance_kwarg = setting.instance_kwarg if setting else None
    per_seed = held_out and instance_kwarg is not None
    if per_seed and rl:
        raise ValueError(
            f"rl={list(rl)}: the instance of {env_id} fixes its spaces, so an RL policy cannot be evaluated on "
            "held-out instances; pass held_out=False (the fixed-instance track)"
        )
    if per_seed and instance_kwarg in env_kwargs:
        raise ValueError(f"env_kwargs[{instance_kwarg!r}]: the held-out track draws the instance per seed")
    agent_env_kwargs: dict[str, dict[str, Any]] = {}
    excluded: dict[str, dict[str, Any]] = {}
    for name in resolve_agents(env_id, agents):  # bad env kwargs or a conflict with an agent's needs fail here
        changes = admit(env_id, build_agent(env_id, name), env_kwargs, agent_env_kwargs, named=agents != "all")
        if changes:
            excluded[name] = changes
    names = list(agent_env_kwargs)
    for spec in submitted:
        if spec.name in agent_env_kwargs:
            raise ValueError(f"submitted agent {spec.name!r} has the name of a reference agent of {env_id}; rename it")
        admit(env_id, spec, env_kwargs, agent_env_kwargs, named=True)
    rl_runs: dict[str, dict[str, Any]] = {}
    policies: list[tuple[SavedPolicy, int]] = []  # (policy, training seed)
    if rl:
        wanted = training_seeds(require_setting(env_id).rl_seeds if rl_seeds is None else rl_seeds)
        for algo in rl:  # fail on an unknown algorithm or missing hyperparameters before training anything
            RunConfig.resolve(algo, env_id, env_kwargs)
        for algo in rl:
            runs = obtain_policies(env_id, algo, env_kwargs, rl_steps, wanted, models_dir=models_dir,
                                   train_missing=train_missing, retrain=retrain, threads=threads, workers=workers,
                                   backend=backend, address=address, progress=progress)  # fmt: skip
            for policy, _ in runs:
                admit(env_id, policy, env_kwargs, agent_env_kwargs, named=True)
            policies += [(policy, facts["training_seed"]) for policy, facts in runs]
            rl_runs[algo] = {"requested": len(wanted), "runs": [facts for _, facts in runs]}
    record = tuple(setting.curves) if setting else ()
    instances = {s: instance_kwargs(env_id, env_kwargs, instance_kwarg, s if per_seed else None) for s in seeds}
    # submitted agents first: one that fails does so before the reference agents have run
    players = [(spec, None) for spec in submitted] + [(name, None) for name in names] + policies
    run = functools.partial(run_tasks, workers=workers, backend=backend, address=address, progress=progress,
                            desc=env_id)  # fmt: skip
    episodes = evaluate(env_id, [agent for agent, _ in players], seeds, env_kwargs=env_kwargs,
                        seed_env_kwargs=instances, record=record, digest=True, run_tasks=run).episodes  # fmt: skip
    trained_by = [trained for _, trained in players for _ in seeds]
    return Comparison(
        env_id=env_id,
        seeds=seeds,
        agents=[*names, *(spec.name for spec in submitted), *rl_runs],
        episodes=[dataclasses.replace(e, training_seed=t) for e, t in zip(episodes, trained_by, strict=True)],
        setting=setting,
        env_kwargs=env_kwargs,
        agent_env_kwargs=agent_env_kwargs,
        excluded=excluded,
        privileged={n for n in names if agent_class(env_id, n).privileged}
        | {s.name for s in submitted if s.privileged},
        rl_runs=rl_runs,
        held_out=held_out,
        instances={s: instances[s].get(instance_kwarg, "reset seed") for s in seeds},
    )


def admit(
    env_id: str, agent: Any, env_kwargs: Mapping[str, Any], admitted: dict[str, dict[str, Any]], named: bool
) -> dict[str, Any]:
    """Record in ``admitted`` the env kwargs ``agent`` runs with (checked by building the env), unless it needs
    kwargs beyond the action/observation format that differ from ``env_kwargs``: those are returned (an
    error when the agent was ``named``), since head to head it would be scored on another problem."""
    changes = {
        key: value
        for key, value in dict(agent.env_kwargs).items()
        if key not in format_kwargs(env_id) and (key not in env_kwargs or env_kwargs[key] != value)
    }
    if changes and named:
        raise ValueError(
            f"agent {agent.name!r} needs env kwargs {changes}, which change the dynamics of {env_id} (not only the "
            f"action or observation format), so it cannot be compared with the others; evaluate it on its own "
            f"with `cluster-envs run {env_id} --agent {agent.name}`"
        )
    if not changes:
        admitted[agent.name] = env_kwargs_for(agent, env_kwargs)
        gym.make(env_id, **admitted[agent.name]).close()
    return changes
