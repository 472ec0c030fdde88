"""Reference agents of ClusterApprox-v1 and ClusterApproxSingleJob-v0 (paper 002): OPS, OPM, OPM-GC and heuristics."""
