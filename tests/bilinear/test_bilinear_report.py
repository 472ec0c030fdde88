"""The paper-004 reproduction page's verdicts are computed from its numbers: a changed number changes the verdict
(``baselines/reproduce/bilinear.py``, written to docs/reproductions/bilinear/report.md). Synthetic per-repetition
numbers, so each test runs in milliseconds; the page's provenance line and claims table are checked on a tiny run
in tests/baselines/test_reproduce_progress.py."""

from __future__ import annotations

import numpy as np

from baselines.reproduce import bilinear as b

REPS = 10
NOISE = np.linspace(-1.0, 1.0, REPS)  # the same small spread in every synthetic column


def _around(mean: float, spread: float = 1.0) -> np.ndarray:
    return mean + spread * NOISE


def test_fig3_verdict_follows_where_sabr_is_lower():
    horizons = (500, 2000, 4000)
    ugda = [_around(60), _around(210), _around(450)]
    result, verdict = b.verdict_fig3_regret(horizons, [_around(20), _around(60), _around(100)], ugda)
    assert verdict.startswith("**reproduces**:") and "T = 500: 20.0 vs 60.0 (Δ -40.0 [" in result
    sabr = [_around(60, 3) + NOISE[::-1] * 8, _around(140), _around(220)]  # T = 500: a noisy difference around 0
    _, verdict = b.verdict_fig3_regret(horizons, sabr, ugda)
    assert verdict.startswith("**reproduces at large T only**: SABR's regret is below UGDA-OL's from T = 2000 on")
    _, verdict = b.verdict_fig3_regret(horizons, [sabr[0], _around(260), _around(100)], ugda)
    assert verdict == "**does not reproduce**: SABR's regret is above UGDA-OL's at T = 2000"


def test_queue_and_slope_verdicts_use_the_spec_thresholds():
    _, verdict = b.verdict_fig3_queues((500,), [_around(14.0)], [_around(14.1)])
    assert verdict.startswith("**reproduces** (within 30% at every T")
    _, verdict = b.verdict_fig3_queues((500,), [_around(20.0)], [_around(14.0)])
    assert verdict.startswith("**does not reproduce**")
    result, verdict = b.verdict_slopes({"SABR": 0.74, "UGDA-OL": 1.01, "Oracle-SABR": float("nan")})
    assert verdict.startswith("**reproduces** (SABR ≤ 0.8 and UGDA-OL ≥ 0.85") and "Oracle-SABR n/a" in result
    _, verdict = b.verdict_slopes({"SABR": 0.74, "UGDA-OL": 0.80})
    assert verdict.startswith("**partly**: UGDA-OL's is below 0.85")
    _, verdict = b.verdict_slopes({"SABR": 0.9, "UGDA-OL": 0.80})
    assert verdict.startswith("**does not reproduce**")


def test_a_holding_cost_advantage_the_last_window_loses_is_a_transient():
    windows = [(0, 50), (50, 100), (100, 250), (250, 500)]
    sabr = {"mean": _around(13.9, 0.2), "windows": [_around(v, 0.2) for v in (11.2, 14.9, 14.9, 13.6)]}
    w_sabr = {"mean": _around(13.5, 0.2), "windows": [_around(v, 0.2) for v in (9.0, 12.8, 14.2, 14.2)]}
    result, verdict = b.verdict_fig4_holding(windows, sabr, w_sabr)
    assert verdict.startswith(
        "**reproduces only as a transient**: lower overall, but the advantage comes from t < 50, "
    )
    assert "in the last window (t ≥ 250) W-SABR's is higher" in verdict and "t ≥ 250 14.20 vs 13.60 (higher)" in result
    w_sabr["windows"][-1] = _around(13.0, 0.2)
    assert b.verdict_fig4_holding(windows, sabr, w_sabr)[1].startswith("**reproduces**, in every part")
    w_sabr["mean"] = _around(14.3, 0.2)  # 1.03 × SABR's: not lower, within the soft 1.05
    assert b.verdict_fig4_holding(windows, sabr, w_sabr)[1].startswith("**partly**: not lower")


def test_fig4_regret_and_queue_verdicts():
    _, verdict = b.verdict_fig4_regret(_around(55, 10), _around(55, 10) + NOISE)
    assert verdict == "**reproduces**: the difference is within noise"
    _, verdict = b.verdict_fig4_regret(_around(55), _around(69))
    assert verdict.startswith("**partly**: same order") and "W-SABR's 25% higher" in verdict
    assert b.verdict_fig4_regret(_around(30), _around(70))[1].startswith("**does not reproduce**")
    result, verdict = b.verdict_fig4_queues((_around(0.77, 0.01), _around(5.98, 0.1)), (_around(1.34), _around(1.53)))
    assert verdict.startswith("**reproduces**") and "(ratio 0.13)" in result and "(ratio 0.88)" in result
    _, verdict = b.verdict_fig4_queues((_around(3.0, 0.1), _around(5.98, 0.1)), (_around(1.34), _around(1.53)))
    assert verdict.startswith("**partly**: W-SABR does not")


