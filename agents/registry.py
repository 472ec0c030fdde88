"""Name registry: env id -> agent name -> ``"module:Class"`` (imported lazily).

A new setting adds its table here; ``agent_names`` and ``make_agent`` serve the harness and the CLI.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from agents.base import Agent

AGENTS: dict[str, dict[str, str]] = {
    "ClusterSLA-v1": {
        "mwu": "agents.sla.mwu:MWU",
        "mwu_extended": "agents.sla.mwu:ExtendedMWU",
        "static": "agents.sla.heuristics:StaticSLA",
        "proportional": "agents.sla.heuristics:ProportionalOnline",
        "owm": "agents.sla.heuristics:OnlineWorkMaximizing",
        "pg": "agents.sla.oracles:ProportionalGreedy",
        "rest_pg": "agents.sla.oracles:RestrictedProportionalGreedy",
    },
    "ClusterApprox-v1": {
        "opm": "agents.approx.primal_dual:OPM",
        "opm_no_estimation": "agents.approx.primal_dual:OPMNoEstimation",
        "opm_gc": "agents.approx.generalized:OPMGC",
        "known_rates": "agents.approx.clairvoyant:KnownRatesOPM",
        "fair": "agents.approx.heuristics:Fair",
        "deadline_aware": "agents.approx.heuristics:DeadlineAware",
        "greedy_ucb": "agents.approx.heuristics:GreedyUCB",
        "random": "agents.approx.heuristics:RandomScheduler",
        "random_paced": "agents.approx.heuristics:RandomPacedScheduler",
    },
    "ClusterApproxSingleJob-v0": {
        "ops": "agents.approx.primal_dual:OPS",
        "known_rates": "agents.approx.clairvoyant:KnownRatesOPS",
        "greedy_ucb": "agents.approx.heuristics:GreedyUCB",
        "random": "agents.approx.heuristics:RandomScheduler",
    },
    "ClusterBilinear-v0": {
        "sabr": "agents.bilinear.sabr:SABR",
        "sabr_printed": "agents.bilinear.sabr:SABRPrinted",
        "w_sabr": "agents.bilinear.sabr:WSABR",
        "oful_rs": "agents.bilinear.sabr:OFULRS",
        "ugda_ol": "agents.bilinear.ugda_ol:UGDAOL",
        "oracle_sabr": "agents.bilinear.oracles:OracleSABR",
        "clairvoyant": "agents.bilinear.anchors:ClairvoyantMatching",
        "random": "agents.bilinear.anchors:RandomMatching",
        "greedy": "agents.bilinear.heuristics:GreedyLinUCB",
        "uniform": "agents.bilinear.heuristics:Uniform",
    },
    "ClusterMultiServer-v0": {
        "esdp": "agents.multiserver.esdp:ESDP",
        "esdp_aa": "agents.multiserver.esdp:ESDPArrivalAware",
        "esdp_exact_index": "agents.multiserver.esdp:ESDPExactIndex",
        "hauf": "agents.multiserver.heuristics:HAUF",
        "hswf": "agents.multiserver.heuristics:HSWF",
        "lcf": "agents.multiserver.heuristics:LCF",
        "lwtf": "agents.multiserver.heuristics:LWTF",
        "random": "agents.multiserver.heuristics:RandomFit",
        "oracle": "agents.multiserver.oracles:KnapsackOracleAgent",
    },
    "ClusterGang-v0": {
        "esdp_gang": "agents.multiserver.gang:ESDPGang",
        "random": "agents.multiserver.gang:GangRandom",
        "oracle": "agents.multiserver.oracles:KnapsackOracleAgent",
    },
}


def agent_names(env_id: str) -> list[str]:
    """The names of the reference agents of ``env_id`` (``ValueError`` for an unknown id)."""
    return list(_table(env_id))


def agent_class(env_id: str, name: str) -> type:
    table = _table(env_id)
    if name not in table:
        raise ValueError(f"agent={name!r} is not an agent of {env_id}; allowed: {list(table)}")
    module_name, _, class_name = table[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def make_agent(env_id: str, name: str, **kwargs: Any) -> Agent:
    """Build the agent ``name`` of ``env_id`` with hyperparameters ``kwargs`` (a ``ValueError`` lists the
    allowed ones when a name is not among them)."""
    cls = agent_class(env_id, name)
    allowed = hyperparameters(cls)
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ValueError(f"unknown hyperparameter(s) {unknown} for agent {name!r}; allowed: {allowed}")
    return cls(**kwargs)


def hyperparameters(cls: type) -> list[str]:
    """The keyword arguments an agent class takes: its ``__init__``'s, and up the class hierarchy while an
    ``__init__`` forwards ``**kwargs`` to its parent's."""
    names: dict[str, None] = {}
    for klass in cls.__mro__[:-1]:  # object's own __init__ takes nothing
        if "__init__" not in vars(klass):
            continue
        params = list(inspect.signature(klass.__init__).parameters.values())[1:]  # without self
        names.update(dict.fromkeys(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return list(names)


def _table(env_id: str) -> dict[str, str]:
    base_id = env_id.split(":")[-1]
    if base_id not in AGENTS:
        raise ValueError(f"env_id={env_id!r} has no agents; known env ids: {list(AGENTS)}")
    return AGENTS[base_id]
