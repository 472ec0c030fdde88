"""The SLA-sharing model of Perez-Salazar et al. (paper 003) without the step: the public problem
(:class:`SLAProblem`), the load scenarios that generate an instance (spec §3.8: the paper's synthetic
experiments, a trace loader, a synthetic stand-in for the proprietary Azure traces, the GPU demand of the
Alibaba GPU 2023 trace's QoS classes and the token arrivals of the public Azure LLM inference 2023 trace), and
the offline optimum and static SLA reference in closed form (Proposition 2, by
:func:`~cluster_envs.common.fluid.capped_cumulative_work`).

``make_scenario(name, n_users, horizon, sla, kwargs, trace_dir)`` returns a picklable :class:`Scenario`, for
arguments the config has checked (``SCENARIO_DOMAINS`` in ``sla/config.py``): the tenants' public mean shares
(what ``sla="mean"`` declares) and the hidden loads of shape (N, T), each drawn from its own stream.

**Public mean shares.** ``sla="mean"`` gives each user its normalised mean load as SLA, the paper's Sec. 4.2 choice
[L436]. The paper took the mean over the very window it replayed, which an online decision maker cannot know: the
observation would carry a function of the future loads. Here the shares come from what is known before the
episode: a replayed trace's mean over a *history window* of ``history`` slots that precedes the replayed window and
is not replayed (``trace``: the file's slots before ``start``; ``alibaba_gpu_2023``, ``azure_llm_2023``: the
replay span is cut into ``history`` + T slots, by default 2T, and the episode replays the last T), and the
stand-in's tenant weights w, the expected share of each user's load, drawn from the public ``tenants`` stream while
the load trajectory comes from the hidden ``loads`` stream.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

from cluster_envs.common.alibaba_gpu import NAME as ALIBABA
from cluster_envs.common.alibaba_gpu import POD_FILE, RESOURCES, load_gpu_trace
from cluster_envs.common.azure_llm import NAME as AZURE
from cluster_envs.common.azure_llm import SERVICES, load_llm_trace
from cluster_envs.common.config import check_choice
from cluster_envs.common.fluid import capped_cumulative_work
from cluster_envs.common.traces import read_table

LoadGenerator = Callable[..., np.ndarray]  # generate(rng, shares) -> loads (N, T)


def paper_synthetic(
    rng: np.random.Generator,
    *,
    horizon: int,
    sla: tuple[float, ...],
    shape: float = 2000.0,
    p23_pairs: tuple[tuple[int, int], ...] = ((1, 2), (1, 3)),
) -> np.ndarray:
    """S1 [L394-401]: six periods of P = T/6 steps, two users loaded in each, critically loaded in expectation.

    Periods 0-2 are SLA-proportional: the burst user b gets P·Gamma(k, σ_b/k) at the period's first step and
    the stream user s gets Gamma(k, σ_s/k) in each later step, σ_b = β_b/(β_b+β_s). Periods 3-5 give both
    users of the pairs (2,3), (1,2), (1,3) Gamma(k, 0.5/k) per step. ``p23_pairs`` are the (burst, stream)
    users of periods 1 and 2, which the paper leaves unspecified (A16); users are 1-based as in the paper.
    """
    period = horizon // 6
    beta = np.asarray(sla, dtype=np.float64)
    loads = np.zeros((3, horizon))
    for p, (b, s) in enumerate(((2, 3), *p23_pairs)):
        sigma_b, sigma_s = beta[[b - 1, s - 1]] / beta[[b - 1, s - 1]].sum()
        start, stop = p * period, (p + 1) * period
        loads[b - 1, start] = period * rng.gamma(shape, sigma_b / shape)
        loads[s - 1, start + 1 : stop] = rng.gamma(shape, sigma_s / shape, size=stop - start - 1)
    for p, pair in zip(range(3, 6), ((2, 3), (1, 2), (1, 3)), strict=True):
        users = [u - 1 for u in pair]
        loads[users, p * period : (p + 1) * period] = rng.gamma(shape, 0.5 / shape, size=(2, period))
    return loads


def example_1_1(rng: np.random.Generator, *, horizon: int) -> np.ndarray:
    """S2 [L66-84]: user 1 has load 1 in the first and last thirds, users 2 and 3 in the middle third."""
    third = horizon // 3
    first = np.zeros(horizon)
    first[:third] = 1.0
    first[2 * third :] = 1.0
    return np.stack([first, 1.0 - first, 1.0 - first])


def sec_3_4(
    rng: np.random.Generator, *, horizon: int, t0: int | None = None, eta: float = 1 / 3, eps: float = 0.1
) -> np.ndarray:
    """S3 [L317-319]: user 1 idle, user 2 always loaded, user 3 loaded from step t0 = ceil(1/(η ε)) on."""
    start = math.ceil(1.0 / (eta * eps)) if t0 is None else t0
    loads = np.zeros((3, horizon))
    loads[1] = 1.0
    loads[2, start:] = 1.0
    return loads


def gamma_iid(
    rng: np.random.Generator,
    *,
    n_users: int,
    horizon: int,
    sla: tuple[float, ...],
    shape: float = 2000.0,
    rho: float = 1.0,
) -> np.ndarray:
    """S4 [ours]: L_t(i) ~ Gamma(k, ρ s_i / k) independently, s the static share."""
    beta = np.asarray(sla, dtype=np.float64)
    share = beta / max(1.0, beta.sum())
    return rng.gamma(shape, (rho * share / shape)[:, None], size=(n_users, horizon))


def standin_shares(rng: np.random.Generator, n_users: int) -> np.ndarray:
    """The stand-in tenants' weights w ~ Dirichlet(2·1_N), each user's expected share of the load: drawn from the
    public ``tenants`` stream, known before the episode (``sla="mean"`` declares them)."""
    return rng.dirichlet(np.full(n_users, 2.0))


def trace_standin(
    rng: np.random.Generator,
    *,
    shares: np.ndarray,
    horizon: int,
    rho: float = 0.99,
    sigma: float = 0.15,
    amplitude: float = 0.5,
    ar_coef: float = 0.99,
    day: int = 1440,
) -> np.ndarray:
    """S6 [ours]: diurnal, log-normal AR(1) CPU demands standing in for the proprietary Azure traces.

    L_t(i) = w_i (1 + a sin(2π(t + φ_i)/day)) exp(σ Z_{i,t} - σ²/2), w = ``shares`` (:func:`standin_shares`, public),
    φ ~ U[0, day), Z a unit-variance AR(1) (both hidden, from ``rng``); rescaled so that the mean total load per step
    is ρ. E L_t(i) ∝ w_i: the diurnal factor averages to 1 over a day and the log-normal factor has mean 1.
    """
    weights = np.asarray(shares, dtype=np.float64)
    n_users = weights.size
    phase = rng.uniform(0.0, day, size=n_users)
    steps = np.arange(horizon)
    diurnal = 1.0 + amplitude * np.sin(2 * np.pi * (steps[None, :] + phase[:, None]) / day)
    innovations = rng.standard_normal((n_users, horizon))
    innovations[:, 0] /= math.sqrt(1.0 - ar_coef**2)  # Z_0 ~ N(0, 1)
    ar = lfilter([math.sqrt(1.0 - ar_coef**2)], [1.0, -ar_coef], innovations, axis=1)
    loads = weights[:, None] * diurnal * np.exp(sigma * ar - sigma**2 / 2)
    return loads * (rho / loads.sum(axis=0).mean())


def trace(
    rng: np.random.Generator,
    *,
    data: np.ndarray,
    horizon: int,
    start: int = 0,
    scale: str = "rho",
    rho: float = 0.99,
) -> np.ndarray:
    """S5: a window of a loaded trace, optionally rescaled to mean total load ρ per step."""
    loads = data[:, start : start + horizon]
    return loads * (rho / loads.sum(axis=0).mean()) if scale == "rho" else loads.copy()


def read_trace(path: str | Path, n_users: int) -> np.ndarray:
    """Read a non-negative load trace from .npy, .npz (first array) or .csv, as an (N, T) float64 array.

    Either orientation is accepted: the axis of length N is taken as the user axis.
    """
    check_choice("scenario_kwargs['path'] suffix", Path(path).suffix.lower(), (".npy", ".npz", ".csv"))
    data = read_table(path, "scenario_kwargs['path']", "numeric trace")
    if data.shape[0] != n_users:
        if data.shape[1] != n_users:
            raise ValueError(
                f"scenario_kwargs['path']: the trace has shape {data.shape}, neither axis matches n_users={n_users}"
            )
        data = data.T
    if not np.isfinite(data).all():
        raise ValueError("scenario_kwargs['path']: the trace has NaN or infinite entries")
    if (data < 0).any():
        raise ValueError("scenario_kwargs['path']: the trace has negative loads")
    return np.ascontiguousarray(data)


def alibaba_gpu_loads(trace_dir, n_users: int, horizon: int, history: int = 0) -> np.ndarray:
    """S7 [ours]: the Alibaba GPU 2023 trace's QoS classes as tenants, (N, T): user i's load in step t is the
    GPUs its pods hold on average over slot t (:meth:`GpuTrace.running_demand`, ``horizon`` equal slots of the
    replay window). Users are the classes in descending order of demand over the first ``history`` slots (all slots
    if 0), the part known before an episode that replays the rest (LS, Burstable, BE, Guaranteed in the public
    trace); ``n_users`` must be their number."""
    gpu_trace = load_gpu_trace(trace_dir)
    classes, of_pod = np.unique(gpu_trace.qos, return_inverse=True)
    if len(classes) != n_users:
        raise ValueError(
            f"n_users={n_users} but trace_dir's {POD_FILE} has {len(classes)} QoS classes {classes.tolist()}; "
            "give one user per class"
        )
    gpus = gpu_trace.pod_request[RESOURCES.index("gpu")]
    demand = np.stack([gpu_trace.running_demand(np.where(of_pod == i, gpus, 0.0), horizon) for i in range(n_users)])
    demand = demand[np.argsort(-demand[:, : history or horizon].sum(axis=1), kind="stable")]
    if (demand.sum(axis=1) <= 0).any():
        raise ValueError(f"trace_dir: a QoS class of {POD_FILE} has no GPU demand in the replay window")
    return demand


def azure_llm_loads(trace_dir, n_users: int, horizon: int) -> np.ndarray:
    """S8 [ours]: the Azure LLM inference 2023 trace's services as tenants, (N, T): user i's load in step t is
    the tokens (context + generated) of its requests arriving in slot t of ``horizon`` equal slots of the hour.
    With ``n_users = 2`` the users are the services (code, conversation); with ``n_users = 2k`` each service's
    requests are split into k size classes at the quantiles 1/k, ..., (k−1)/k of their tokens, users
    ``0..k−1`` being code's classes from small to large and ``k..2k−1`` conversation's
    (:meth:`LLMTrace.slot_tokens`); ``n_users`` is even (the config checks it)."""
    return load_llm_trace(trace_dir).slot_tokens(n_users // len(SERVICES), horizon)


TRACE_LOADS = {ALIBABA: alibaba_gpu_loads, AZURE: azure_llm_loads}  # scenarios replayed from the folder trace_dir
SCENARIOS = ("paper_synthetic", "example_1_1", "sec_3_4", "gamma_iid", "trace", "trace_standin", *TRACE_LOADS)
REPLAYS = ("trace", *TRACE_LOADS)  # scenarios that replay a trace window: their history window gives sla="mean"
SLA_FROM_LOADS = (*REPLAYS, "trace_standin")  # scenarios with public mean shares, which sla="mean" declares


def _read_replay(scenario: str, trace_dir, n_users: int, slots: int, history: int) -> np.ndarray:
    if scenario == ALIBABA:
        return alibaba_gpu_loads(trace_dir, n_users, slots, history)
    return TRACE_LOADS[scenario](trace_dir, n_users, slots)


def default_history(scenario: str, kwargs: dict, horizon: int) -> int:
    """The history window's length in slots: ``scenario_kwargs["history"]``, else every slot of the file before
    ``start`` (``trace``) or the horizon (``TRACE_LOADS``: the replay span is cut into history + horizon slots, so the
    shares are the previous period's, as a provider sets an SLA from last period's usage)."""
    if kwargs.get("history") is not None:
        return int(kwargs["history"])
    return int(kwargs.get("start", 0)) if scenario == "trace" else horizon


@dataclass(frozen=True)
class Scenario:
    """An episode's draws: ``shares(rng)``, the users' public mean shares (what ``sla="mean"`` declares; None where
    the scenario has none), from the ``tenants`` stream (``draw_shares``) or a replay's history window
    (``history_shares``); then ``loads(rng, shares)``, the hidden load matrix (N, T) from the ``loads`` stream."""

    draw_loads: LoadGenerator
    draw_shares: Callable[[np.random.Generator], np.ndarray] | None = None  # the loads follow these shares
    history_shares: np.ndarray | None = None

    def shares(self, rng: np.random.Generator) -> np.ndarray | None:
        return self.draw_shares(rng) if self.draw_shares is not None else self.history_shares

    def loads(self, rng: np.random.Generator, shares: np.ndarray | None) -> np.ndarray:
        return self.draw_loads(rng, shares=shares) if self.draw_shares is not None else self.draw_loads(rng)


def make_scenario(
    scenario: str | Callable,
    n_users: int,
    horizon: int,
    sla: tuple[float, ...] | str,
    kwargs: dict,
    trace_dir: str | Path | None = None,
) -> Scenario:
    """The :class:`Scenario` of arguments checked by the config (``sla.config.check_scenario``, ``check_trace_dir``);
    a trace file is read and checked here. ``trace_dir`` is the folder of the ``TRACE_LOADS`` scenarios
    (``alibaba_gpu_2023``, ``azure_llm_2023``)."""
    if callable(scenario):
        user = functools.partial(
            _call_user_scenario, scenario, n_users=n_users, horizon=horizon, sla=sla, kwargs=kwargs
        )
        return Scenario(user)
    kwargs = dict(kwargs)
    history_shares = None
    if scenario in REPLAYS:  # replayed through the trace scenario: rescaled to mean total load ρ, or scale="none"
        history = default_history(scenario, kwargs, horizon)
        kwargs.pop("history", None)
        if scenario == "trace":
            data = read_trace(kwargs.pop("path"), n_users)
        else:
            data, kwargs["start"] = _read_replay(scenario, trace_dir, n_users, history + horizon, history), history
        start = kwargs.get("start", 0)
        kwargs["data"], kwargs["start"] = trace_window(data, horizon, **kwargs), 0
        if sla == "mean":
            history_shares = window_shares(data, start - history, start)
    function = trace if scenario in REPLAYS else globals()[scenario]
    context = {"n_users": n_users, "horizon": horizon, "sla": sla}
    accepted = inspect.signature(function).parameters
    draw = functools.partial(function, **{k: v for k, v in context.items() if k in accepted}, **kwargs)
    draw_shares = functools.partial(standin_shares, n_users=n_users) if scenario == "trace_standin" else None
    return Scenario(draw, draw_shares, history_shares)


def trace_window(data: np.ndarray, horizon: int, start: int = 0, scale: str = "rho", rho: float = 0.99) -> np.ndarray:
    """The episode's window ``data[:, start:start + horizon]``, refused when it would give non-finite loads: a window
    beyond the file, a total load that overflows float64, or a zero total load that ``scale="rho"`` divides by."""
    if start + horizon > data.shape[1]:
        raise ValueError(
            f"horizon={horizon} from scenario_kwargs['start']={start} exceeds the trace length {data.shape[1]}"
        )
    window = np.ascontiguousarray(data[:, start : start + horizon])
    with np.errstate(all="ignore"):
        total, factor = window.sum(), rho / window.sum(axis=0).mean()
    if not np.isfinite(total):
        raise ValueError(
            f"scenario_kwargs['path']: the trace window's total load {total} overflows float64; rescale the file"
        )
    if scale == "rho" and not np.isfinite(factor):
        raise _zero_window(start, start + horizon, "scale='rho'")
    return window


def window_shares(data: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The users' normalised mean load over the history window ``data[:, start:stop]`` (``sla="mean"``), refused
    when that window is empty, starts before the trace or has no load."""
    with np.errstate(all="ignore"):
        means = data[:, start:stop].mean(axis=1) if 0 <= start < stop else np.zeros(data.shape[0])
        shares = means / means.sum()
    if not np.isfinite(shares).all():
        raise ValueError(
            f"sla='mean' takes the shares from the history window [{start}, {stop}) before the replayed one, which "
            "is empty, starts before the trace or has (next to) zero load; allowed: scenario_kwargs 'start' ≥ "
            "'history' ≥ 1 (scenario 'trace') with load in that window, or explicit sla shares"
        )
    return shares


