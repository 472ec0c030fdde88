"""Sanity flags of a comparison: the surprises a reader of the headline table must have explained.

Four kinds, each with a key that ``EnvSetting.explanations`` maps to its explanation sentence:

- ``below_naive:<agent>``: the agent's 95% interval of the normalized score (paired over evaluation seeds, two-level
  for an RL agent: ``Comparison.normalized``) lies entirely below 0 (the naive anchor);
- ``above_oracle:<agent>``: ... entirely above 1 (the clairvoyant anchor); where the 1-anchor is a
  clairvoyant *policy* (``oracle_agent``), which is no upper bound, already when the agent's mean score is above 1;
- ``identical:<a>=<b>[=...]``: agents with the same per-seed values of every reported metric (in agent order; an RL
  agent's per training seed and evaluation seed, so it matches an agent that does not train only with one run);
- ``below_random:<agent>``: an online reference agent other than ``random`` itself whose per-seed paired
  difference to ``random`` on the headline metric has its 95% interval entirely on the worse side.

A comparison on one evaluation seed has no interval, so it raises no interval flag.

The anchors themselves are not flagged against their own anchor; RL agents are flagged like any other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.eval.compare import Comparison
from baselines.eval.stats import mean_interval

RANDOM = "random"


@dataclass(frozen=True)
class Flag:
    key: str
    text: str  # what was observed
    explanation: str | None  # the settings entry's sentence, None while unexplained


def flags(comparison: Comparison) -> list[Flag]:
    """Every flag of ``comparison`` (empty without a settings entry), with its explanation if the entry has one."""
    setting = comparison.setting
    if setting is None:
        return []
    found = [*_interval_flags(comparison), *_identical_flags(comparison), *_below_random_flags(comparison)]
    return [Flag(key, text, setting.explanations.get(key)) for key, text in found]


def _interval_flags(comparison: Comparison) -> list[tuple[str, str]]:
    setting = comparison.setting
    found = []
    for agent in comparison.agents:
        row = comparison.normalized(agent)
        low, high = row["ci_low"], row["ci_high"]
        if low is None:
            continue
        if agent != setting.naive_agent and high < 0:
            found.append(
                (f"below_naive:{agent}", f"`{agent}` lies below the naive anchor: interval [{low:.3g}, {high:.3g}]")
            )
        if agent == setting.oracle_agent:
            continue
        if low > 1:
            found.append(
                (
                    f"above_oracle:{agent}",
                    f"`{agent}` lies above the clairvoyant anchor: interval [{low:.3g}, {high:.3g}]",
                )
            )
        elif setting.oracle_agent is not None and row["mean"] > 1:
            found.append(
                (
                    f"above_oracle:{agent}",
                    f"`{agent}` scores above the 1-anchor `{setting.oracle_agent}`, a clairvoyant policy and no upper "
                    f"bound: mean {row['mean']:.3g}, interval [{low:.3g}, {high:.3g}]",
                )
            )
    return found


def _identical_flags(comparison: Comparison) -> list[tuple[str, str]]:
    groups: dict[tuple[tuple[int, ...], bytes], list[str]] = {}
    for agent in comparison.agents:  # an RL agent's results per training seed and evaluation seed
        per_seed = np.nan_to_num(np.stack([comparison.matrix(agent, m) for m in comparison.metrics]), nan=np.inf)
        groups.setdefault((per_seed.shape, per_seed.tobytes()), []).append(agent)
    return [
        ("identical:" + "=".join(group), "identical per-seed results: " + ", ".join(f"`{a}`" for a in group))
        for group in groups.values()
        if len(group) > 1
    ]


def _below_random_flags(comparison: Comparison) -> list[tuple[str, str]]:
    if RANDOM not in comparison.agents or len(comparison.seeds) < 2:
        return []
    metric = comparison.setting.headline
    direction = comparison.metrics[metric]
    floor = comparison.values(RANDOM, metric)
    online = [a for a in comparison.agents if a not in comparison.privileged and a not in comparison.rl_runs]
    found = []
    for agent in online:
        if agent == RANDOM:
            continue
        worse = direction * (floor - comparison.values(agent, metric))  # > 0 where the agent is worse
        low, high = mean_interval(worse)
        if low > 0:
            found.append(
                (
                    f"below_random:{agent}",
                    f"`{agent}` is worse than `random` on `{metric}` on paired seeds: mean gap {worse.mean():.4g}, "
                    f"interval [{low:.3g}, {high:.3g}]",
                )
            )
    return found


def markdown(found: list[Flag]) -> list[str]:
    """The report's lines: one bullet per flag, its explanation (once; a repeat points up) or a loud "not
    explained"."""
    if not found:
        return ["No sanity flag."]
    lines, said = [], set()
    for flag in found:
        explanation = flag.explanation or "**Not explained yet.**"
        lines.append(f"- {flag.text}. {'Explained above.' if explanation in said else explanation}")
        if flag.explanation:
            said.add(explanation)
    return lines
