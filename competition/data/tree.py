"""The Kaggle download tree: where each collection's files are, and the folder a made competition fills.

Pure path rules with no import beyond the collections table, so every data module (the generator
included) can use them without importing the code that finds data (``competition.data.locate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from competition.collections import Collection, Split


@dataclass
class CompetitionFolder:
    """A competition as ``tpugraphs synth`` and ``tpugraphs prepare`` write it: ``public/`` + ``private/``."""

    out_dir: Path

    @staticmethod
    def counts_table(graphs: dict[str, dict[str, int]], column: str, values: dict[str, int],
                     value_format: str) -> str:
        """Graphs per collection and split, and one more count per collection (``column``), as text;
        ``value_format`` formats that count (e.g. ``"9d"``, ``"13,d"``: its width is the column's)."""
        width = int(value_format.rstrip("d,"))
        lines = [f"{'collection':20s} {'train':>6s} {'valid':>6s} {'test':>6s} {column:>{width}s}"]
        for name, splits in graphs.items():
            lines.append(f"{name:20s} {splits['train']:6d} {splits['valid']:6d} {splits['test']:6d} "
                         f"{values[name]:{value_format}}")
        return "\n".join(lines)

    @property
    def public_dir(self) -> Path:
        return self.out_dir / "public"

    @property
    def private_dir(self) -> Path:
        return self.out_dir / "private"

    @property
    def sample_submission(self) -> Path:
        return self.public_dir / "sample_submission.csv"

    @property
    def solution(self) -> Path:
        return self.private_dir / "solution.csv"


def find_npz_root(data_dir: str | Path) -> Path:
    """The ``npz/`` folder (holding ``tile/`` and ``layout/``) of any accepted data directory.

    Accepted: the Kaggle download root (``predict-ai-model-runtime/``), its ``npz_all/`` folder, the
    ``npz/`` folder that the upstream mirror's tar files unpack to, or the folder holding that
    ``npz/``. Anything else is returned as ``data_dir/npz_all/npz`` so that error messages name the
    path the kit expected.
    """
    root = Path(data_dir)
    for candidate in (root / "npz_all" / "npz", root / "npz", root):
        if _holds_a_task_folder(candidate):
            return candidate
    return root / "npz_all" / "npz"


def _holds_a_task_folder(folder: Path) -> bool:
    """Whether ``folder`` has the folder of some task kind (``tile/``, ``layout/``: the collections' first
    part)."""
    from competition import collections  # the table as it is now, with every collection's task

    return any((folder / name).is_dir()
               for name in dict.fromkeys(c.task_name for c in collections.COLLECTIONS))


def split_dir(data_dir: str | Path, collection: Collection, split: Split) -> Path:
    """Folder of one split of a collection, given a data directory in any accepted layout."""
    return find_npz_root(data_dir) / collection.subpath / split


def has_competition_data(folder: Path) -> bool:
    """Whether ``folder`` holds the npz tree in a layout the kit accepts."""
    return _holds_a_task_folder(find_npz_root(folder))
