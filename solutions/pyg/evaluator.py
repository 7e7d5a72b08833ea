"""The official metric in OGB's shape: ``Evaluator(collection).eval({"graph_id": ..., "y_pred": ...})``.

Metric plumbing only (numpy and ``competition``, never torch: tensors are accepted and read through
``.detach().cpu().numpy()``). Predictions become submission rows with the kit's bridge
(``competition.predictions.ranking_from_predictions``), pass the validator's per-row rule
(``competition.submission.validate_rows``) and are scored by the one scorer (``competition.scoring``),
so a number from ``eval`` is the number ``tpugraphs score`` prints for the same predictions.

Labels: the valid and train splits carry their runtimes in the npz files; the test split's are hidden
and come from a solution file (``solution=``, or ``private/solution.csv`` beside a made competition's
``public/``: the embedded competition has one).

Predictions, lower = faster (a predicted runtime or any score in runtime order), in one of two forms:

- **flat**, what a loop over ``DataLoader`` batches collects: ``graph_id`` (N,) the ID of each
  prediction's graph (``batch.graph_id[batch.config_batch]``), ``y_pred`` (N,), and optionally
  ``config_id`` (N,) each prediction's config index in its file (``batch.config_id``); without
  ``config_id`` a graph's predictions are taken in file order;
- **per graph**: ``graph_id`` (G,) and ``y_pred`` a sequence of G arrays, each a graph's configs in
  file order.

Every config of every graph of the split needs exactly one prediction (the metric ranks them all).

>>> from solutions.pyg import Evaluator
>>> Evaluator("layout:xla:random").expected_input_format.splitlines()[0]
"==== Expected input format of Evaluator('layout:xla:random', split='valid')"
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_NAMES, COLLECTIONS, Collection, parse_row_id
from competition.data.graphs import expected_from_data_dir, load_graph, read_config_runtime
from competition.predictions import ranking_from_predictions
from competition.predictions import write_submission as write_rows
from competition.scoring import (
    PUBLIC,
    CollectionLabels,
    Solution,
    graph_scores,
    load_solution,
    score_rows,
)
from competition.submission import ValidationResult, format_problems, validate_rows, validate_submission
from solutions.pyg.source import SplitFiles, as_collection, split_files

__all__ = ["Evaluator", "PredictionError", "prediction_rows", "write_submission"]


class PredictionError(ValueError):
    """Predictions that cannot be scored; the message is one line naming the graph and the problem."""


def _as_numpy(value: object) -> np.ndarray:
    """An array from a list, an array or a tensor (any device), without importing torch."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()  # type: ignore[attr-defined]
    return np.asarray(value)


