"""Multi-server jobs with fluctuating speeds (paper 001): ClusterMultiServer-v0 and ClusterGang-v0."""
