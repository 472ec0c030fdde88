"""Approximation jobs on machines of varying speed (paper 000): ClusterApprox-v0 and ClusterApproxSingleJob-v0."""
