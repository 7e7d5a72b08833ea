"""Features every method may use: engineered graph and config features, and the log scaling.

- ``engineered``: per-config feature rows (graph facts, tile geometry, layout agreement), the
  tile and layout geometry the heuristic ranks by, and helpers on config sets (``select_configs``,
  ``tied_groups``); numpy only.
- ``log_scale``: ``sign(x) * log1p(|x|)`` on ``node_feat`` and tile ``config_feat`` columns.

Methods (``solutions.gbdt``, ``solutions.gnn``, ``solutions.heuristics``) import this package, never
each other.
"""
