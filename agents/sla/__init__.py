"""Reference agents of ClusterSLA-v1 (paper 003): the MWU allocators, the online heuristics and the offline oracles."""
