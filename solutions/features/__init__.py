"""Features every method may use: engineered graph and config features, and the log scaling.

- ``engineered``: the per-config feature matrix and its settings (``FeatureSettings``,
  ``config_features``), built from ``graph_facts`` (graph-level features), ``tile`` (tile features
  and geometry), ``layout_geometry`` (per-graph layout context, tied groups, per-config padding and
  agreement) and ``layout`` (layout features); ``shapes`` is what they all read of a graph (node
  columns, shapes, TPU tiling). The heuristic ranks by the tile and layout geometry. numpy only.
- ``log_scale``: ``sign(x) * log1p(|x|)`` on ``node_feat`` and tile ``config_feat`` columns.

The methods (``solutions.methods``: gbdt, the gnn, the heuristic) import this package, never
each other.
"""
