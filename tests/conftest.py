import cluster_envs  # noqa: F401  (registers every id)
