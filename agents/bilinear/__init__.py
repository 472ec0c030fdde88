"""Reference agents of ClusterBilinear-v0: SABR, W-SABR, OFUL-RS, UGDA-OL, heuristics."""
