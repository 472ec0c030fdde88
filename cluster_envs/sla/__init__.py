"""Allocation under SLA constraints (paper 003): ClusterSLA-v1."""
