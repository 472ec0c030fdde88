"""Approximation jobs on machines of varying speed (paper 000): ClusterApprox-v1 and ClusterApproxSingleJob-v0."""
