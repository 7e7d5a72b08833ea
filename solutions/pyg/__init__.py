"""TpuGraphs for PyTorch Geometric users: a dataset, its batches, and the official metric OGB-style.

- ``TpuGraphsDataset(root, collection, split, ...)``: a ``torch_geometric.data.Dataset``, one
  ``TpuGraphsData`` per graph with the configs drawn for that access; ``torch_geometric.loader.DataLoader``
  batches it with every config tensor still indexing its own graph (``solutions.pyg.dataset``).
- ``Evaluator(collection, root, split)``: ``eval({"graph_id": ..., "y_pred": ...})`` gives the official
  metric and the per-graph scores, the numbers ``tpugraphs score`` prints (``solutions.pyg.evaluator``).
- ``write_submission(path, {collection: predictions}, root, fill=...)``: test predictions as a submission
  the validator accepts.

The evaluator and the submission helper import numpy and ``competition`` only; torch and
torch_geometric are imported when the dataset is first used (``from solutions.pyg import
TpuGraphsDataset``), never by ``import solutions`` or ``import solutions.pyg``. A guide and a
forty-line model: docs/pyg.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from solutions.pyg.evaluator import Evaluator, PredictionError, prediction_rows, write_submission

if TYPE_CHECKING:
    from solutions.pyg.dataset import TpuGraphsData, TpuGraphsDataset, collections_dataset

__all__ = ["Evaluator", "PredictionError", "TpuGraphsData", "TpuGraphsDataset", "collections_dataset",
           "prediction_rows", "write_submission"]

_WITH_TORCH = {"TpuGraphsData", "TpuGraphsDataset", "collections_dataset"}


def __getattr__(name: str) -> Any:
    """The dataset's names, imported (with torch and torch_geometric) on first use."""
    if name in _WITH_TORCH:
        from competition.progress import import_tqdm_auto_quietly

        # Before torch_geometric imports tqdm.auto, which warns about ipywidgets in a notebook without
        # them (then import solutions.pyg's names before torch_geometric's own).
        import_tqdm_auto_quietly()
        from solutions.pyg import dataset

        return getattr(dataset, name)
    raise AttributeError(f"module 'solutions.pyg' has no attribute {name!r}")
