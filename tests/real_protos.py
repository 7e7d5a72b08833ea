"""The kit's real-data fixtures: the two real protos in ``../shared/realdata`` and how tests skip without them.

Tests read the protos where they are (never copied into the repository) and are skipped, with the
reason, where they are absent: a clone outside this workplace has no ``../shared``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
LAYOUT_PROTO = REALDATA / "module_tuning_data_layout.pb"
TILE_PROTO = REALDATA / "op_tuning_data.pb"


def needs_realdata(*protos: Path) -> Callable:
    """A decorator marking a test ``realdata`` and skipping it when one of ``protos`` (default: both) is absent."""
    missing = [proto.name for proto in protos or (LAYOUT_PROTO, TILE_PROTO) if not proto.is_file()]
    skip = pytest.mark.skipif(bool(missing), reason=f"real protos not found in {REALDATA}: {', '.join(missing)} "
                                                    "(a fresh clone has no ../shared/realdata)")

    def mark(test: Callable) -> Callable:
        return pytest.mark.realdata(skip(test))

    return mark
