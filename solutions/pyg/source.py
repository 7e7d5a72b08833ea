"""Which files a (root, collection, split) names: the one check behind the dataset and the evaluator.

numpy-free and torch-free: the evaluator reads it without importing torch. Every bad argument is one
line naming what was given and what is accepted (``ValueError`` for an unknown collection or split,
``FileNotFoundError`` for a folder or a split that is not there).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from competition.collections import SPLITS, Collection, Split, get_collection
from competition.data.graphs import list_split
from competition.data.locate import find_data

__all__ = ["SplitFiles", "check_split", "split_files"]


def check_split(split: object) -> Split:
    """``split`` if it is one of train, valid, test; ValueError naming it otherwise."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split  # type: ignore[return-value]


def as_collection(collection: str | Collection) -> Collection:
    """A collection from its name (``"layout:xla:random"``) or itself; ValueError listing the names."""
    if isinstance(collection, Collection):
        return collection
    if not isinstance(collection, str):
        raise ValueError(f"a collection is a name such as 'layout:xla:random', got {collection!r}")
    return get_collection(collection)


@dataclass(frozen=True)
class SplitFiles:
    """The npz files of one split of one collection, and where the hidden test labels are (if anywhere)."""

    data_dir: Path  # the Kaggle-shaped tree (``public/`` of a made competition)
    solution: Path | None  # ``private/solution.csv`` beside it (a made competition), else None
    collection: Collection
    split: Split
    paths: tuple[Path, ...]  # sorted by stem, as ``competition.data.graphs.list_split`` gives them

    @property
    def ids(self) -> list[str]:
        """The submission ID of each file (``<collection>:<stem>``), in file order."""
        return [self.collection.row_id(path.stem) for path in self.paths]


def split_files(root: str | os.PathLike | None, collection: str | Collection, split: str) -> SplitFiles:
    """Resolve ``root`` (None: the embedded competition, built on first use), check the names, list the
    files. ``root`` is anything ``tpugraphs --data`` accepts: the Kaggle download, its ``npz_all/`` or
    ``npz/`` folder, or the output folder of ``tpugraphs synth`` / ``tpugraphs prepare``."""
    chosen = as_collection(collection)
    checked = check_split(split)
    location = find_data(root, progress=False)
    paths = tuple(list_split(location.public_dir, chosen, checked))
    if not paths:
        raise FileNotFoundError(f"{location.public_dir}: the {chosen.name} {checked} folder holds no npz "
                                "files")
    return SplitFiles(location.public_dir, location.solution_path, chosen, checked, paths)
