"""What the gbdt learns from: feature rows of many graphs grouped into ranking queries (``Queries``).

- **Rows**: a graph's distinct configs (``compress``: duplicates merged with the ``min`` runtime
  policy of ``solutions.features.dedup``), at most ``max_configs_per_graph`` of them drawn at random,
  featurized by ``solutions.kinds.features.config_features``.
- **Queries**: a tile graph is one query; a layout graph's drawn configs are shuffled and cut into
  queries of ``query_size``.
- **Labels**: each config's runtime rank within its graph cut into ``label_levels`` equal-count
  buckets, fastest = highest (``relevance_labels``), or the exact within-graph rank percentile
  (``within_graph_percentile``) for the objectives of ``EXACT_ORDER_LABELS``.

Valid graphs are featurized exactly as prediction does (``prediction_features``). Why these choices:
docs/gbdt.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from competition.data.graphs import Graph
from solutions.features.dedup import DedupResult, deduplicate_configs
from solutions.kinds import kind_of
from solutions.kinds.features import FeatureSettings, config_features
from solutions.methods.gbdt.settings import EXACT_ORDER_LABELS, MAX_QUERY_SIZE, GBDTSettings


def relevance_labels(target: np.ndarray, levels: int) -> np.ndarray:
    """(n,) int32 relevance of each config within one graph: rank buckets, fastest = ``levels - 1``.

    Ties share the best rank of their group. A graph with fewer configs than ``levels`` uses one
    level per rank.

    >>> relevance_labels(np.array([30, 10, 20, 10]), 4).tolist()
    [0, 3, 1, 3]
    """
    n = target.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    rank = np.searchsorted(np.sort(target), target, side="left")  # 0 = fastest; ties share the lowest
    buckets = min(levels, n)
    return ((n - 1 - rank) * buckets // n).astype(np.int32)


def within_graph_percentile(target: np.ndarray) -> np.ndarray:
    """(n,) float rank of each config in [0, 1], 1 = fastest (the pointwise regression target)."""
    n = target.shape[0]
    rank = np.searchsorted(np.sort(target), target, side="left")
    return 1.0 - rank / max(n - 1, 1)


@dataclass
class Queries:
    """Feature rows of many graphs, graph-major, with what the metric needs per row."""

    features: list[np.ndarray] = field(default_factory=list)  # (c_g, F) float32 per graph
    labels: list[np.ndarray] = field(default_factory=list)  # (c_g,) relevance or regression target
    runtimes: list[np.ndarray] = field(default_factory=list)  # (c_g,) runtimes (tile: raw)
    normalizers: list[np.ndarray] = field(default_factory=list)  # (c_g,) tile normalizers (ones for layout)
    graphs: list[int] = field(default_factory=list)  # which graph of the split each query comes from

    def subset(self, keep: Iterable[int]) -> Queries:
        """The queries numbered ``keep``, in that order."""
        keep = list(keep)
        return Queries([self.features[i] for i in keep], [self.labels[i] for i in keep],
                       [self.runtimes[i] for i in keep], [self.normalizers[i] for i in keep],
                       [self.graphs[i] for i in keep])

    def __len__(self) -> int:
        return len(self.features)

    def take_features(self) -> np.ndarray:
        """Every query's feature rows in one (rows, F) array, emptying ``features`` while it copies them
        (last part first), so the rows are never held twice: for the last use of the training rows,
        whose matrix is the largest the kit holds (874,881 x 168 float32, 561 MiB, on the full-size
        tile collection)."""
        dtype = np.result_type(*{part.dtype for part in self.features})  # distinct dtypes: few arguments
        out = np.empty((int(self.sizes.sum()), self.features[0].shape[1]), dtype=dtype)
        end = out.shape[0]
        while self.features:
            part = self.features.pop()
            out[end - part.shape[0]:end] = part
            end -= part.shape[0]
        return out

    @property
    def sizes(self) -> np.ndarray:
        return np.array([f.shape[0] for f in self.features], dtype=np.int64)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)


def config_keys(graph: Graph) -> np.ndarray:
    """What tells a graph's configs apart (``Kind.config_keys``: tile (c, 24) features, layout (c, nc)
    int64 row codes)."""
    return kind_of(graph.task).config_keys(graph)


def _labels(target: np.ndarray, settings: GBDTSettings) -> np.ndarray:
    """The label of each config of one graph under ``settings.objective``."""
    if settings.objective in EXACT_ORDER_LABELS:
        return within_graph_percentile(target)
    return relevance_labels(target, settings.label_levels)


def training_queries(graphs: Iterable[tuple[str, Graph]], settings: GBDTSettings, features: FeatureSettings,
                     rng: np.random.Generator, *, compress: bool) -> Queries:
    """The train split's rows, cut into queries (see the module docstring)."""
    cap = min(settings.max_configs_per_graph, MAX_QUERY_SIZE)
    rows = Queries()
    for graph_number, (_, graph) in enumerate(graphs):
        target = graph.ranking_target()  # tile: runtime / normalizer; layout: the runtime
        if compress:
            dedup = deduplicate_configs(config_keys(graph), target, policy="min")
            configs, target = dedup.unique_index, dedup.runtime.astype(np.float64)
        else:
            configs = np.arange(graph.num_configs)
        if configs.shape[0] < 2:
            continue  # nothing to rank
        if configs.shape[0] > cap:
            keep = np.sort(rng.choice(configs.shape[0], size=cap, replace=False))
            configs, target = configs[keep], target[keep]
        matrix = config_features(graph, features, configs=configs)
        labels = _labels(target, settings)
        # Lambdarank costs O(group size^2) per round without truncation: random queries of
        # query_size configs give an unbiased sample of the graph's pairs at a fraction of the cost.
        order = rng.permutation(configs.shape[0]) if settings.query_size else np.arange(configs.shape[0])
        step = settings.query_size or configs.shape[0]
        for start in range(0, order.shape[0], step):
            part = order[start : start + step]
            if part.shape[0] < 2:
                continue
            rows.features.append(matrix[part])
            rows.labels.append(labels[part])
            rows.runtimes.append(target[part])
            rows.normalizers.append(np.ones(part.shape[0]))
            rows.graphs.append(graph_number)
    return rows


