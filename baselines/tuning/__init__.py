"""Tuning: interface ablations and hyperparameter search (Optuna through rl-zoo3)."""
