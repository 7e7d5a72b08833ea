"""The gbdt's training settings (``GBDTSettings``): each one a ``--param`` with its type, range,
default and meaning (``solutions.settings.schema``), and the LightGBM parameters they make. What the
objectives and the defaults are and why: docs/gbdt.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from competition.collections import Collection
from solutions.settings.schema import MethodSettings, SettingError, check_settings, setting

MAX_QUERY_SIZE = 10_000  # LightGBM refuses ranking queries larger than this
OBJECTIVES = ("lambdarank", "rank_xendcg", "regression", "pairwise")
# Objectives trained on the within-graph rank percentile (every runtime difference kept) rather than
# on relevance buckets: pairwise needs each pair of differing runtimes to differ in label.
EXACT_ORDER_LABELS = ("regression", "pairwise")


@dataclass(frozen=True)
class GBDTSettings:
    """Training settings, each with its type, range, default and meaning (``solutions.settings.schema``);
    ``SETTINGS.resolve`` gives those a collection is fitted with (``collection_defaults`` on top)."""

    objective: str = setting(
        "lambdarank", "lambdarank, rank_xendcg, regression (pointwise, on the within-graph rank) or pairwise "
        "(logistic loss over all pairs of a query, each pair of differing runtimes weighed the same: "
        "gbdt/pairwise.py)", choices=OBJECTIVES, search_choices=("lambdarank", "rank_xendcg", "regression"))
    label_levels: int = setting(30, "relevance buckets of the runtime rank (<= 31 with exponential gains)",
                                low=2, high=10_000, search=(4, 31), scale="log")
    linear_gain: bool = setting(True, "label_gain = 0, 1, 2, ... (every pair counts) instead of 2**label - 1")
    ndcg_at: int | None = setting(None, "lambdarank truncation: top-k the lambdas focus on "
                                  "(none = whole group)", low=1)
    max_configs_per_graph: int = setting(1000, "configs drawn per training graph (after deduplication)",
                                         low=1)
    query_size: int | None = setting(64, "a graph's drawn configs are cut into random queries of this size "
                                     "(none: one query per graph)", low=1, high=MAX_QUERY_SIZE,
                                     search=(16, 512), scale="log")
    max_valid_configs_per_graph: int = setting(4000, "configs scored per valid graph for early stopping",
                                               low=1)
    num_boost_round: int = setting(300, "boosting rounds at most", low=1)
    min_boost_round: int = setting(100, "the best round is chosen among rounds >= this "
                                   "(valid sets are small)", low=0)
    early_stopping_rounds: int = setting(50, "stop when the best round is this far behind (counted after the "
                                         "minimum)", low=1)
    learning_rate: float = setting(0.1, "shrinkage of each tree", low=0, low_open=True, search=(0.02, 0.3),
                                   scale="log")
    num_leaves: int = setting(31, "leaves per tree", low=2, high=131_072, search=(7, 255), scale="log")
    min_data_in_leaf: int = setting(20, "rows a leaf needs at least", low=0, search=(5, 200), scale="log")
    feature_fraction: float = setting(0.8, "share of the features each tree may use", low=0, high=1,
                                      low_open=True, search=(0.4, 1.0))
    bagging_fraction: float = setting(0.8, "share of the rows each tree is fitted on", low=0, high=1,
                                      low_open=True, search=(0.4, 1.0))
    lambda_l2: float = setting(1.0, "L2 regularisation of leaf values", low=0, search=(1e-3, 30.0),
                               scale="log")
    max_bin: int = setting(63, "histogram bins per feature", low=2, search=(15, 255), scale="log")
    pairwise_max_pairs: int = setting(1_000_000, "objective=pairwise: a query with more pairs uses this many "
                                      "drawn at random", low=1)
    num_threads: int = setting(2, "LightGBM threads (fixed, so a seed gives the same model on any machine)",
                               low=1)
    center_per_graph: bool = setting(True, "also give each config feature minus its graph's mean")
    # On by the real-data check: z-scores put real and synthetic graphs on one scale (docs/defaults.md).
    scale_per_graph: bool = setting(True, "also give each config feature as a z-score within its graph")
    # 3 by the real-data check; 0 where the metric reads the top k only (collection_defaults; why:
    # docs/defaults.md).
    heuristic_prior: float = setting(3.0, "start from the heuristic: each config's initial score is minus "
                                     "this times its heuristic_log_cost as a z-score within its graph, and "
                                     "the trees learn what to change (0: off; needs scale_per_graph)", low=0,
                                     search=(0.0, 6.0))

    def __post_init__(self) -> None:
        check_settings(self)
        if self.heuristic_prior > 0 and not self.scale_per_graph:
            raise SettingError(f"setting heuristic_prior={self.heuristic_prior} reads the z-scored heuristic "
                               f"feature; add scale_per_graph=true or set heuristic_prior=0")
        if not self.linear_gain and self.label_levels > 31:
            raise SettingError(f"setting label_levels={self.label_levels} with linear_gain=false: LightGBM "
                               f"allows at most 31 levels with exponential gains; lower label_levels or add "
                               f"linear_gain=true")

    def lightgbm_params(self, seed: int, max_group: int) -> dict[str, Any]:
        params: dict[str, Any] = {
            "objective": self.objective,
            "metric": "None",  # early stopping uses the official metric through feval
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "feature_fraction": self.feature_fraction,
            "bagging_fraction": self.bagging_fraction,
            "bagging_freq": 1 if self.bagging_fraction < 1 else 0,
            "lambda_l2": self.lambda_l2,
            "max_bin": self.max_bin,
            "num_threads": self.num_threads,
            "deterministic": True,
            "force_row_wise": True,  # faster than col-wise here (BENCHMARKS.md, gbdt: design choices)
            "seed": seed,
            "verbosity": -1,
        }
        if self.objective == "pairwise":  # lightgbm >= 4 takes a callable objective in params
            from solutions.methods.gbdt.pairwise import PairwiseObjective

            params["objective"] = PairwiseObjective(self.pairwise_max_pairs, seed)
        if self.objective == "lambdarank":
            params["lambdarank_truncation_level"] = self.ndcg_at or max(1, max_group)
            if self.linear_gain:
                params["label_gain"] = list(range(self.label_levels))
        return params


def collection_defaults(collection: Collection) -> dict[str, object]:
    """Where a collection starts from other settings: a metric that reads the top k listed configs
    (tile) learns NDCG at k on exponential gains, one query per graph, without the heuristic's prior
    (docs/gbdt.md)."""
    top_k = collection.task.top_k
    if top_k is None:
        return {}
    return {"linear_gain": False, "ndcg_at": top_k, "query_size": None, "heuristic_prior": 0.0}


SETTINGS = MethodSettings("gbdt", GBDTSettings, collection_defaults)