def test_alg2_verdict_checks_the_regret_and_the_recomputation_bound():
    assert round(b.recomputation_bound(500), 1) == 28.9
    alg1, alg2, counts = [_around(55)], [_around(56)], [np.full(REPS, 15.0)]
    assert b.verdict_alg2((500,), alg1, alg2, counts)[1].startswith("**reproduces**")
    assert b.verdict_alg2((500,), alg1, alg2, [np.full(REPS, 30.0)])[1].startswith("**does not reproduce**")
    assert b.verdict_alg2((500,), alg1, [_around(70)], counts)[1].startswith("**does not reproduce**")


def test_stability_verdict_names_what_fails():
    v_queues = {"sabr": [_around(7.3 * v / 35, 0.1) for v in b.V_VALUES]}
    fluid = (2000, _around(50.0, 0.5), np.full(REPS, 50.0))
    result, verdict = b.verdict_stability((500,), [_around(20.0)], b.V_VALUES, v_queues, fluid)
    assert verdict.startswith("**reproduces**") and "(log-log slope 1.00)" in result
    flat = {"sabr": [_around(10.0, 0.1) for _ in b.V_VALUES]}
    _, verdict = b.verdict_stability((500,), [_around(20.0)], b.V_VALUES, flat, fluid)
    assert verdict == "**partly**: fails slope against V in [0.8, 1.2]"


def _e5(tail_kv: float, decaying: bool = True) -> list[dict]:
    rows = []
    for node in ("job", "server"):
        for factor in (0.25, 0.5, 0.9, 3.0):
            for update in ("kelly_voice", "literal"):
                if factor > 1:
                    tail, falling = 1.5, False
                elif update == "literal":
                    tail, falling = (0.19, False) if factor == 0.9 else (1e-8, True)
                else:
                    tail, falling = (tail_kv, decaying) if factor == 0.5 else (1e-9, True)
                rows.append({"node": node, "update": update, "factor": factor, "tail": tail, "decaying": falling})
    return rows


def test_distributed_verdict_reads_the_kelly_voice_rows():
    result, verdict = b.verdict_distributed(_e5(5e-7))
    assert verdict.startswith("**reproduces** for the multiplicative (Kelly–Voice) form")
    assert "the printed additive form does not converge at 0.9× the bound" in verdict
    assert "Kelly–Voice form: 0.25×: converges (error ≤ 1.0e-09); 0.5×: converges" in result
    assert b.verdict_distributed(_e5(6e-4))[1].startswith("**partly**")  # slow at 0.5×: still decaying
    assert b.verdict_distributed(_e5(0.5, decaying=False))[1].startswith("**does not reproduce**")


def _e6(oracle_d2: float) -> dict:
    data = {}
    for setting in b.EXTENSIONS:
        for agent in ("sabr", "oracle_sabr"):
            grow = [12.0, 27.0, 36.0, 47.0] if agent == "sabr" else [16.0, 18.0, 4.0, oracle_d2]
            regret = [_around(v) for v in grow]
            averaged = [r + 0.073 * t for r, t in zip(regret, (250, 500, 1000, 2000), strict=True)]
            data[(setting, agent)] = {"regret": regret, "averaged": averaged, "queue": _around(30.0)}
    return data


def test_d2_verdict_carries_the_benchmark_caveat_only_when_the_oracle_regret_reaches_zero():
    horizons = (250, 500, 1000, 2000)
    result, verdict = b.verdict_d2(_e6(-3.6), horizons, 0.77)
    assert verdict.startswith("**reproduces** (qualitatively, slope ≤ 0.8")
    assert "with a caveat: Oracle-SABR's R(2000) is not above 0" in verdict
    assert (
        "every D.2 regret R̄ is positive" in verdict and "(n(t) observed, (46) solved over J(t)), against 0.77" in result
    )
    assert "caveat" not in b.verdict_d2(_e6(30.0), horizons, 0.77)[1]
    findings = "\n".join(b.e6_findings(_e6(-3.6), horizons))
    assert "R̄ − R = T (r̄* − mean_t r*(t)) = 146.0 at T = 2000 (0.073 per slot" in findings
    assert "Why Oracle-SABR's regret (45) is not above 0" not in "\n".join(b.e6_findings(_e6(30.0), horizons))
