"""The kit's real-data fixtures.

- The two upstream protos ship with the kit (``competition.data.realdata``, Apache-2.0), so the tests
  that read them run on every clone.
- The partial real Kaggle tree (``KAGGLE_TREE``) is not redistributable: tests read it from
  ``../shared/realdata/kaggle`` beside the project and skip, with the reason, where it is absent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from competition.data.realdata import LAYOUT_PROTO, TILE_PROTO

SHARED_REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
KAGGLE_TREE = SHARED_REALDATA / "kaggle"
KAGGLE_TREE_ABSENT = (
    "needs real TpuGraphs graphs from the Kaggle download (a Kaggle-layout tree: npz_all/npz/..., not "
    f"redistributable) at ../shared/realdata/kaggle beside the clone ({KAGGLE_TREE}); runs where that "
    "folder exists")

__all__ = ["KAGGLE_TREE", "LAYOUT_PROTO", "TILE_PROTO", "needs_kaggle_tree", "needs_realdata"]


def needs_realdata(*protos: Path) -> Callable:
    """A decorator marking a test ``realdata``; it fails loudly if a shipped proto went missing."""
    missing = [proto.name for proto in protos or (LAYOUT_PROTO, TILE_PROTO) if not proto.is_file()]
    if missing:
        raise FileNotFoundError(f"the kit's shipped real protos are missing: {', '.join(missing)} "
                                f"(competition/data/realdata)")

    def mark(test: Callable) -> Callable:
        return pytest.mark.realdata(test)

    return mark


def needs_kaggle_tree(test: Callable) -> Callable:
    """Mark a test ``realdata`` and skip it where the real Kaggle tree is absent (a clone outside this
    workplace)."""
    skip = pytest.mark.skipif(not KAGGLE_TREE.is_dir(), reason=KAGGLE_TREE_ABSENT)
    return pytest.mark.realdata(skip(test))