def validation_queries(graphs: Iterable[tuple[str, Graph]], settings: GBDTSettings, features: FeatureSettings,
                       rng: np.random.Generator) -> Queries:
    """Valid graphs featurized exactly as ``predict`` does, with every config's own runtime (the
    official metric sees duplicates too); one query per graph."""
    cap = min(settings.max_valid_configs_per_graph, MAX_QUERY_SIZE)
    rows = Queries()
    for graph_number, (_, graph) in enumerate(graphs):
        if graph.num_configs == 0:
            continue
        configs = np.arange(graph.num_configs)
        if configs.shape[0] > cap:
            configs = np.sort(rng.choice(configs.shape[0], size=cap, replace=False))
        runtime = graph.config_runtime[configs]
        if not (runtime > 0).all():
            raise ValueError("valid graphs must carry measured runtimes (test files have all-zero runtimes)")
        rows.features.append(prediction_features(graph, features)[configs])
        rows.labels.append(_labels(graph.ranking_target()[configs], settings))
        rows.runtimes.append(runtime)
        rows.normalizers.append(np.ones_like(runtime) if graph.normalizers is None
                                else graph.normalizers[configs])
        rows.graphs.append(graph_number)
    return rows


def distinct_config_features(graph: Graph, features: FeatureSettings) -> tuple[DedupResult, np.ndarray]:
    """The graph's distinct configs and their (d, F) features: computed per distinct config, so the
    per-graph centring and scaling are over distinct configs, as in training."""
    dedup = deduplicate_configs(config_keys(graph))
    return dedup, config_features(graph, features, configs=dedup.unique_index)


def prediction_features(graph: Graph, features: FeatureSettings) -> np.ndarray:
    """(c, F) the features ``predict`` scores, each distinct config's row given to its duplicates."""
    dedup, matrix = distinct_config_features(graph, features)
    return dedup.expand(matrix)
