"""The GNN reference solution (``tpugraphs solve --method gnn``, the default).

GraphSAGE message passing in both edge directions over the computation graph, opcode embeddings and
log-scaled node features; layout configs join at the configurable nodes after message passing
(intermediate fusion, the default; ``fusion=early`` joins them before it) and attend to each other
before the head; tile configs join the pooled kernel embedding; a pairwise hinge ranking loss; the best
epoch chosen on the validation split with the official metric. Layout graphs are pruned (the
``pruning`` setting, by default to the configurable nodes and their neighbours; saved with the model)
and configs are deduplicated and stored base-7 packed.

- ``data``: npz graphs -> tensors (pruning, scaling, config deduplication and packing);
- ``model``: ``LayoutRanker`` and ``TileRanker`` (shapes in their docstrings);
- ``settings``: ``GNNConfig``, every setting with its type, range, default and meaning (the defaults
  sized for ``make demo``), ``COLLECTION_DEFAULTS`` and ``SETTINGS`` (no torch: checking settings is light);
- ``train``: the losses, the training loop and batched prediction;
- ``ranker``: ``GNNRanker``, the ``RankingMethod`` the runner uses;
- ``gst``: Graph Segment Training of layout graphs (``--param training=gst``);
- data-parallel training over ``torch.distributed`` uses ``solutions.compute.distributed``
  (``torchrun -m solutions``).

docs/training-at-scale.md describes the last two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solutions.methods.gnn.ranker import GNNRanker
    from solutions.methods.gnn.settings import GNNConfig

__all__ = ["GNNConfig", "GNNRanker"]


def __getattr__(name: str) -> object:
    """``GNNRanker`` and ``GNNConfig`` on first use: checking settings (``solutions.methods.gnn.settings``)
    must not import torch, which the ranker needs."""
    if name == "GNNRanker":
        from competition.progress import import_tqdm_auto_quietly

        # Before torch_geometric imports tqdm.auto, which would warn about ipywidgets in a notebook
        # without them; the kit's own progress never uses tqdm.auto.
        import_tqdm_auto_quietly()
        from solutions.methods.gnn.ranker import GNNRanker

        return GNNRanker
    if name == "GNNConfig":
        from solutions.methods.gnn.settings import GNNConfig

        return GNNConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
