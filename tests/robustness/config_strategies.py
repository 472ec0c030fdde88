"""Hypothesis strategies for env configurations, generated from the keyword domains the config classes declare
(``DOMAINS``, ``cluster_envs/common/domains.py``): a new keyword with a domain is fuzzed without touching this file.

A configuration is a preset plus a few overrides. Each override is mostly drawn inside its domain (its bounds and
edge values included, so the extremes such as 1e-300 or 1e300 of an unbounded interval come up), sometimes
outside it (NaN, infinities, a value past a bound, a wrong type), which the env must refuse with a ``ValueError``.
Sizes are drawn small: the joint limits on the state they imply are tested with explicit regressions.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import gymnasium as gym
from hypothesis import strategies as st

from cluster_envs.common.domains import AnyOf, Choice, Given, Keywords, Number, Sequence

SMALL_SIZE = 12  # the largest size the fuzz draws above a size's lower bound
# The oracle flags stay off: their memory and time guards are issue 19 item 2, tested on their own.
ORACLE_FLAGS = {"compute_regret": False}
# Presets whose reset alone takes seconds (measured 1.6 s each): only the long profile draws them. ClusterSLA-v1's
# paper (15 s; the default preset at T = 3·10⁶) is left to tests/sla/test_sla_paper_scale.py.
PAPER_SCALE_APPROX = (
    "paper",
    "paper_light",
    "paper_hidden_speed",
    "paper_budget_bound",
    "paper_budget_bound_hidden_speed",
)
PAPER_SCALE = {("ClusterApprox-v1", name) for name in PAPER_SCALE_APPROX} | {
    (env_id, "production")  # the production-scale presets (PRODUCTION_PRESETS): tests/test_production_presets.py
    for env_id in ("ClusterSLA-v1", "ClusterApprox-v1", "ClusterBilinear-v0", "ClusterMultiServer-v0", "ClusterGang-v0")
}
NOT_FUZZED = {("ClusterSLA-v1", "paper")}
WRONG_TYPES = (float("nan"), float("inf"), -float("inf"), "1", None, True, 1j, (1,))


def env_class(env_id: str) -> type:
    module, _, name = gym.spec(env_id).entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def fuzzed_keywords(env_id: str) -> dict[str, Any]:
    """The keyword -> domain table the fuzz draws from: every declared domain but the free-form ones (``Given``)
    and the oracle flags."""
    domains = env_class(env_id).config_class.DOMAINS
    return {k: d for k, d in domains.items() if not isinstance(d, Given) and k not in ORACLE_FLAGS}


def number(domain: Number, context: dict) -> st.SearchStrategy:
    if domain.integer:
        low = int(domain.low) if domain.low is not None else -(2**62)
        high = int(domain.high) if domain.high is not None else 2**62
        low, high = low + domain.low_open, high - domain.high_open
        inside = st.integers(low, min(high, low + SMALL_SIZE)) if domain.size else st.integers(low, high)
        edges = [low, high] if not domain.size else [low]
        outside = [low - 1] + ([high + 1] if domain.high is not None else []) + [1.5]
    else:
        inside = st.floats(domain.low, domain.high, exclude_min=domain.low_open and domain.low is not None,
                           exclude_max=domain.high_open and domain.high is not None, allow_nan=False,
                           allow_infinity=False)  # fmt: skip
        low = -math.inf if domain.low is None else domain.low
        high = math.inf if domain.high is None else domain.high
        candidates = [domain.low, domain.high, 1e-300, 1e-6, 0.5, 1.0, 1e6, 1e300, -1e300, 0.0]
        edges = [x for x in candidates if x is not None and _inside(x, domain)]
        outside = [x for x in (low - 1.0, high + 1.0, low, high) if not math.isinf(x) and not _inside(x, domain)]
    options = [inside, inside, st.sampled_from(edges or [None]).filter(lambda x: x is not None)]
    options.append(st.sampled_from(outside + list(WRONG_TYPES)))
    if domain.none:
        options.append(st.none())
    return st.one_of(*options)


def _inside(x: float, d: Number) -> bool:
    above = d.low is None or (x > d.low if d.low_open else x >= d.low)
    below = d.high is None or (x < d.high if d.high_open else x <= d.high)
    return above and below


def value(domain: Any, context: dict) -> st.SearchStrategy:
    """A value for ``domain``; ``context`` is the configuration drawn so far (preset and earlier overrides), which
    sets the length of a per-keyword sequence and the keys of a ``Keywords`` dict."""
    if isinstance(domain, Number):
        return number(domain, context)
    if isinstance(domain, Choice):
        return st.one_of(st.sampled_from(domain.values), st.sampled_from(domain.values), st.just("not_a_choice"))
    if isinstance(domain, Sequence):
        item = value(domain.item, context)
        if domain.pair:
            in_order = st.lists(number(domain.item, context), min_size=2, max_size=2).map(_sorted_or_same)
            return st.one_of(in_order, in_order, st.lists(item, min_size=0, max_size=3).map(tuple))
        size = context.get(domain.length) if domain.length else None
        size = size if isinstance(size, int) and 0 < size <= 64 else None
        exact = st.lists(item, min_size=size, max_size=size) if size else st.lists(item, min_size=1, max_size=4)
        return st.one_of(exact, exact, st.lists(item, min_size=0, max_size=4)).map(tuple)
    if isinstance(domain, AnyOf):
        return st.one_of(*(value(option, context) for option in domain.options if not isinstance(option, Given)))
    if isinstance(domain, Keywords):
        entries = domain.domains.get(context.get(domain.key), {})
        fuzzable = {k: d for k, d in entries.items() if not isinstance(d, Given)}
        if not fuzzable:
            return st.just({})
        return st.fixed_dictionaries({}, optional={k: value(d, context) for k, d in fuzzable.items()})
    raise TypeError(f"no strategy for the domain {domain!r}: extend config_strategies.value")


def _sorted_or_same(pair: list) -> tuple:
    try:
        return tuple(sorted(pair))
    except TypeError:
        return tuple(pair)


@st.composite
def configurations(draw, env_id: str, paper_scale: bool = False, max_overrides: int = 4) -> tuple[str, dict]:
    """(preset, overrides): a preset of ``env_id`` (``PAPER_SCALE`` ones only if ``paper_scale``) and up to
    ``max_overrides`` keywords drawn from their domains (a keyword that a ``Keywords`` dict depends on is drawn
    before that dict)."""
    cls = env_class(env_id)
    drawn = {
        p for p in cls.presets if (env_id, p) not in NOT_FUZZED and (paper_scale or (env_id, p) not in PAPER_SCALE)
    }
    preset = draw(st.sampled_from(sorted(drawn)))
    domains = fuzzed_keywords(env_id)
    keys = draw(st.lists(st.sampled_from(list(domains)), max_size=max_overrides, unique=True))
    keys.sort(key=list(domains).index)  # declaration order: the keyword a length or a dict depends on comes first
    defaults = {f: getattr(cls.config_class, f, None) for f in domains}
    context = {**defaults, **cls.presets[preset]}
    overrides: dict[str, Any] = {}
    for key in keys:
        overrides[key] = context[key] = draw(value(domains[key], context), label=key)
    return preset, {**{k: v for k, v in ORACLE_FLAGS.items() if k in cls.config_class.DOMAINS}, **overrides}
