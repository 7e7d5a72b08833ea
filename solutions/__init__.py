"""Reference solutions: baselines, graph pruning, node/config compression and learned rankers."""
