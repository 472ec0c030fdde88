"""Tune an id's RL hyperparameters with rl-zoo3's own optimizer and write the best trial into the YAML file.

    cluster-envs tune run ClusterSLA-v1 --algo ppo --trials 20 --steps 50000
    cluster-envs tune write ClusterSLA-v1 --algo ppo --trials 20 --steps 50000
    cluster-envs tune run ClusterGang-v0 --algo ppo_mask --hold gamma,gae_lambda --trials 8 --steps 10000

``run`` starts rl-zoo3's ``train ... -optimize`` through ``cluster-envs zoo`` (rl-zoo3's entry with
MaskablePPO added as ``ppo_mask`` and ``--hold``: keys the optimizer keeps at the section's values, e.g. a
contextual bandit's γ = 0; :func:`zoo_command` prints the exact command) on the id's
section of ``baselines/rl/hyperparams/<algo>.yml``: its env kwargs (the settings' RL kwargs), its observation wrapper
and its normalization, with one torch thread, one job, TPE sampling and median pruning. The budget is
``trials`` × ``steps`` env steps (plus ``evaluations`` evaluations per trial).
``--native`` runs the same optimizer on the ids' native batched envs (``baselines.tuning.zoo_native``, used by
``cluster-envs zoo --native``), and ``--trial-cpu-seconds`` caps each trial's CPU time (a trial past it is
pruned), so the budget in CPU time is at most ``trials`` × that cap. rl-zoo3's sampler replaces the section's
``policy_kwargs`` (its network sizes and activations; keys it does not sample, e.g. ``log_std_init``, are
dropped) and draws γ from [0.97, 0.9999].

The objective (``--objective headline``, the default) is the benchmark's headline metric of the trial's
deterministic policy on the fixed validation seeds (``--validation-seeds``, default 100-104: disjoint from the
evaluation seeds 0-9 and the training seeds), the same episodes at every evaluation of every trial, signed so
that larger is better (``baselines.tuning.objective``); the pruner compares trials on it at each evaluation and the
study's value is the one at the trial's last evaluation. ``--objective return`` keeps rl-zoo3's own: the mean
return of ``eval_episodes`` deterministic episodes of an evaluation env seeded once per trial, other episodes
at each evaluation, which on ids whose instance is drawn per episode ranks episodes rather than policies
(docs/appendix/rl_curves/tuning.md). rl-zoo3 seeds the trials' training envs from ``--seed``, which is set to a training
seed (``baselines.eval.protocol.training_seed(0)``, ≥ 10⁹; ``--worker k``: ``training_seed(k)``, a second process adding
trials to the same study with its own sampler and training seeds), so tuning never plays the benchmark's
evaluation seeds. ``--trial-seeds n`` (default 1) trains each trial's hyperparameters with ``n`` training seeds,
one model after the other (the first with that ``--seed``, as a one-model trial), and scores the trial by the
mean of the ``n`` values; the pruner sees the mean over the models so far at each evaluation
(``baselines.tuning.objective.over_training_seeds``), and ``--trial-cpu-seconds`` caps each model. It is for ids
where one run's score depends much on its training seed. The study lives in an Optuna journal file
(``<out>/<env_id>-<algo>-headline.log``; ``<out>/<env_id>-<algo>.log`` for the return objective; ``-seeds<n>``
before ``.log`` for ``n`` training seeds per trial), so a second ``run`` with the same arguments adds trials to it.

``write`` reads the study's best trial, converts it as rl-zoo3 does (``convert_onpolicy_params``: γ, λ, powers of
two, network size and activation), drops the held keys and replaces the others in the id's YAML section, under a
comment giving the tuning command and its budget (the best value is printed; ``trials`` lists every trial's),
and leaves the other sections and keys as they are. With
``--to PATH`` it writes a copy of the YAML file there instead (a candidate to compare over training seeds before
it replaces the shipped section: ``baselines.tuning.ablation``'s ``Variant(hyperparams_file=...)``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.eval.protocol import VALIDATION_SEEDS, check_eval_seeds, parse_seeds, require_setting, training_seed
from baselines.rl.config import HYPERPARAMS_DIR, load_hyperparams

ON_POLICY = {"ppo", "a2c", "ppo_lstm", "ppo_mask"}  # rl-zoo3 converts their samples with convert_onpolicy_params
TUNED_MARK = "# tuned:"


OBJECTIVES = ("headline", "return")


def study_name(env_id: str, algo: str, objective: str = "headline", trial_seeds: int = 1) -> str:
    """The study's name: ``<id>-<algo>`` for rl-zoo3's return objective (the studies of earlier sessions),
    ``<id>-<algo>-headline`` for the headline one, with ``-seeds<n>`` for ``n`` > 1 training seeds per trial, so
    studies of different objectives never share trials."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r} is not allowed; allowed: {list(OBJECTIVES)}")
    if not isinstance(trial_seeds, int) or trial_seeds < 1:
        raise ValueError(f"trial_seeds must be a positive integer, got {trial_seeds!r}")
    suffix = ("-headline" if objective == "headline" else "") + (f"-seeds{trial_seeds}" if trial_seeds > 1 else "")
    return f"{env_id}-{algo}{suffix}"