def _zero_window(start: int, stop: int, divider: str) -> ValueError:
    return ValueError(
        f"scenario_kwargs['path']: the trace window [{start}, {stop}) has (next to) zero total load, which "
        f"{divider} divides by; allowed: a window with load, or scale='none'"
    )


def _call_user_scenario(scenario: Callable, rng: np.random.Generator, *, n_users, horizon, sla, kwargs) -> np.ndarray:
    return scenario(rng, n_users, horizon, sla, **kwargs)


@dataclass(frozen=True)
class SLAProblem:
    """The static public data an allocator is given: N, the SLA shares β and the horizon."""

    n_users: int
    sla: tuple[float, ...]
    horizon: int

    @property
    def sla_array(self) -> np.ndarray:
        return np.asarray(self.sla, dtype=np.float64)

    @property
    def static_share(self) -> np.ndarray:
        """s = β / max(1, Σβ): the static SLA reference's share (β̄ under over-commitment, A26)."""
        beta = self.sla_array
        return beta / max(1.0, float(beta.sum()))


def binding_share(loads: np.ndarray, capacity: float = 1.0) -> float:
    """The share of steps in which capacity binds: the offline optimum's work-conserving server, fed the aggregate
    load, has work for the whole step (``OPT_c(t) − OPT_c(t−1) = c``), as has every work-conserving allocation."""
    opt = capped_cumulative_work(np.asarray(loads).sum(axis=0), capacity)
    return float((np.diff(opt, prepend=0.0) >= capacity * (1 - 1e-9)).mean())


