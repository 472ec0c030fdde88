"""The compiled knapsack DP against a plain transcription of spec §4.3 (values and chosen sets identical)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_envs.multiserver import knapsack


def reference_dp(values, A, c, upsilon, s_max, usable):
    """DP(Υ̂, Σ̂², A, c, S_max) and BACKTRACK of spec §4.3, cell by cell on dicts, in Python numbers."""
    n_edges = A.shape[1]
    points = list(itertools.product(*(range(int(ck) + 1) for ck in c)))
    V = {(s, p): (0 if s == 0 else -math.inf) for s in range(s_max + 1) for p in points}
    take = [None] * n_edges
    for i in range(n_edges - 1, -1, -1):
        a = [int(x) for x in A[:, i]]
        new, take[i] = {}, {}
        for (s, p), keep in V.items():
            take_value = -math.inf
            if usable[i] and all(ak <= pk for ak, pk in zip(a, p, strict=True)):
                source = (max(s - int(upsilon[i]), 0), tuple(pk - ak for pk, ak in zip(p, a, strict=True)))
                take_value = V[source] + values[i]
            new[s, p] = max(keep, take_value)
            take[i][s, p] = take_value > keep  # ties: not take
        V = new
    top = tuple(int(ck) for ck in c)

    def backtrack(s):
        x, p = np.zeros(n_edges, np.int8), top
        for i in range(n_edges):
            if take[i][s, p]:
                x[i] = 1
                s = max(s - int(upsilon[i]), 0)
                p = tuple(pk - int(ak) for pk, ak in zip(p, A[:, i], strict=True))
        return x

    return [V[s, top] for s in range(s_max + 1)], backtrack


@st.composite
def instances(draw):
    k = draw(st.integers(1, 3))
    n = draw(st.integers(1, 7))
    A = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=n, max_size=n), min_size=k, max_size=k)))
    A[0] = np.maximum(A[0], 1)  # every column needs a positive entry
    c = np.array(draw(st.lists(st.integers(1, 6), min_size=k, max_size=k)))
    upsilon = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["small", "big", "float"]))
    if kind == "float":
        values = np.array(draw(st.lists(st.floats(0, 1, allow_subnormal=False), min_size=n, max_size=n)))
    else:
        values = np.array(draw(st.lists(st.integers(0, 2**40 if kind == "big" else 50), min_size=n, max_size=n)))
    s_max = draw(st.integers(0, int(upsilon.sum()) + 2))  # budgets beyond Σ Υ̂ must come out infeasible
    usable = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return values, A, c, upsilon, s_max, usable


@settings(max_examples=300, deadline=None)
@given(instances())
def test_compiled_dp_equals_the_reference_dp(instance):
    values, A, c, upsilon, s_max, usable = instance
    table = knapsack.solve(values, A, c, budget_weights=upsilon, s_max=s_max, usable=usable)
    expected, backtrack = reference_dp(values.tolist(), A, c, upsilon, s_max, usable)
    np.testing.assert_array_equal(table.feasible, [v > -math.inf for v in expected])
    for s in np.flatnonzero(table.feasible):
        assert table.values[s] == expected[s]
        np.testing.assert_array_equal(table.backtrack(s), backtrack(int(s)))
    budgets = np.flatnonzero(table.feasible)
    np.testing.assert_array_equal(table.backtrack(budgets), [backtrack(int(s)) for s in budgets])
    assert table.cells == int(usable[(A <= c[:, None]).all(axis=0)].sum()) * (s_max + 1) * int(np.prod(c + 1))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"A": np.array([[1, 0], [2, 0]])}, "A"),
        ({"budget_weights": np.array([1, -1])}, "budget_weights"),
        ({"values": np.array([2**61, 1])}, "values"),
    ],
)
def test_solve_rejects_inputs_outside_its_exactness_conditions(kwargs, match):
    args = {"values": np.array([1, 2]), "A": np.array([[1, 1], [1, 2]]), "c": np.array([2, 3]), **kwargs}
    with pytest.raises(ValueError, match=match):
        knapsack.solve(args["values"], args["A"], args["c"], budget_weights=kwargs.get("budget_weights"), s_max=3)


def test_bench_times_an_esdp_slot_at_paper_scale_and_reports_it():
    from baselines.perf.steps import ESDP_DP_TARGET_S, bench_esdp_dp, targets, to_markdown

    dp = bench_esdp_dp(repeats=1)
    assert dp["s_max"] == 51 * 16  # ξ(2000) = 51 for m = 16 (spec §4.1)
    assert dp["nominal_cells"] == 32 * (51 * 16 + 1) * 25**3
    assert dp["seconds"] > 0 and dp["cartpole_steps"] == pytest.approx(dp["seconds"] * dp["reference_rate"])
    result = {"machine": {"python": "", "gymnasium": "", "numpy": "", "load_average": None},
              "settings": {"repeats": 1}, "single": [], "batched": [], "missing_vector_entry_point": [],
              "esdp_dp": dp}  # fmt: skip
    (row,) = result["targets"] = targets(result)
    assert row["measured"] == dp["seconds"] and row["met"] == (dp["seconds"] <= ESDP_DP_TARGET_S)
    assert "ESDP slot at paper scale" in to_markdown(result)
