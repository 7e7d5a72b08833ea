"""The gradient-boosted ranker: LightGBM lambdarank on engineered graph and config features.

The feature matrix comes from ``solutions.features.engineered`` (numpy only; shared with the other
methods). ``model`` trains and applies the ranker (imports lightgbm when it trains or loads), ``pairwise`` is
the optional all-pairs logistic objective (``--param objective=pairwise``; numpy only).
"""

from solutions.gbdt.model import GBDTRanker, GBDTSettings

__all__ = ["GBDTRanker", "GBDTSettings"]