def windowed_sla_gap(
    loads: np.ndarray, start_queue: np.ndarray, work: np.ndarray, share: np.ndarray, tau: int
) -> np.ndarray:
    """r_i(t) of Sec. 4.2 [L434, L449] for every start t = 1..T-τ+1, shape (N, T-τ+1).

    r_i(t) is the work the static share s_i would do for user i over [t, t+τ) starting from the
    algorithm's start-of-step queue Q_t(i), minus the work the algorithm did there. Positive: Static
    would have been better in that window. ``start_queue[:, t-1]`` is Q_t and ``work[:, t-1]`` is w_t.
    """
    horizon = loads.shape[1]
    starts = horizon - tau + 1
    if starts < 1:
        raise ValueError(f"tau={tau} exceeds the horizon {horizon}")
    queue = start_queue[:, :starts].copy()
    static_work = np.zeros_like(queue)
    for k in range(tau):  # all windows advance together: O(N τ) vector operations of length T-τ+1
        demand = queue + loads[:, k : k + starts]
        served = np.minimum(share[:, None], demand)
        queue = demand - served
        static_work += served
    cum = np.concatenate([np.zeros((work.shape[0], 1)), np.cumsum(work, axis=1)], axis=1)
    return static_work - (cum[:, tau:] - cum[:, :starts])
