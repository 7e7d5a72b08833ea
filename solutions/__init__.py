"""Reference solutions: baselines, a heuristic, learned rankers and what they share.

Shared: ``features/`` (engineered features, log scaling), ``dedup`` (config de-duplication),
``pruning/`` (graph transforms), ``distributed`` (torch.distributed helpers), ``selection``. The
methods (``baselines``, ``heuristics``, ``gbdt/``, ``gnn/``) import these, never each other.
"""
