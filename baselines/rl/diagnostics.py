"""Why an on-policy run learns or collapses: one row per update of what SB3's logger, VecNormalize and the rollout
buffer hold, written to a CSV as training goes (``cluster-envs ablate run ... --diagnose``).

A row, at the end of each rollout (``timesteps``: the steps collected so far):

- ``train/*``: the values SB3's PPO logged for the update *before* this rollout (``approx_kl``, ``clip_fraction``,
  ``entropy_loss``, ``explained_variance``, ``value_loss``, ``policy_gradient_loss``, ``learning_rate``,
  ``clip_range``; ``std`` for a Gaussian policy), empty on the first rollout;
- ``raw_reward``: the mean raw (unnormalized) reward per step of the rollout; ``reward_scale``: VecNormalize's
  divisor sqrt(var(return) + eps) (1 without reward normalization), so ``raw_reward / reward_scale`` is what the
  value function fits; ``obs_mean_abs`` / ``obs_var_min`` / ``obs_var_max``: VecNormalize's observation statistics;
- ``value_mean`` / ``return_mean``: the rollout's value predictions and GAE returns (normalized rewards);
- for a discrete or multi-discrete action: ``action0_share``, the share of sampled action components equal to 0
  (ClusterApprox: idle), ``greedy_action0_share``, the same for the deterministic policy on the rollout's
  observations, and ``max_prob``, the mean probability of the most likely choice per component (1: saturated);
  for a Box action, ``action_low_share`` / ``action_high_share``, the sampled components at the bounds.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

TRAIN_KEYS = ("approx_kl", "clip_fraction", "entropy_loss", "explained_variance", "value_loss",
              "policy_gradient_loss", "learning_rate", "clip_range", "std")  # fmt: skip
ROLLOUT_KEYS = ("raw_reward", "reward_scale", "obs_mean_abs", "obs_var_min", "obs_var_max", "value_mean",
                "return_mean", "action0_share", "greedy_action0_share", "max_prob", "action_low_share",
                "action_high_share")  # fmt: skip
SAMPLE = 1024  # rollout observations the deterministic policy is probed on


def diagnostics_callback(path: str | Path, **fixed: Any):
    """An SB3 callback appending one row per rollout to the CSV ``path`` (created with a header if missing);
    ``fixed`` columns (e.g. the variant and training seed) start every row."""
    from stable_baselines3.common.callbacks import BaseCallback

    path = Path(path)

    class Diagnostics(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self._rewards: list[float] = []
            self._last: dict[str, Any] = {}  # the last update's values when a learn() call ended

        def _on_step(self) -> bool:
            normalizer = self.model.get_vec_normalize_env()
            raw = normalizer.get_original_reward() if normalizer is not None else self.locals["rewards"]
            self._rewards.append(float(np.mean(raw)))
            return True

        def _on_rollout_end(self) -> None:
            # A new learn() call (the ablation's next checkpoint) starts a new logger: the update that ended the
            # previous call is in the values kept at its end.
            logged = self.model.logger.name_to_value or self._last
            self._last = {}
            row = {**fixed, "timesteps": self.num_timesteps, **update_values(logged)}
            row.update(rollout_values(self.model, self._rewards))
            self._rewards = []
            append_row(path, row)

        def _on_training_end(self) -> None:
            self._last = dict(self.model.logger.name_to_value)

    return Diagnostics()


def update_values(logged: dict[str, Any]) -> dict[str, float]:
    """The ``train/*`` values of ``TRAIN_KEYS`` SB3 logged (NaN where not logged)."""
    return {f"train/{key}": float(logged.get(f"train/{key}", np.nan)) for key in TRAIN_KEYS}


def rollout_values(model: Any, rewards: list[float]) -> dict[str, float]:
    """Reward, normalization, value and action statistics of ``model``'s last rollout (see the module docstring),
    every key of ``ROLLOUT_KEYS`` (NaN where it does not apply, so the rows of any run share one header)."""
    import torch
    from gymnasium import spaces

    buffer = model.rollout_buffer
    normalizer = model.get_vec_normalize_env()
    row = dict.fromkeys(ROLLOUT_KEYS, np.nan)
    row["raw_reward"], row["reward_scale"] = float(np.mean(rewards)) if rewards else np.nan, 1.0
    if normalizer is not None and normalizer.norm_reward:
        row["reward_scale"] = float(np.sqrt(normalizer.ret_rms.var + normalizer.epsilon))
    if normalizer is not None and normalizer.norm_obs and not isinstance(normalizer.obs_rms, dict):
        row["obs_mean_abs"] = float(np.mean(np.abs(normalizer.obs_rms.mean)))
        row["obs_var_min"], row["obs_var_max"] = (
            float(normalizer.obs_rms.var.min()),
            float(normalizer.obs_rms.var.max()),
        )
    row["value_mean"], row["return_mean"] = float(buffer.values.mean()), float(buffer.returns.mean())
    space = model.action_space
    actions = buffer.actions.reshape(-1, buffer.actions.shape[-1])
    if isinstance(space, spaces.Box):
        row["action_low_share"] = float(np.mean(actions <= space.low))
        row["action_high_share"] = float(np.mean(actions >= space.high))
        return row
    row["action0_share"] = float(np.mean(actions == 0))
    observations = buffer.observations.reshape(-1, *buffer.obs_shape)
    probe = observations[np.linspace(0, len(observations) - 1, min(SAMPLE, len(observations))).astype(int)]
    with torch.no_grad():
        obs = torch.as_tensor(probe, device=model.device)
        distribution = model.policy.get_distribution(obs).distribution
        parts = distribution if isinstance(distribution, list) else [distribution]  # MultiDiscrete: one per dim
        greedy = np.stack([p.probs.argmax(-1).numpy() for p in parts], -1)
        max_prob = np.stack([p.probs.max(-1).values.numpy() for p in parts], -1)
    row["greedy_action0_share"] = float(np.mean(greedy == 0))
    row["max_prob"] = float(max_prob.mean())
    return row


def action_shares(actions: np.ndarray) -> dict[str, float]:
    """Of the actions (T, B, ...) a batch played step by step, the share of components equal to 0 (``action0``)
    and equal to the same component one step before (``repeat``); NaN for real-valued (Box) actions."""
    if actions.dtype.kind == "f":
        return {"action0": np.nan, "repeat": np.nan}
    return {"action0": float(np.mean(actions == 0)), "repeat": float(np.mean(actions[1:] == actions[:-1]))}


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to the CSV ``path``, writing the header first if the file is new."""
    new = not path.is_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


def markdown(updates: list[dict[str, str]], probes: list[dict[str, str]]) -> str:
    """A Markdown table, one row per probed checkpoint (``checkpoint_probe``'s CSV rows, ``probes``), with the
    update values of the last update row at or before it (``updates``, this module's CSV rows) of the same
    variant and training seed whose ``train/*`` values were logged."""
    columns = (("greedy_value", "greedy value", ".4g"), ("sampled_value", "sampled value", ".4g"),
               ("greedy_action0", "greedy idle", ".3f"), ("greedy_repeat", "greedy repeat", ".3f"),
               ("sampled_action0", "sampled idle", ".3f"), ("train/entropy_loss", "entropy loss", ".2f"),
               ("max_prob", "max prob.", ".3f"), ("train/approx_kl", "approx. KL", ".4f"),
               ("train/clip_fraction", "clip fraction", ".3f"), ("train/explained_variance", "expl. var.", ".2f"),
               ("raw_reward", "raw reward/step", ".3f"), ("reward_scale", "reward scale", ".2f"))  # fmt: skip
    lines = ["| variant | seed | steps | " + " | ".join(title for _, title, _ in columns) + " |",
             "|---|---:|---:|" + "---:|" * len(columns)]  # fmt: skip
    for probe in probes:
        key = (probe["variant"], probe["train_seed"])
        steps = int(probe["timesteps"])
        logged = [u for u in updates if (u["variant"], u["train_seed"]) == key and int(u["timesteps"]) <= steps
                  and np.isfinite(float(u["train/approx_kl"]))]  # fmt: skip
        row = {**(logged[-1] if logged else {}), **probe}
        cells = [format(float(row[name]), fmt) if name in row else "—" for name, _, fmt in columns]
        lines.append(f"| {key[0]} | {key[1]} | {steps:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