def storage_path(out: Path, env_id: str, algo: str, objective: str = "headline", trial_seeds: int = 1) -> Path:
    return out / f"{study_name(env_id, algo, objective, trial_seeds)}.log"


def zoo_command(env_id: str, algo: str, trials: int, steps: int, out: Path, *, evaluations: int = 4,
                eval_episodes: int = 5, startup_trials: int = 5, env_kwargs: Mapping[str, Any] | None = None,
                hold: Sequence[str] = (), native: bool = False, trial_cpu_seconds: float | None = None,
                objective: str = "headline", seeds: Sequence[int] = VALIDATION_SEEDS,
                worker: int = 0, trial_seeds: int = 1) -> list[str]:  # fmt: skip
    """rl-zoo3's optimization command for ``env_id`` (``env_kwargs``: replace the YAML section's env kwargs, as
    rl-zoo3's ``--env-kwargs`` does; ``hold``: hyperparameters kept at the section's values). ``native``: train
    and evaluate on the id's native batched env (``baselines.tuning.zoo_native``; the evaluation episodes as one batch
    of ``eval_episodes`` copies); ``trial_cpu_seconds``: prune a trial once it has used that much CPU time
    (``TrialCPUBudget``). ``objective``: ``"headline"`` scores each evaluation by the headline metric on the
    validation ``seeds`` (``baselines.tuning.objective``; ``eval_episodes`` then plays no part), ``"return"`` is
    rl-zoo3's own (the mean return of ``eval_episodes`` episodes). ``worker``: the process's index among those
    running the same study at once (each seeds its sampler and trials with ``training_seed(worker)``: equal
    seeds would sample the same random start-up trials). ``trial_seeds``: models per trial, each with its own
    training seed, the trial's value their mean (``baselines.tuning.objective.over_training_seeds``)."""
    for name, value in (("trials", trials), ("steps", steps), ("evaluations", evaluations),
                        ("eval_episodes", eval_episodes), ("startup_trials", startup_trials)):  # fmt: skip
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if trial_cpu_seconds is not None and not trial_cpu_seconds > 0:
        raise ValueError(f"trial_cpu_seconds must be positive or None, got {trial_cpu_seconds!r}")
    name = study_name(env_id, algo, objective, trial_seeds)
    if objective == "headline":
        check_eval_seeds(list(seeds))
    zoo = ["--hold", ",".join(hold)] if hold else []
    zoo += ["--objective-seeds", ",".join(str(seed) for seed in seeds)] if objective == "headline" else []
    zoo += ["--trial-seeds", str(trial_seeds)] if trial_seeds > 1 else []
    zoo += ["--native"] if native else []
    command = ["cluster-envs", "zoo", *zoo, "--algo", algo, "--env", env_id,
               "--gym-packages", "cluster_envs",
               "-conf", str(_relative(HYPERPARAMS_DIR / f"{algo}.yml"))]  # fmt: skip
    command += [
        "-optimize", "--n-trials", str(trials), "--n-timesteps", str(steps), "--n-evaluations", str(evaluations),
        "--eval-episodes", str(eval_episodes), "--n-startup-trials", str(startup_trials), "--n-jobs", "1",
        "--num-threads", "1", "--sampler", "tpe", "--pruner", "median", "--seed", str(training_seed(worker)),
        "--storage", str(out / f"{name}.log"), "--study-name", name,
        "--no-optim-plots", "-f", str(out),
    ]  # fmt: skip
    if native:
        command += ["--n-eval-envs", str(eval_episodes)]
    if trial_cpu_seconds is not None:
        budget = {"baselines.tuning.zoo_native.TrialCPUBudget": {"seconds": float(trial_cpu_seconds)}}
        command += ["--hyperparams", f"callback:{budget!r}"]
    if env_kwargs:
        command += ["--env-kwargs", *_zoo_dict(env_kwargs)]
    # rl-zoo3 2.9.2 builds the evaluation env with the command line's env kwargs only (ExperimentManager's
    # eval_env_kwargs is fixed before it reads the YAML's): without them it would score trials on the id's
    # defaults (ClusterMultiServer-v0: another preset, so another instance and observation size). Pass them.
    eval_kwargs = env_kwargs if env_kwargs else load_hyperparams(algo, env_id).get("env_kwargs") or {}
    if eval_kwargs:
        command += ["--eval-env-kwargs", *_zoo_dict(eval_kwargs)]
    return command


