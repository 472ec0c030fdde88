"""Run tasks in this process, in local worker processes, or as Ray tasks, with identical results.

A task is everything one episode needs (env id, agent, seed, kwargs), picklable, so any worker can run
it; an RL agent travels as a ``SavedPolicy`` (the model's bytes). Any other picklable object with a ``run()``
method is a task too: ``baselines.rl.train.TrainTask`` trains an RL baseline and returns the run's files, so the
benchmark's training goes through the same backends as its episodes. The result of a task depends on the
task alone, so every backend returns the same results in the order of the tasks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baselines.eval.harness import Episode, rollout
from baselines.eval.progress import progress_bar

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Task:
    env_id: str
    agent: Any  # a reference agent's name, or anything with build() -> Agent (e.g. baselines.rl.agent.SavedPolicy)
    seed: int
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    record: tuple[str, ...] | None = ()
    digest: bool = False  # keep the digest of the actions played (Episode.actions)

    def run(self) -> Episode:
        agent = self.agent if isinstance(self.agent, str) else self.agent.build()
        return rollout(
            self.env_id,
            agent,
            self.seed,
            env_kwargs=self.env_kwargs,
            agent_kwargs=self.agent_kwargs or None,
            record=self.record,
            digest=self.digest,
        )


def run_task(task: Any) -> Any:
    """The result of one task (an episode for a ``Task``)."""
    return task.run()


def _init_worker() -> None:
    """Workers share a machine: one BLAS/OpenMP/torch thread each (torch reads the variable when imported)."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def run_tasks(
    tasks: Sequence[Any],
    *,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
    desc: str = "episodes",
    unit: str = "episode",
) -> list[Any]:
    """Every task's result (a ``Task``'s episode), in task order. ``workers`` > 1 runs local processes
    (``backend="local"``); ``backend="ray"`` runs Ray tasks on the cluster at ``address`` (or a local Ray with
    ``workers`` CPUs)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; allowed: {list(BACKENDS)}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if backend == "ray":
        results = _run_ray(tasks, workers, address)
    elif workers == 1 or len(tasks) <= 1:
        results = map(run_task, tasks)
    else:
        results = _run_processes(tasks, workers)
    return list(progress_bar(results, total=len(tasks), desc=desc, unit=unit, enabled=progress))


def _run_processes(tasks: Sequence[Any], workers: int) -> Iterator[Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: torch's thread pools do not survive a fork safely.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(tasks)), mp_context=context, initializer=_init_worker) as pool:
        yield from pool.map(run_task, tasks)


def _run_ray(tasks: Sequence[Any], workers: int, address: str | None) -> Iterator[Any]:
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(num_cpus=1)(_ray_task)
        refs = [remote.remote(task) for task in tasks]
        for ref in refs:  # in task order; ray.get blocks only until that task is done
            yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def _ray_task(task: Any) -> Any:
    _init_worker()
    return run_task(task)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError('backend="ray" needs the ray extra: pip install -e ".[ray]" (from a clone)') from None
    return ray
