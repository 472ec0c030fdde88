"""RL baselines, the evaluation harness, reports, paper reproductions and the ``cluster-envs`` CLI."""
