"""rl-zoo3's training entry with some hyperparameters held at the YAML section's values during optimization.

    python -m baselines.zoo_train --keep n_steps,batch_size,n_epochs,policy_kwargs <python -m rl_zoo3.train arguments>

rl-zoo3's PPO sampler draws the rollout length per copy (32-4,096), the minibatch (4-1,024), the epochs and the
network on every trial. On a section with 128 copies (the fast update: 128 × 64 steps, minibatch 2,048, 4 epochs)
those draws make a rollout of up to half a million steps or updates of thousands of tiny minibatches, so a tuning
of the fast update keeps its shape and tunes the rest. Here rl-zoo3's sampler still runs (the study's parameters,
TPE sampler and median pruner are rl-zoo3's own) and the keys named by ``--keep`` are dropped from what it returns,
so every trial trains with the section's values for them. ``baselines.tune`` starts this module when ``--keep`` is
given (and leaves the kept keys out of what ``write`` puts into the YAML).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

# What rl-zoo3's on-policy samplers return (after convert_onpolicy_params): the keys --keep may name.
SAMPLED = frozenset(
    {"n_steps", "batch_size", "gamma", "gae_lambda", "learning_rate", "ent_coef", "clip_range", "n_epochs",
     "max_grad_norm", "policy_kwargs"}
)  # fmt: skip


def parse_keep(text: str) -> tuple[str, ...]:
    """The comma-separated ``--keep`` value as a tuple of sampled keys; ``ValueError`` for any other name."""
    keys = tuple(key.strip() for key in text.split(",") if key.strip())
    unknown = sorted(set(keys) - SAMPLED)
    if not keys or unknown:
        raise ValueError(f"keep must name some of {sorted(SAMPLED)} separated by commas, got {text!r}")
    return keys


def keeping(sampler: Callable[..., dict[str, Any]], keep: Sequence[str]) -> Callable[..., dict[str, Any]]:
    """``sampler`` with the ``keep`` keys removed from the hyperparameters it returns."""

    def sample(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {key: value for key, value in sampler(*args, **kwargs).items() if key not in keep}

    return sample


def main(argv: Sequence[str]) -> None:
    if len(argv) < 2 or argv[0] != "--keep":
        raise SystemExit(__doc__.split("\n\n")[1])
    keep = parse_keep(argv[1])
    from rl_zoo3 import train
    from rl_zoo3.hyperparams_opt import HYPERPARAMS_SAMPLER

    for algo, sampler in list(HYPERPARAMS_SAMPLER.items()):  # rl-zoo3's ExperimentManager reads this dict
        HYPERPARAMS_SAMPLER[algo] = keeping(sampler, keep)
    sys.argv = ["rl_zoo3.train", *argv[2:]]
    train.train()


if __name__ == "__main__":
    main(sys.argv[1:])
