"""The five collections of the competition, kept as data.

Everything that needs to know a collection's name, where its files live, how a submission row is
formed or which metric scores it asks this module (the OGB ``Evaluator`` idea: one table, many users).

>>> COLLECTION_BY_NAME["layout:nlp:random"].npz_subdir
'npz_all/npz/layout/nlp/random'
>>> parse_row_id("tile:xla:d6f5f54247bd1e58a10b9e7062c636ab")
(Collection(name='tile:xla'), 'd6f5f54247bd1e58a10b9e7062c636ab')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Task = Literal["tile", "layout"]
Split = Literal["train", "valid", "test"]
SPLITS: tuple[Split, ...] = ("train", "valid", "test")

#: How many indices of a tile row count toward the score.
TILE_TOP_K = 5


@dataclass(frozen=True)
class Collection:
    """One scored collection, e.g. ``tile:xla`` or ``layout:nlp:random``."""

    name: str
    task: Task = field(repr=False)
    source: str = field(repr=False)  # "xla" or "nlp"
    search: str | None = field(repr=False)  # "default" / "random" for layout, None for tile
    metric: str = field(repr=False)  # key into competition.metrics
    row_rule: str = field(repr=False)  # readable description of a valid TopConfigs cell

    @property
    def subpath(self) -> str:
        """Folder of this collection under the ``npz/`` folder, e.g. ``layout/nlp/random``."""
        parts = [self.task, self.source] + ([self.search] if self.search else [])
        return "/".join(parts)

    @property
    def npz_subdir(self) -> str:
        """Folder of this collection under the Kaggle download root."""
        return f"npz_all/npz/{self.subpath}"

    @property
    def is_tile(self) -> bool:
        return self.task == "tile"

    def split_dir(self, data_dir: str | Path, split: Split) -> Path:
        """Folder of one split, given a data directory in any accepted layout (see find_npz_root)."""
        return find_npz_root(data_dir) / self.subpath / split

    def row_id(self, stem: str) -> str:
        """Submission ID of the graph stored as ``<stem>.npz``."""
        return f"{self.name}:{stem}"

    def required_length(self, n_configs: int) -> int:
        """Smallest number of indices a valid row lists for a graph with ``n_configs`` configs."""
        return min(TILE_TOP_K, n_configs) if self.is_tile else n_configs


_TILE_RULE = (
    "the indices of the 5 fastest configs, fastest first, separated by ';' "
    "(fewer only when the graph has fewer than 5 configs; indices after the 5th are ignored)"
)
_LAYOUT_RULE = "a permutation of all config indices 0..n-1, fastest first, separated by ';'"

COLLECTIONS: tuple[Collection, ...] = (
    Collection("tile:xla", "tile", "xla", None, "tile_slowdown", _TILE_RULE),
    Collection("layout:xla:default", "layout", "xla", "default", "kendall_tau", _LAYOUT_RULE),
    Collection("layout:xla:random", "layout", "xla", "random", "kendall_tau", _LAYOUT_RULE),
    Collection("layout:nlp:default", "layout", "nlp", "default", "kendall_tau", _LAYOUT_RULE),
    Collection("layout:nlp:random", "layout", "nlp", "random", "kendall_tau", _LAYOUT_RULE),
)
COLLECTION_BY_NAME: dict[str, Collection] = {c.name: c for c in COLLECTIONS}
COLLECTION_NAMES: tuple[str, ...] = tuple(COLLECTION_BY_NAME)

SUBMISSION_HEADER = ("ID", "TopConfigs")
SOLUTION_COLUMNS = ("ID", "Runtimes", "Normalizers", "Usage")
USAGES = ("Public", "Private", "Ignored")


def get_collection(name: str) -> Collection:
    """The collection called ``name``; a ValueError lists the valid names otherwise."""
    try:
        return COLLECTION_BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"unknown collection {name!r}; expected one of {', '.join(COLLECTION_NAMES)}"
        ) from None


def parse_row_id(row_id: str) -> tuple[Collection, str]:
    """Split a submission ID into its collection and file stem; ValueError if it is not one."""
    prefix, sep, stem = row_id.rpartition(":")
    if not sep or prefix not in COLLECTION_BY_NAME or not stem:
        raise ValueError(
            f"ID {row_id!r} is not '<collection>:<file stem>' with a collection among "
            f"{', '.join(COLLECTION_NAMES)}"
        )
    return COLLECTION_BY_NAME[prefix], stem


def find_npz_root(data_dir: str | Path) -> Path:
    """The ``npz/`` folder (holding ``tile/`` and ``layout/``) of any accepted data directory.

    Accepted: the Kaggle download root (``predict-ai-model-runtime/``), its ``npz_all/`` folder, the
    ``npz/`` folder that the upstream mirror's tar files unpack to, or the folder holding that
    ``npz/``. Anything else is returned as ``data_dir/npz_all/npz`` so that error messages name the
    path the kit expected.
    """
    root = Path(data_dir)
    for candidate in (root / "npz_all" / "npz", root / "npz", root):
        if (candidate / "tile").is_dir() or (candidate / "layout").is_dir():
            return candidate
    return root / "npz_all" / "npz"