def _zoo_dict(kwargs: Mapping[str, Any]) -> list[str]:
    """``kwargs`` as rl-zoo3's ``StoreDict`` arguments (``key:value``, the value a Python literal)."""
    return [f"{key}:{value!r}" for key, value in kwargs.items()]


def _relative(path: Path) -> Path:
    """``path`` relative to the working directory where it lies below it (a shorter command to print)."""
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def objective_text(env_id: str, objective: str, value: float, seeds: Sequence[int], trial_seeds: int = 1) -> str:
    """A trial's objective value in words: the headline on the validation seeds, or rl-zoo3's return (the mean
    over ``trial_seeds`` training seeds where that is more than one)."""
    over = f", mean of {trial_seeds} training seeds" if trial_seeds > 1 else ""
    if objective == "return":
        return f"return {value:.4g}{over}"

    setting = require_setting(env_id)
    headline = setting.metrics[setting.headline] * value  # the objective is the headline times its direction
    return f"{setting.headline} {headline:.4g} on validation seeds {min(seeds)}-{max(seeds)}{over}"


def run(command: Sequence[str]) -> None:
    """Run rl-zoo3 with one thread for every library (rl-zoo3's ``--num-threads`` sets torch's only)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "baselines.cli", *command[1:]], check=True, env=env)


def best_trial(storage: Path, algo: str, hold: Sequence[str] = ()) -> tuple[dict[str, Any], float, int]:
    """The best trial's hyperparameters as rl-zoo3 passes them to the algorithm (without the ``hold`` keys, which
    the trials did not change), its value and the number of finished trials."""
    import optuna

    if algo not in ON_POLICY:
        raise ValueError(f"algo={algo!r}: writing tuned values is implemented for {sorted(ON_POLICY)}")
    from rl_zoo3.hyperparams_opt import convert_onpolicy_params

    study = _load_study(storage)
    finished = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not finished:
        raise ValueError(f"the study in {storage} has no finished trial")
    best = study.best_trial
    params = {key: value for key, value in convert_onpolicy_params(best.params).items() if key not in hold}
    return params, float(best.value), len(finished)


def trials_table(storage: Path, hold: Sequence[str] = ()) -> str:
    """The study's trials as a Markdown table: state, objective, the value at each evaluation (the pruner's
    points) and the sampled hyperparameters as rl-zoo3 converts them, without the ``hold`` keys (drawn by TPE
    but not used: the trials trained with the section's values). A study of several training seeds per trial
    adds each model's value (``model_values``: those finished) after the objective."""
    from rl_zoo3.hyperparams_opt import convert_onpolicy_params

    trials = _load_study(storage).trials
    per_model = any("model_values" in trial.user_attrs for trial in trials)
    head = ["trial", "state", "objective", *(["per training seed"] if per_model else []), "at each evaluation",
            "sampled (rl-zoo3's conversion)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---:|---|---:|" + ("---|" if per_model else "") + "---|---|"]
    for trial in trials:
        converted = convert_onpolicy_params(trial.params) if trial.params else {}
        params = yaml_values({key: value for key, value in converted.items() if key not in hold})
        shown = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())
        steps = ", ".join(f"{v:.4g}" for _, v in sorted(trial.intermediate_values.items()))
        value = "—" if trial.value is None else f"{trial.value:.4g}"
        models = [", ".join(f"{v:.4g}" for v in trial.user_attrs.get("model_values", []))] if per_model else []
        cells = [str(trial.number), trial.state.name.lower(), value, *models, steps, shown]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _load_study(storage: Path):
    """The study of the journal file ``storage`` (one per file: ``storage_path``)."""
    import optuna

    if not storage.is_file():
        raise FileNotFoundError(f"no study at {storage}: run `cluster-envs tune run` first")
    backend = optuna.storages.journal.JournalFileBackend(str(storage))
    return optuna.load_study(study_name=None, storage=optuna.storages.JournalStorage(backend))


def yaml_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """rl-zoo3's converted hyperparameters as the YAML files write them: ``policy_kwargs`` as rl-zoo3's
    ``"dict(...)"`` string (torch modules as ``nn.<Name>``)."""
    values = {key: value for key, value in params.items() if key != "policy_kwargs"}
    if "policy_kwargs" in params:
        values["policy_kwargs"] = _python_literal(params["policy_kwargs"])
    return values


def _python_literal(value: Any) -> str:
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{key}={_python_literal(v)}" for key, v in value.items()) + ")"
    if isinstance(value, type):
        return f"nn.{value.__name__}"
    return repr(value)


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"unexpected tuned value {value!r}")
    if isinstance(value, float):
        return f"!!float {value:.6g}"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return str(value)


