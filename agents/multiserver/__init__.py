"""Reference agents of paper 001 (ESDP and its variants), its heuristics and the knapsack oracle."""
