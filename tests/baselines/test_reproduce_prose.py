"""The sentences a reproduction page writes are computed from its numbers: a changed number changes the verdict.
The SLA page's readings (A16: which P2/P3 reading is closer to the paper's Static numbers; A17: which ε each of
the paper's Alg2 numbers points to) and the traces page's explanation of a row below the naive anchor."""

from __future__ import annotations

import numpy as np

from baselines.reproduce import sla, traces

PAPER = (10_000, -20_000, -700_000, 10_000, 524_000)  # PG, restPG, Static minus Alg2; Alg2's, Static's ‖Q‖₂


def _means(a16_static: float, a16_queue: float) -> dict:
    """Our reading far from the paper's Static, A16's as given; the ε values as the run found them."""
    return {
        ("paper", 0.01): np.array([8_000, -18_000, -418_000, 12_800, 354_000]),
        ("paper", 0.02): np.array([18_000, -38_000, -408_000, 23_000, 354_000]),
        ("paper_a16", 0.01): np.array([8_000, -18_000, a16_static - 9_000, 13_000, a16_queue]),
        ("paper_a16", 0.02): np.array([16_700, -39_300, a16_static, 22_000, a16_queue]),
    }


def test_the_a16_verdict_follows_the_numbers():
    (a16, _, eps) = sla.readings_verdict(_means(-767_000, 558_000), (0.01, 0.02), PAPER, 3_000_000)
    assert "the `paper_a16` reading is the closer on both" in a16
    assert "`paper` -408,000 (+42%); `paper_a16` -767,000 (-10%)" in a16
    assert "by at most 1,300" in a16
    (a16, _, _) = sla.readings_verdict(_means(-1_200_000, 558_000), (0.01, 0.02), PAPER, 3_000_000)
    assert "the readings split: `paper` is closer on the gap, `paper_a16` on the queue" in a16


def test_the_eps_verdict_names_the_eps_each_number_points_to():
    (_, _, eps) = sla.readings_verdict(_means(-767_000, 558_000), (0.01, 0.02), PAPER, 3_000_000)
    assert "PG − Alg2 +8,000 at ε = 0.01, +18,000 at ε = 0.02 against the paper's +10,000 (closer: ε = 0.01)" in eps
    assert eps.endswith("So all three point to ε = 0.01.")
    means = _means(-767_000, 558_000)
    means["paper", 0.01][3] = 30_000  # Alg2's queue now far from the paper's 10,000 at ε = 0.01
    (_, _, eps) = sla.readings_verdict(means, (0.01, 0.02), PAPER, 3_000_000)
    assert "no ε fits all three" in eps and "Alg2's final ‖Q‖₂ (mean over seeds) points to ε = 0.02" in eps


def test_the_readings_are_not_compared_with_the_paper_below_its_horizon():
    (line,) = sla.readings_verdict(_means(-767_000, 558_000), (0.01, 0.02), PAPER, 60_000)
    assert "compared with them at that horizon (`--scale paper`)" in line


def test_a_row_below_the_naive_anchor_is_explained_with_its_ablation():
    rows = {"`random`": np.array([278.0]), "`esdp_gang`": np.array([13.5]),
            "`esdp_gang` (arrival_aware=True)": np.array([290.0])}  # fmt: skip
    facts = {"`random`": {"placing": 0.9, "edges": 3.6, "per_edge": 0.4},
             "`esdp_gang`": {"placing": 0.045, "edges": 0.18, "per_edge": 0.4},
             "`esdp_gang` (arrival_aware=True)": {"placing": 0.95, "edges": 3.8, "per_edge": 0.4}}  # fmt: skip
    ablated = {"`esdp_gang`": ("`esdp_gang` (arrival_aware=True)", "it solves over every port")}
    (_, text) = traces._below_naive(rows, "`random`", +1, facts, ablated)
    assert text.startswith("`esdp_gang` scores below the naive anchor `random` (13.5 against 278)")
    assert "4.5% of the slots, 0.18 edges a slot at 0.400 an edge (`random`: places a job in 90.0% of the slots" in text
    assert "it solves over every port. So run (`esdp_gang` (arrival_aware=True)), it scores 290, above `random`" in text
    assert "value of the edges" not in text
    rows["`esdp_gang`"] = np.array([280.0])
    assert traces._below_naive(rows, "`random`", +1, facts, ablated) == []


def test_a_gap_the_ablation_leaves_is_put_on_the_edges_value_only_when_it_is():
    rows = {"`random`": np.array([226.0]), "`lwtf`": np.array([181.0]), "`lwtf` (skip)": np.array([203.0])}
    facts = {"`random`": {"placing": 0.91, "edges": 1.75, "per_edge": 0.32},
             "`lwtf`": {"placing": 0.91, "edges": 1.59, "per_edge": 0.28},
             "`lwtf` (skip)": {"placing": 0.91, "edges": 1.76, "per_edge": 0.29}}  # fmt: skip
    ablated = {"`lwtf`": ("`lwtf` (skip)", "it stops at the first job that does not fit")}
    (_, text) = traces._below_naive(rows, "`random`", +1, facts, ablated)
    assert "it scores 203, still below `random`" in text
    assert text.endswith("its priority order places as many edges as `random`, of lower utility.")
    facts["`lwtf` (skip)"]["edges"] = 1.2  # fewer edges: the number, not their value, is left unexplained
    (_, text) = traces._below_naive(rows, "`random`", +1, facts, ablated)
    assert "value of the edges" not in text


def test_the_rebalancing_time_scale_is_alg2s_own_constants():
    """1/(ηλ) with Alg. 2's default η = 1/3 and λ = ε²/(8N): 24N/ε² steps."""
    from cluster_envs.sla.env import ClusterSLAEnv

    env = ClusterSLAEnv(preset="example_1_1")
    env.reset(seed=0)
    assert np.isclose(sla.rebalancing_steps(env, 0.02), 24 * env.problem.n_users / 0.02**2)
