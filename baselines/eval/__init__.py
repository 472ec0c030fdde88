"""Evaluation: the episode loop and ``evaluate``, backends, comparisons, statistics, sanity notes, reports and outputs,
and the benchmark's protocol entries."""
