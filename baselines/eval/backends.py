"""Run tasks in this process, in local worker processes, or as Ray tasks, with identical results.

A task is a picklable object with a ``run()`` method, so any worker can run it: an episode's is
``baselines.eval.harness.Task`` (env id, agent, seed, kwargs; an RL agent travels as a ``SavedPolicy``, the
model's bytes), which ``harness.evaluate`` hands to ``run_tasks``; ``baselines.rl.train.TrainTask`` trains an RL
baseline and returns the run's files, so the benchmark's training goes through the same backends as its episodes.
The result of a task depends on the task alone, so every backend returns the same results in the order of the
tasks.

No worker outlives its command: local workers ignore Ctrl-C (the parent handles it, once) and are ended when the
parent leaves the pool for any reason; on Linux the kernel also kills each worker when its parent dies, however it
dies (``PR_SET_PDEATHSIG``, set in the worker's initializer). A failure of the Ray backend (it cannot start or
connect, a node or its raylet dies) is one ``RuntimeError`` naming the cause.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from baselines.eval.progress import progress_bar

BACKENDS = ("local", "ray")


def run_task(task: Any) -> Any:
    """The result of one task (an episode for a ``harness.Task``)."""
    return task.run()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _init_worker(parent: int | None = None) -> None:
    """Workers share a machine: one BLAS/OpenMP/torch thread each (torch reads the variable when imported). A local
    worker (``parent``: the pid of the process that started it) ignores Ctrl-C and dies with its parent."""
    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _die_with_parent(parent)
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


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere the parent's cleanup remains)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _run_processes(tasks: Sequence[Any], workers: int) -> Iterator[Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: torch's thread pools do not survive a fork safely.
    context = multiprocessing.get_context("spawn")
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(min(workers, len(tasks)), mp_context=context, initializer=_init_worker,
                               initargs=(os.getpid(),))  # fmt: skip
    try:
        yield from pool.map(run_task, tasks)
    except BaseException:  # Ctrl-C, a failed task, a caller that stops early: no worker is left running
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in set(multiprocessing.active_children()) - before:
            worker.kill()
            worker.join()
        raise
    pool.shutdown()


def _run_ray(tasks: Sequence[Any], workers: int, address: str | None) -> Iterator[Any]:
    ray = _import_ray()
    started = not ray.is_initialized()
    try:
        if started:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        remote = ray.remote(num_cpus=1)(_ray_task)
        refs = [remote.remote(task) for task in tasks]
        for ref in refs:  # in task order; ray.get blocks only until that task is done
            yield ray.get(ref)
    except ray.exceptions.RayTaskError as err:  # the task's own exception, raised in a Ray worker
        raise err.as_instanceof_cause() from None
    except (ray.exceptions.RayError, ConnectionError, OSError) as err:
        raise RuntimeError(f"the Ray backend ({_where(address)}) failed: {type(err).__name__}: {err}") from None
    except SystemExit as err:  # ray.init exits when it gives up connecting
        raise RuntimeError(f"the Ray backend ({_where(address)}) failed: SystemExit: Ray exited with status "
                           f"{err.code}") from None  # fmt: skip
    finally:
        if started and ray.is_initialized():
            ray.shutdown()


def _where(address: str | None) -> str:
    return f"at {address}" if address else "started locally"


def _ray_task(task: Any) -> Any:
    _init_worker()
    return run_task(task)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError('backend="ray" needs the ray extra: pip install -e ".[ray]" (from a clone)') from None
    return ray
