"""RL baselines: training configurations, training, the model store, the SB3 agent adapter, vector envs and wrappers."""
