"""TpuGraphs as a PyTorch Geometric dataset: one ``Data`` per graph, batched by PyG's ``DataLoader``.

``TpuGraphsDataset(root, collection, split)`` lists one split of one collection of a data tree (None:
the embedded competition) and gives each graph as a ``TpuGraphsData`` holding the released arrays as
tensors and the configs drawn for that access (docs/pyg.md has the table of names and shapes):

============================  =======================  ==================================================
name                          shape, dtype             what
============================  =======================  ==================================================
``x``                         (n, 140) float32         ``node_feat`` as released (not scaled)
``opcode``                    (n,) int64               ``node_opcode`` (1..120)
``edge_index``                (2, m) int64             ``[producer, consumer]``: PyG's source -> target
                                                       (the released rows are ``[consumer, producer]``)
``y``                         (k,) float32             what the metric ranks, per drawn config: the
                                                       runtime (layout), runtime / normalizer (tile);
                                                       zeros for test graphs
``runtime``                   (k,) int64               ``config_runtime`` of the drawn configs (ns)
``config_id``                 (k,) int64               each drawn config's index in its file
``config_batch``              (k,) int64               the graph of each config in a batch (0 alone)
``graph_id``                  str                      the submission ID, ``<collection>:<stem>`` (a
                                                       batch: a list; ``config_graph_id``: per config)
tile: ``config_feat``         (k, 24) float32          the drawn configs' ``config_feat``
tile: ``normalizer``          (k,) int64               ``config_runtime_normalizers``
layout: ``node_config_ids``   (nc,) int64              the configurable nodes' positions in ``x``
layout: ``node_splits``       (s,) int64               start offsets of the HLO computations
layout: ``node_config_feat``  (k * nc, 18) float32     one row per (drawn config, configurable node),
                                                       config-major: ``.view(k, nc, 18)`` on one graph
                                                       gives the released ``node_config_feat[drawn]``
layout: ``config_node_index`` (k * nc,) int64          the node (in ``x``) each row configures
layout: ``config_index``      (k * nc,) int64          the config (0..k-1; in a batch 0..K-1) of each row
============================  =======================  ==================================================

``TpuGraphsData.__inc__`` makes batching keep every index pointing at its own graph: node indices
(``edge_index``, ``node_config_ids``, ``config_node_index``, ``node_splits``) move by the nodes of the
graphs before, ``config_index`` by their configs, ``config_batch`` by one per graph. So in a batch,
``x[batch.config_node_index]`` are the nodes that ``batch.node_config_feat``'s rows configure,
``scatter(..., batch.config_index)`` pools rows to their configs and ``pooled[batch.config_batch]``
gives each config its graph's embedding.

Configs: the train split draws ``configs_per_graph`` configs per access (all of a graph that has no
more), without replacement, from a generator seeded by ``(seed, epoch, index, access count)``: the same
seed gives the same draws, and every access draws afresh. The valid and test splits give every config
(the metric ranks them all), or, with ``config_chunk``, several items of consecutive configs each, so
that a 100,040-config graph is never in memory at once. ``DataLoader`` workers each hold a copy of the
dataset: call ``set_epoch(epoch)`` before each epoch (as with a ``DistributedSampler``) so that the
draws differ between epochs there too.

Transforms: ``transform=`` takes the kit's pruning transforms (``solutions.pruning``, or a pruning name
such as ``"onehop"``; layout only: they act on the released graph before it becomes tensors and keep
every configurable node, so the configs are unchanged), any PyG transform (a callable on ``Data``:
``torch_geometric.transforms``), or a list of them, pruning first.

Memory: ``cache_dir=`` reads layout graphs through the processed cache (built on first access, reused
while fresh: ``competition.data.processed_cache``), so only the drawn configs of a 100,040-config file
are read. With ``in_memory=True`` (the default) each graph's tensors are kept after its first access
(with the processed cache: all but the configs, which stay on disk); ``in_memory=False`` reads the
file on every access.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data, Dataset

from competition.collections import Collection
from competition.data.graphs import LayoutGraph, TileGraph, load_graph, read_config_count
from competition.data.processed_cache import CachedGraph, build_cache, split_cache_dir
from competition.tasks import LAYOUT_CONFIG_DIM
from solutions.pruning import GraphTransform, PruningNameError, parse_pruning
from solutions.pyg.evaluator import Evaluator
from solutions.pyg.source import SplitFiles, split_files

__all__ = ["TpuGraphsData", "TpuGraphsDataset", "collections_dataset"]

# Keys whose values are node positions of their own graph (moved by the node count when batched).
NODE_INDEX_KEYS = frozenset({"edge_index", "node_config_ids", "config_node_index", "node_splits"})


class TpuGraphsData(Data):
    """One TpuGraphs graph with its drawn configs (the module docstring lists the tensors)."""

    def __inc__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        if key in NODE_INDEX_KEYS:
            return self.num_nodes
        if key == "config_index":
            return int(self.config_id.size(0))
        if key == "config_batch":
            return 1
        return super().__inc__(key, value, *args, **kwargs)

    def __cat_dim__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
        if key == "edge_index":
            return 1
        if key in NODE_INDEX_KEYS or key in ("config_index", "config_batch"):
            return 0  # 1-D indices: one after another
        return super().__cat_dim__(key, value, *args, **kwargs)

    @property
    def num_configs(self) -> int:
        """Configs held (in a batch: of every graph)."""
        return int(self.config_id.size(0))

    @property
    def config_graph_id(self) -> list[str]:
        """The graph ID of each config (k,): with ``config_id`` and the model's scores, the evaluator's
        flat input."""
        ids = [self.graph_id] if isinstance(self.graph_id, str) else list(self.graph_id)
        return [ids[g] for g in self.config_batch.tolist()]


@dataclass
class _Graph:
    """What a graph keeps between accesses: its tensors, and where its configs are read from."""

    nodes: dict[str, torch.Tensor]  # x, opcode, edge_index (+ node_config_ids, node_splits for layout)
    runtime: np.ndarray  # (c,) int64
    normalizer: np.ndarray | None  # (c,) int64 for tile
    configs: np.ndarray | None  # (c, 24) tile or (c, nc, 18) layout float32; None: in the cache
    cache: CachedGraph | None  # the processed cache of a layout graph read through it

    @property
    def num_configs(self) -> int:
        return int(self.runtime.shape[0])


def _split_transforms(transform: object, collection: Collection
                      ) -> tuple[list[GraphTransform], Callable[[Data], Data] | None]:
    """``transform=`` -> (pruning steps, the PyG transform applied after them). One-line errors."""
    items = list(transform) if isinstance(transform, list | tuple) else [transform]
    pruning: list[GraphTransform] = []
    pyg: list[Callable[[Data], Data]] = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, str):
            try:
                item = parse_pruning(item)
            except PruningNameError as exc:
                raise ValueError(str(exc)) from None
            if item is None:  # "none"
                continue
        if isinstance(item, GraphTransform):
            if not collection.task.has_configurable_nodes:
                raise ValueError(
                    f"{collection.name}: the pruning transform {item.name} prunes layout graphs toward their "
                    f"configurable nodes, and {collection.task.name} graphs have none (their config is per "
                    "graph); use a PyG transform or none")
            if pyg:
                raise ValueError(f"transform: the pruning transform {item.name} comes after a PyG transform; "
                                 "pruning acts on the released graph, so list it first")
            pruning.append(item)
        elif callable(item):
            pyg.append(item)
        else:
            raise ValueError(f"transform: {item!r} is neither a pruning transform (solutions.pruning, or a "
                             "pruning name) nor a PyG transform (a callable on Data)")
    if not pyg:
        return pruning, None
    if len(pyg) == 1:
        return pruning, pyg[0]
    from torch_geometric.transforms import Compose

    return pruning, Compose(pyg)


class TpuGraphsDataset(Dataset):
    """One split of one TpuGraphs collection as a ``torch_geometric.data.Dataset`` (module docstring).

    Args:
        root: the data tree (anything ``tpugraphs --data`` accepts: the Kaggle download, its
            ``npz_all/`` or ``npz/`` folder, a ``tpugraphs synth`` / ``prepare`` output folder); None:
            the embedded competition (built on first use; ``$TPUGRAPHS_SCALE``, default ``small``).
        collection: ``"tile:xla"``, ``"layout:xla:default"``, ``"layout:xla:random"``,
            ``"layout:nlp:default"`` or ``"layout:nlp:random"``.
        split: ``"train"``, ``"valid"`` or ``"test"``.
        configs_per_graph: configs drawn per access of a train graph (None: all); valid and test
            graphs always give every config.
        config_chunk: valid and test graphs with more configs come as several items of at most this
            many consecutive configs (same ``graph_id``, ``config_id`` says which), so that a
            100,040-config graph is never in memory at once (with ``cache_dir``); None: one item per
            graph. The evaluator gathers a graph's predictions from all its items.
        seed: seeds the draws.
        transform: a pruning transform or name (layout), a PyG transform, or a list, pruning first.
        cache_dir: folder of the processed cache for layout graphs (built on first access).
        in_memory: keep each graph's tensors after its first access.
    """

    def __init__(self, root: str | os.PathLike | None, collection: str | Collection, split: str = "train", *,
                 configs_per_graph: int | None = None, seed: int = 0, transform: object = None,
                 cache_dir: str | os.PathLike | None = None, in_memory: bool = True,
                 config_chunk: int | None = None) -> None:
        files = split_files(root, collection, split)
        for name, value in (("configs_per_graph", configs_per_graph), ("config_chunk", config_chunk)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None (all), got {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        pruning, pyg_transform = _split_transforms(transform, files.collection)
        self.files: SplitFiles = files
        self.configs_per_graph = configs_per_graph if files.split == "train" else None
        self.seed = int(seed)
        self.pruning: list[GraphTransform] = pruning
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.in_memory = in_memory
        self.epoch = 0
        self._accesses: dict[int, int] = {}
        self._graphs: dict[int, _Graph] = {}
        # (graph, first config, end) of each item when graphs are cut into chunks of configs
        self._chunks: list[tuple[int, int, int]] | None = None
        if config_chunk is not None and files.split != "train":
            counts = [read_config_count(path) for path in files.paths]
            self._chunks = [(g, start, min(start + config_chunk, n)) for g, n in enumerate(counts)
                            for start in range(0, max(n, 1), config_chunk)]
        super().__init__(None, transform=pyg_transform, log=False)

    # -- what the dataset is ---------------------------------------------------------------------

    @property
    def collection(self) -> Collection:
        return self.files.collection

    @property
    def split(self) -> str:
        return self.files.split

    @property
    def data_dir(self) -> Path:
        """The Kaggle-shaped tree the graphs are read from."""
        return self.files.data_dir

    @property
    def graph_ids(self) -> list[str]:
        """The submission ID of every graph, in dataset order."""
        return self.files.ids

    def __repr__(self) -> str:
        return f"TpuGraphsDataset({self.collection.name}, {self.split}, {len(self)} graphs)"

    def evaluator(self, *, solution: str | os.PathLike | None = None) -> Evaluator:
        """The ``Evaluator`` of this split (test: against ``solution``, or the one beside the tree)."""
        return Evaluator(self.collection, self.data_dir, self.split,
                         solution=solution if solution is not None else self.files.solution)

    def set_epoch(self, epoch: int) -> None:
        """Start the draws of ``epoch`` (call it before each epoch when the DataLoader has workers)."""
        self.epoch = int(epoch)
        self._accesses.clear()

    # -- PyG's Dataset -------------------------------------------------------------------------------

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        return []

    def len(self) -> int:
        return len(self.files.paths) if self._chunks is None else len(self._chunks)

    def get(self, idx: int) -> TpuGraphsData:
        if self._chunks is not None:  # a chunk of a valid or test graph's configs
            idx, start, stop = self._chunks[idx]
            graph = self._graph(idx)
            drawn = np.arange(start, stop, dtype=np.int64)
        else:
            graph = self._graph(idx)
            drawn = self._draw(idx, graph.num_configs)
        try:
            return self._data(idx, graph, drawn)
        finally:
            if graph.cache is not None:
                graph.cache.close()  # the pages read leave this process's resident memory

    # -- reading -------------------------------------------------------------------------------------

    def _draw(self, idx: int, num_configs: int) -> np.ndarray:
        """The config indices of this access, sorted (the memory map reads them in order)."""
        k = self.configs_per_graph
        if k is None or num_configs <= k:
            return np.arange(num_configs, dtype=np.int64)
        count = self._accesses.get(idx, 0)
        self._accesses[idx] = count + 1
        rng = np.random.default_rng([self.seed, self.epoch, idx, count])
        return np.sort(rng.choice(num_configs, size=k, replace=False)).astype(np.int64)

    def _graph(self, idx: int) -> _Graph:
        if idx in self._graphs:
            return self._graphs[idx]
        path = self.files.paths[idx]
        per_node = self.collection.task.has_configurable_nodes
        graph = self._read_layout(path) if per_node else self._read_tile(path)
        if self.in_memory:
            self._graphs[idx] = graph
        return graph

    def _read_tile(self, path: Path) -> _Graph:
        tile = load_graph(path, self.collection.task.name)
        assert isinstance(tile, TileGraph)
        return _Graph(_node_tensors(tile.node_feat, tile.node_opcode, tile.edge_index), tile.config_runtime,
                      tile.normalizers, np.asarray(tile.config_feat, dtype=np.float32), None)

    def _read_layout(self, path: Path) -> _Graph:
        cache = None
        if self.cache_dir is not None:
            folder = split_cache_dir(self.cache_dir, self.collection, self.split) / path.stem
            cache = build_cache(path, folder)
            arrays = cache.graph_arrays()
            runtime = arrays.pop("config_runtime")
            configs = None
        else:
            loaded = load_graph(path, self.collection.task.name)
            assert isinstance(loaded, LayoutGraph)
            arrays = {key: value for key, value in loaded.arrays().items()
                      if key not in ("config_runtime", "node_config_feat")}
            runtime, configs = loaded.config_runtime, loaded.node_config_feat
        nc = int(arrays["node_config_ids"].shape[0])
        # Pruning reads only the node arrays: the skeleton carries no configs (the node axis of the
        # configs is unchanged by every pruning transform: all configurable nodes are kept, in order).
        skeleton = LayoutGraph(node_config_feat=np.zeros((0, nc, LAYOUT_CONFIG_DIM), np.float32),
                               config_runtime=runtime[:0], **arrays)
        for step in self.pruning:
            skeleton = step(skeleton)
        nodes = _node_tensors(skeleton.node_feat, skeleton.node_opcode, skeleton.edge_index)
        nodes["node_config_ids"] = torch.from_numpy(np.asarray(skeleton.node_config_ids, dtype=np.int64))
        nodes["node_splits"] = torch.from_numpy(np.asarray(skeleton.node_splits, dtype=np.int64).reshape(-1))
        return _Graph(nodes, runtime, None, configs, cache)

    def _data(self, idx: int, graph: _Graph, drawn: np.ndarray) -> TpuGraphsData:
        k = len(drawn)
        runtime = graph.runtime[drawn]
        task = self.collection.task
        normalizer = graph.normalizer[drawn] if graph.normalizer is not None else None
        labeled = bool(runtime.size) and bool((runtime > 0).all())
        target = (task.ranking_target(runtime, normalizer) if labeled
                  else np.zeros(k, dtype=np.float64))
        data = TpuGraphsData(
            **graph.nodes,
            y=torch.from_numpy(np.asarray(target, dtype=np.float32)),
            runtime=torch.from_numpy(np.asarray(runtime, dtype=np.int64)),
            config_id=torch.from_numpy(drawn),
            config_batch=torch.zeros(k, dtype=torch.int64),
            graph_id=self.files.ids[idx],
            num_nodes=int(graph.nodes["opcode"].shape[0]),
        )
        if not task.has_configurable_nodes:
            assert graph.configs is not None and normalizer is not None
            data.config_feat = torch.from_numpy(np.ascontiguousarray(graph.configs[drawn]))
            data.normalizer = torch.from_numpy(np.asarray(normalizer, dtype=np.int64))
            return data
        configs = graph.cache.configs(drawn) if graph.cache is not None else graph.configs[drawn]
        ids = graph.nodes["node_config_ids"]
        nc = int(ids.shape[0])
        data.node_config_feat = torch.from_numpy(np.ascontiguousarray(configs, dtype=np.float32)
                                                 .reshape(k * nc, LAYOUT_CONFIG_DIM))
        data.config_node_index = ids.repeat(k)
        data.config_index = torch.arange(k, dtype=torch.int64).repeat_interleave(nc)
        return data


def _node_tensors(node_feat: np.ndarray, node_opcode: np.ndarray, edge_index: np.ndarray
                  ) -> dict[str, torch.Tensor]:
    """The released node arrays as tensors; edges flipped to PyG's ``[producer, consumer]``."""
    edges = np.ascontiguousarray(np.asarray(edge_index, dtype=np.int64)[:, ::-1].T)
    return {"x": torch.from_numpy(np.asarray(node_feat, dtype=np.float32)),
            "opcode": torch.from_numpy(np.asarray(node_opcode, dtype=np.int64)),
            "edge_index": torch.from_numpy(edges)}


def collections_dataset(root: str | os.PathLike | None, collections: Sequence[str | Collection],
                        split: str = "train", **options: Any) -> torch.utils.data.ConcatDataset:
    """Several collections' ``split`` as one dataset (e.g. ``small``'s four layout collections); each
    keeps its own ``TpuGraphsDataset`` options."""
    return torch.utils.data.ConcatDataset([TpuGraphsDataset(root, c, split, **options) for c in collections])
