"""Sanity flags: each kind fires on a comparison built to show it, carries the entry's explanation when there is
one, and stays silent on a comparison without surprises."""

from __future__ import annotations

import dataclasses

import pytest

from baselines.eval import sanity
from baselines.eval.compare import Comparison
from baselines.eval.harness import Episode
from baselines.eval.protocol import SETTINGS

ENV = "ClusterMultiServer-v0"  # regret: lower is better; naive `random`, clairvoyant `oracle`
SEEDS = [0, 1, 2, 3, 4, 5]


def comparison(regrets: dict[str, list[float]], explanations: dict[str, str] | None = None) -> Comparison:
    setting = dataclasses.replace(SETTINGS[ENV], explanations=explanations or {})
    episodes = [
        Episode(ENV, agent, seed, {m: float(value) if m == "regret" else 0.0 for m in setting.metrics}, {})
        for agent, values in regrets.items()
        for seed, value in zip(SEEDS, values, strict=True)
    ]
    return Comparison(ENV, SEEDS, list(regrets), episodes, setting, privileged={"oracle"})


NAIVE = [100.0, 104.0, 96.0, 102.0, 98.0, 100.0]
ORACLE = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
PAPER = [40.0, 45.0, 35.0, 42.0, 38.0, 44.0]


def keys(found: list[sanity.Flag]) -> list[str]:
    return [flag.key for flag in found]


def test_no_flag_without_a_surprise():
    assert sanity.flags(comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE})) == []
    assert sanity.markdown([]) == ["No sanity flag."]


def test_an_agent_entirely_below_the_naive_anchor_is_flagged_also_as_below_random():
    worse = [v + 30.0 for v in NAIVE]
    found = sanity.flags(comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "hauf": worse}))
    assert keys(found) == ["below_naive:hauf", "below_random:hauf"]


def test_an_agent_entirely_above_the_clairvoyant_anchor_is_flagged():
    better = [-20.0, -21.0, -19.0, -20.5, -19.5, -20.0]
    found = sanity.flags(comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "lcf": better}))
    assert keys(found) == ["above_oracle:lcf"]


def test_an_agent_above_a_clairvoyant_policy_is_flagged_on_its_mean_not_only_its_interval():
    # the oracle anchor is an agent (a policy, no bound): one seed below it, the mean above, is flagged already
    straddling = [-5.0, 4.0, -6.0, 3.0, -4.0, 2.0]
    found = sanity.flags(comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "lcf": straddling}))
    assert keys(found) == ["above_oracle:lcf"] and "no upper bound" in found[0].text
    below = [v + 0.5 for v in ORACLE]  # below the policy on every seed: silent
    assert sanity.flags(comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "lcf": below})) == []


def test_identical_agents_form_one_flag_in_agent_order():
    found = sanity.flags(
        comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "esdp": PAPER, "lcf": list(PAPER)})
    )
    assert keys(found) == ["identical:esdp_aa=esdp=lcf"]


def test_a_heuristic_below_random_on_paired_seeds_only_when_the_interval_says_so():
    slightly = [v + 1.0 for v in NAIVE]  # worse on every seed: flagged, and (paired) below the naive anchor too
    mixed = [v + (1.0 if i % 2 else -1.0) for i, v in enumerate(NAIVE)]  # worse on half the seeds: not
    found = sanity.flags(
        comparison({"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "lwtf": slightly, "lcf": mixed})
    )
    assert keys(found) == ["below_naive:lwtf", "below_random:lwtf"]


def test_the_explanation_comes_from_the_entry_and_an_unexplained_flag_says_so():
    regrets = {"esdp_aa": PAPER, "random": NAIVE, "oracle": ORACLE, "hauf": [v + 30.0 for v in NAIVE]}
    found = sanity.flags(comparison(regrets, {"below_random:hauf": "Because."}))
    assert [f.explanation for f in found] == [None, "Because."]
    lines = sanity.markdown(found)
    assert lines[0].endswith("**Not explained yet.**") and lines[1].endswith("Because.")
    twice = sanity.flags(comparison(regrets, {"below_random:hauf": "Because.", "below_naive:hauf": "Because."}))
    assert [line.split(". ")[-1] for line in sanity.markdown(twice)] == ["Because.", "Explained above."]


@pytest.mark.parametrize("env_id", sorted(SETTINGS))
def test_every_explanation_names_a_known_kind_of_flag(env_id):
    for key in SETTINGS[env_id].explanations:
        kind, _, agents = key.partition(":")
        if kind == "regime":  # a horizons page's surprise (regime:dominates|level:<row>) or note (regime:note:<row>)
            relation, _, agents = agents.partition(":")
            assert relation in {"dominates", "level", "note"}, key
        assert kind in {"below_naive", "above_oracle", "identical", "below_random", "regime"} and agents, key
        assert ("=" in agents) == (kind == "identical"), key
