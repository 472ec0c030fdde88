"""Parallel-server queues with stochastic bilinear rewards (paper 004, Kim & Vojnović)."""
