"""The ranking methods (random, heuristic, gbdt, gnn), what they share (``base``: the protocol, the split
sources and fit options; ``selection``: model selection on valid graphs) and their registry.
"""