def _ids(value: object) -> list[str]:
    if isinstance(value, str):
        raise PredictionError("graph_id must be a sequence of IDs, got one string")
    return [str(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]  # type: ignore[attr-defined]


def _per_graph(input_dict: Mapping[str, object]) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """``{ID: (predictions, config ids or None)}`` from either input form."""
    missing = [key for key in ("graph_id", "y_pred") if key not in input_dict]
    if missing:
        raise PredictionError(f"the input dict needs the key(s) {', '.join(missing)}; it has "
                              f"{', '.join(map(str, input_dict)) or 'none'}")
    ids = _ids(input_dict["graph_id"])
    raw = input_dict["y_pred"]
    config_id = input_dict.get("config_id")
    flat = None
    if not isinstance(raw, list | tuple) or not raw or np.ndim(_as_numpy(raw[0])) == 0:  # numbers, not arrays
        flat = _as_numpy(raw)
        if flat.ndim == 2 and flat.shape[1] == 1:
            flat = flat[:, 0]  # a model's (N, 1) output
    if not ids and (flat is None or flat.size == 0):
        return {}
    if flat is not None and flat.ndim == 1 and len(flat) == len(ids):
        order = _as_numpy(config_id).astype(np.int64) if config_id is not None else None
        if order is not None and order.shape != flat.shape:
            raise PredictionError(f"config_id has shape {order.shape}, y_pred {flat.shape}: one config id "
                                  "per prediction")
        names, graph_of = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
        by_graph = np.argsort(graph_of, kind="stable")  # each graph's entries, in the order given
        parts = np.split(by_graph, np.cumsum(np.bincount(graph_of, minlength=len(names)))[:-1])
        return {str(row_id): (flat[positions], None if order is None else order[positions])
                for row_id, positions in zip(names, parts, strict=True)}
    if config_id is not None:
        raise PredictionError("config_id goes with flat predictions (one y_pred per config), not with a "
                              "list of per-graph arrays")
    arrays = list(raw) if isinstance(raw, list | tuple) else list(_as_numpy(raw))
    if len(arrays) != len(ids):
        raise PredictionError(f"{len(ids)} graph IDs but y_pred has {len(arrays)} entries: give one ID per "
                              "prediction (flat) or one array per graph")
    twice = [row_id for row_id, count in Counter(ids).items() if count > 1]
    if twice:
        raise PredictionError(f"{twice[0]}: listed twice among the per-graph predictions")
    return {row_id: (_as_numpy(values).reshape(-1), None) for row_id, values in zip(ids, arrays, strict=True)}


def _graph_prediction(row_id: str, values: np.ndarray, config_id: np.ndarray | None, n_configs: int
                      ) -> np.ndarray:
    """One graph's predictions in file order, checked: one finite number per config."""
    if values.dtype.kind not in "fiub":
        raise PredictionError(f"{row_id}: y_pred holds {values.dtype} values, expected numbers")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise PredictionError(f"{row_id}: y_pred holds {int((~np.isfinite(values)).sum())} NaN or infinite "
                              "value(s)")
    if config_id is None:
        if len(values) != n_configs:
            raise PredictionError(f"{row_id}: {len(values)} predictions for {n_configs} configs (without "
                                  "config_id they are read in file order, one per config)")
        return values
    bad = (config_id < 0) | (config_id >= n_configs)
    if bad.any():
        raise PredictionError(f"{row_id}: config_id {int(config_id[bad][0])} is outside 0..{n_configs - 1}")
    counts = np.bincount(config_id, minlength=n_configs)
    if (counts > 1).any():
        raise PredictionError(f"{row_id}: config {int(np.argmax(counts > 1))} is predicted "
                              f"{int(counts.max())} times")
    if (counts == 0).any():
        raise PredictionError(f"{row_id}: {int((counts == 0).sum())} of {n_configs} configs have no "
                              f"prediction, e.g. config {int(np.argmin(counts))}")
    out = np.empty(n_configs, dtype=np.float64)
    out[config_id] = values
    return out


def prediction_rows(collection: str | Collection, input_dict: Mapping[str, object],
                    expected: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Predictions (either form, see the module docstring) -> submission rows ``{ID: config indices}``.

    ``expected`` maps every ID of the split to its config count; each must be predicted exactly once
    and no other ID may appear (PredictionError, one line, otherwise).
    """
    chosen = as_collection(collection)
    grouped = _per_graph(input_dict)
    unknown = [row_id for row_id in grouped if row_id not in expected]
    if unknown:
        raise PredictionError(f"{unknown[0]}: not a graph of this split ({len(unknown)} unknown ID(s); "
                              f"expected IDs such as {next(iter(expected), '-')})")
    absent = [row_id for row_id in expected if row_id not in grouped]
    if absent:
        raise PredictionError(f"{len(absent)} of {len(expected)} graphs have no prediction, e.g. {absent[0]}")
    return {row_id: ranking_from_predictions(chosen, _graph_prediction(row_id, *grouped[row_id], n))
            for row_id, n in expected.items()}


# --------------------------------------------------------------------------------------------------
# The evaluator


def _labels_from_files(files: SplitFiles) -> CollectionLabels:
    """The labels of a labelled split (train, valid) packed as the scorer packs a solution's."""
    task = files.collection.task
    runtimes, normalizers = [], []
    for path in files.paths:
        if task.has_normalizers:  # tile files are a few MB: read whole
            graph = load_graph(path, task.name)
            runtimes.append(graph.config_runtime)
            normalizers.append(graph.normalizers)
        else:  # only the runtimes of a layout file: never its config tensor
            runtimes.append(read_config_runtime(path))
    unlabeled = [path for path, r in zip(files.paths, runtimes, strict=True) if not r.size or r.min() <= 0]
    if unlabeled:
        raise FileNotFoundError(
            f"{unlabeled[0]}: runtimes are zeros or missing (a test file?): the {files.split} split of "
            f"{files.collection.name} carries no labels here")
    counts = np.array([r.size for r in runtimes], dtype=np.int64)
    return CollectionLabels(
        collection=files.collection, ids=files.ids,
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        runtimes=np.concatenate(runtimes).astype(np.int64),
        normalizers=np.concatenate(normalizers).astype(np.int64) if task.has_normalizers else None,
        usage=np.full(len(files.paths), PUBLIC, dtype=np.int8))


def _labels_from_solution(path: str | os.PathLike | Solution, files: SplitFiles) -> CollectionLabels:
    solution = path if isinstance(path, Solution) else load_solution(Path(path))
    name = files.collection.name
    if name not in solution.labels:
        raise ValueError(f"{solution.source}: the solution has no {name} rows; it holds "
                         f"{', '.join(solution.labels) or 'none'}")
    labels = solution.labels[name]
    extra = sorted(set(files.ids) - set(labels.ids))
    if extra:
        raise ValueError(f"{solution.source}: no labels for {extra[0]}, a test graph of {files.data_dir} "
                         f"({len(extra)} test graph(s) without labels): is it this tree's solution?")
    return labels


@dataclass(frozen=True)
class _Split:
    files: SplitFiles
    labels: CollectionLabels


class Evaluator:
    """The official metric of one collection's split, OGB-style.

    ``Evaluator(collection, root=None, split="valid", solution=None)``: ``root`` is the data tree (None:
    the embedded competition; anything ``tpugraphs --data`` accepts). The valid and train splits are
    scored against the runtimes in their files; the test split against ``solution`` (a
    ``solution.csv`` or a loaded ``competition.scoring.Solution``; None: the ``private/solution.csv``
    beside the tree, as ``tpugraphs synth`` and ``tpugraphs prepare`` write it).

    ``eval(input_dict)`` returns ``{"score", <metric name>, "graph_scores", "public", "private"}``:
    ``score`` (the same under the metric's name, e.g. ``"kendall_tau"``) is the collection's official
    score, the mean over its scored graphs (Public and Private rows of a solution), as ``tpugraphs score``
    prints it in the collection's ``all`` column; ``graph_scores`` maps each ID to its graph's score;
    ``public`` and ``private`` are the means over those rows (None without such rows; valid and train
    graphs count as Public).
    """

    def __init__(self, collection: str | Collection, root: str | os.PathLike | None = None,
                 split: str = "valid", *, solution: str | os.PathLike | Solution | None = None) -> None:
        self.collection = as_collection(collection)
        self.split = split
        self._root = root
        self._solution = solution
        self._loaded: _Split | None = None

    def __repr__(self) -> str:
        return f"Evaluator({self.collection.name!r}, split={self.split!r})"

    @property
    def metric(self) -> str:
        """The name of the collection's official metric (``competition.collections.Collection.metric``)."""
        return self.collection.metric

    def _load(self) -> _Split:
        """The files and labels, read on first use (constructing an Evaluator touches no file)."""
        if self._loaded is None:
            files = split_files(self._root, self.collection, self.split)
            if files.split == "test":
                source = self._solution if self._solution is not None else files.solution
                if source is None:
                    raise FileNotFoundError(
                        f"{files.data_dir}: the test labels are hidden and no solution.csv lies beside this "
                        "tree (private/solution.csv); pass solution=PATH, or evaluate the valid split")
                labels = _labels_from_solution(source, files)
            else:
                labels = _labels_from_files(files)
            self._loaded = _Split(files, labels)
        return self._loaded

    @property
    def graph_ids(self) -> list[str]:
        """Every ID of the split, in the scorer's order (what ``eval`` expects predictions for)."""
        return list(self._load().labels.ids)

    @property
    def expected_configs(self) -> dict[str, int]:
        """ID -> number of configs of every graph of the split."""
        labels = self._load().labels
        return {row_id: int(n) for row_id, n in zip(labels.ids, labels.config_counts, strict=True)}

    @property
    def expected_input_format(self) -> str:
        return (f"==== Expected input format of {self!r}\n"
                "{'graph_id': graph_id, 'y_pred': y_pred[, 'config_id': config_id]}\n"
                "- flat: graph_id (N,) the ID of each prediction's graph, y_pred (N,) numbers, lower = "
                "faster, config_id (N,) each prediction's config index in its file (optional: file order)\n"
                "- per graph: graph_id (G,) IDs, y_pred G arrays, one number per config in file order\n"
                "Every config of every graph of the split needs one prediction; numpy arrays, lists or "
                "torch tensors.")

    @property
    def expected_output_format(self) -> str:
        return (f"==== Expected output format of {self!r}\n"
                f"{{'score': float, '{self.metric}': float, 'graph_scores': {{ID: float}}, "
                "'public': float | None, 'private': float | None}\n"
                f"- score: the official {self.metric} of {self.collection.name}, the mean over the split's "
                "scored graphs (what `tpugraphs score` prints for it)")

    def rows(self, input_dict: Mapping[str, object]) -> dict[str, np.ndarray]:
        """The submission rows (``{ID: config indices}``) that ``input_dict``'s predictions give."""
        return prediction_rows(self.collection, input_dict, self.expected_configs)

    def eval(self, input_dict: Mapping[str, object]) -> dict[str, object]:
        """Score predictions of every graph of the split (the class docstring says what comes back)."""
        labels = self._load().labels
        rows = self.rows(input_dict)
        checked = validate_rows(((row_id, ";".join(map(str, row.tolist()))) for row_id, row in rows.items()),
                                self.expected_configs)
        if not checked.ok:  # the bridge makes valid rows; this is the validator's word on them
            raise PredictionError(_first_problem(checked, repr(self)))
        report = score_rows(checked.rows, Solution({self.collection.name: labels}))
        name = self.collection.name
        per_graph = graph_scores(labels, checked.rows)
        return {
            "score": report.collections.get(name, 0.0),
            self.metric: report.collections.get(name, 0.0),
            "graph_scores": dict(zip(labels.ids, per_graph.tolist(), strict=True)),
            "public": report.public_collections.get(name),
            "private": report.private_collections.get(name),
        }


# --------------------------------------------------------------------------------------------------
# A Kaggle submission from test predictions


def write_submission(path: str | os.PathLike, predictions: Mapping[str, Mapping[str, object]],
                     root: str | os.PathLike | None = None, *, fill: str | os.PathLike | None = None) -> Path:
    """Write the test split's predictions as a submission the validator accepts, and return its path.

    ``predictions`` maps a collection name to its test predictions in ``Evaluator.eval``'s input form.
    Kaggle wants all five collections: the collections not predicted take their rows from ``fill``,
    an existing submission of the same test graphs (e.g. the kit's ``tpugraphs solve`` output), or,
    with ``fill="default"``, each graph's configs in file order (a placeholder that scores like
    random). Without ``fill`` the file holds only the predicted collections, and only they are
    validated (a partial file, like ``tpugraphs solve --collection``): not a full Kaggle submission.

    The written file is checked by the validator against the test files of ``root`` (None: the
    embedded competition); a refusal raises ValueError with the validator's first problem and leaves
    no file.
    """
    unknown = [name for name in predictions if name not in COLLECTION_NAMES]
    if unknown:
        raise ValueError(f"unknown collection {unknown[0]!r}; expected one of {', '.join(COLLECTION_NAMES)}")
    if not predictions:
        raise ValueError("no predictions: give at least one collection's test predictions")
    data_dir = split_files(root, next(iter(predictions)), "test").data_dir
    chosen = list(COLLECTIONS) if fill is not None else [c for c in COLLECTIONS if c.name in predictions]
    expected = expected_from_data_dir(data_dir, chosen)
    rows: dict[str, np.ndarray] = {}
    for name, input_dict in predictions.items():
        ids = {row_id: n for row_id, n in expected.items() if row_id.startswith(f"{name}:")}
        rows.update(prediction_rows(name, input_dict, ids))
    if fill is not None:
        rows.update(_fill_rows(fill, expected, rows, data_dir))
    path = Path(path)
    write_rows(path, rows)
    result = validate_submission(path, expected)
    if not result.ok:
        path.unlink()
        raise ValueError(_first_problem(result, str(path)))
    return path


def _fill_rows(fill: str | os.PathLike, expected: Mapping[str, int], have: Mapping[str, np.ndarray],
               data_dir: Path) -> dict[str, np.ndarray]:
    """The rows of the IDs not in ``have``: from the submission ``fill``, or file order (``"default"``)."""
    wanted = {row_id: n for row_id, n in expected.items() if row_id not in have}
    if str(fill) == "default":  # as many indices as a row must list (5 for tile, all for layout)
        return {row_id: np.arange(parse_row_id(row_id)[0].required_length(n)) for row_id, n in wanted.items()}
    result = validate_submission(Path(fill), expected)
    if not result.ok:
        raise ValueError(f"fill={str(fill)!r} is not a valid submission for {data_dir}: "
                         f"{_first_problem(result, str(fill))}")
    return {row_id: np.asarray(result.rows[row_id]) for row_id in wanted}


def _first_problem(result: ValidationResult, source_name: str) -> str:
    """The validator's first problem and how many it found, as one line."""
    lines = format_problems(result, source_name=source_name).splitlines()
    return lines[0] if len(lines) <= 2 else f"{lines[0]} (and {len(result.problems) - 1} more)"
