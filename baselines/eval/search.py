"""The evaluator program-search tools call (OpenEvolve-style evolvers, LLM-written policies).

:func:`evaluate_program` takes a Python file defining a policy function ``observation -> action`` and returns its
score as a JSON-ready dict; ``cluster-envs program-score FILE ENV_ID`` prints it. The score is the benchmark's
normalized headline (naive anchor 0, clairvoyant anchor 1) through ``baselines.eval.submission.score`` (the same
code path as every agent), on the **validation seeds** 100-104 by default, so that a search never fits the
evaluation seeds; ``final=True`` scores the evaluation seeds of the quick protocol, once, for the result to report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SEARCH_DECLARATION = {
    "privileged": False,
    "training_env_steps": 0,
    "training_cpu_hours": 0,
    "training_gpu_hours": 0,
    "source": "program search",
    "tuned_on_validation_seeds": True,
}


def evaluate_program(
    program: str | Path, env_id: str, *, function: str = "policy", final: bool = False, step_limit: float = 1.0
) -> dict[str, Any]:
    """``{"combined_score": ..., ...}`` of the function ``function`` in ``program`` on ``env_id``: the mean
    normalized headline score (``combined_score``, the key OpenEvolve maximizes), its 95% bootstrap interval over the
    seeds, the raw headline mean, the seeds and whether they are the validation or the evaluation seeds. A failing
    policy (an exception, an action outside the space, a step over ``step_limit`` s) raises ``AgentError``."""
    from baselines.eval.submission import score
    from baselines.rl.train import VALIDATION_SEEDS

    evaluation = score(f"{program}:{function}", env_id, declaration=SEARCH_DECLARATION, reference="anchors",
                       step_limit=step_limit, seeds=None if final else VALIDATION_SEEDS)  # fmt: skip
    (result,) = evaluation.record["results"]
    normalized = result["normalized"]
    headline = [episode["metrics"][result["headline"]] for episode in result["episodes"]]
    return {
        "combined_score": normalized["mean"],
        "ci_low": normalized["ci_low"],
        "ci_high": normalized["ci_high"],
        "env_id": result["env_id"],
        "headline_metric": result["headline"],
        "headline_mean": sum(headline) / len(headline),
        "seeds": result["seeds"],
        "seed_set": "evaluation" if final else "validation",
    }
