"""The gradient-boosted ranker: LightGBM lambdarank on engineered graph and config features.

The feature matrix comes from ``solutions.kinds.features`` (numpy only; shared with the other
methods). ``model`` trains and applies the ranker (imports lightgbm when it trains or loads);
``settings`` holds its ``--param`` settings, ``queries`` the rows, labels and queries it learns from,
``boosting`` LightGBM's side of training (the official metric each round, the round kept, the
callbacks that stop it); ``pairwise`` is the optional all-pairs logistic objective
(``--param objective=pairwise``; numpy only). How it trains and why: docs/gbdt.md.
"""

from solutions.methods.gbdt.model import GBDTRanker
from solutions.methods.gbdt.settings import GBDTSettings

__all__ = ["GBDTRanker", "GBDTSettings"]