def write_section(path: Path, env_id: str, values: Mapping[str, Any], comment: str) -> None:
    """Replace ``values``' keys in ``env_id``'s section of the YAML file at ``path`` (adding missing ones at its
    end), with ``comment`` as the section's first line (an older tuning comment is replaced). Checked by reading
    the file back."""
    import yaml

    lines = path.read_text().splitlines()
    header = re.compile(rf"{re.escape(env_id)}:(\s+&\S+)?\s*")  # the section may carry a YAML anchor
    start = next((i for i, line in enumerate(lines) if header.fullmatch(line)), None)
    if start is None:
        raise ValueError(f"{path} has no section {env_id!r}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    body = [line for line in lines[start + 1 : end] if not line.strip().startswith(TUNED_MARK)]
    while body and not body[-1].strip():
        body.pop()
    for key, value in values.items():
        line = f"  {key}: {_yaml_scalar(value)}"
        at = next((i for i, old in enumerate(body) if re.match(rf"  {re.escape(key)}:", old)), None)
        if at is None:
            body.append(line)
        else:
            body[at] = line
    body.insert(0, f"  {TUNED_MARK} {comment}")
    tail = lines[end:]
    new = lines[:start + 1] + body + ([""] if tail else []) + tail  # fmt: skip
    text = "\n".join(new) + "\n"
    section = yaml.safe_load(text)[env_id]
    for key, value in values.items():
        if section.get(key) != value and not (
            isinstance(value, float) and abs(section[key] - value) <= 1e-5 * abs(value)
        ):
            raise ValueError(f"writing {key}={value!r} into {path} read back {section.get(key)!r}")
    path.write_text(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``cluster-envs tune``."""
    parser.add_argument(
        "action", choices=["run", "write", "print", "trials"],
        help="tune; write the best trial; print the command; print the study's trials (Markdown)",
    )  # fmt: skip
    parser.add_argument("env_id")
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50_000, help="env steps per trial")
    parser.add_argument("--evaluations", type=int, default=4, help="evaluations per trial (the pruner's points)")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--startup-trials", type=int, default=5, help="random trials before TPE")
    parser.add_argument("--hold", default="", help="comma-separated hyperparameters kept at the section's values")
    parser.add_argument("--out", type=Path, default=Path("results/tune"))
    parser.add_argument("--to", type=Path, default=None, help="write: a copy of the YAML file with the best trial")
    parser.add_argument("--native", action="store_true", help="train on the native batched env (faster)")
    parser.add_argument("--trial-cpu-seconds", type=float, default=None, help="prune a trial past this CPU time")
    parser.add_argument("--objective", choices=OBJECTIVES, default="headline",
                        help="the headline on fixed validation seeds (default) or rl-zoo3's return")  # fmt: skip
    parser.add_argument("--validation-seeds", default="100-104", help="the headline objective's seeds")
    parser.add_argument("--worker", type=int, default=0, help="another process on the same study (1, 2, ...)")
    parser.add_argument("--trial-seeds", type=int, default=1, help="training seeds per trial (value: their mean)")


def run_from_args(args: argparse.Namespace) -> None:
    """``cluster-envs tune``: run, print or tabulate the study, or write its best trial into the YAML."""
    hold = [key for key in args.hold.split(",") if key]
    seeds = parse_seeds(args.validation_seeds)
    command = zoo_command(args.env_id, args.algo, args.trials, args.steps, args.out, evaluations=args.evaluations,
                          eval_episodes=args.eval_episodes, startup_trials=args.startup_trials, hold=hold,
                          native=args.native, trial_cpu_seconds=args.trial_cpu_seconds, objective=args.objective,
                          seeds=seeds, worker=args.worker, trial_seeds=args.trial_seeds)  # fmt: skip
    text = shlex.join(command)
    storage = storage_path(args.out, args.env_id, args.algo, args.objective, args.trial_seeds)
    if args.action == "print":
        print(text)
    elif args.action == "trials":
        print(trials_table(storage, hold))
    elif args.action == "run":
        print(text, flush=True)
        run(command)
    else:
        params, value, finished = best_trial(storage, args.algo, hold)
        # The YAML names how the values were found; their score is the study's (`trials`), printed, not written.
        comment = f"{text} (budget {args.trials} trials x {args.steps} steps; best of {finished})"
        path = HYPERPARAMS_DIR / f"{args.algo}.yml"
        if args.to is not None:
            args.to.parent.mkdir(parents=True, exist_ok=True)
            args.to.write_text(path.read_text())
            path = args.to
        write_section(path, args.env_id, yaml_values(params), comment)
        print(
            f"wrote {sorted(params)} into {path} [{args.env_id}]: the best of {finished} trials, "
            f"{objective_text(args.env_id, args.objective, value, seeds, args.trial_seeds)}"
        )
