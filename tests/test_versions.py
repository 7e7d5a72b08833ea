"""solutions.versions: a saved version loads only when it is this code's; what changed since is named."""

from __future__ import annotations

import pytest

from solutions.versions import VersionLog

LOG = VersionLog(3, {2: ("layout", "b"), 3: ("layout", "c")})


@pytest.mark.parametrize(("version", "current"), [
    (3, True), (1, False), (2, False), (4, False), (0, False), ("3", False), (True, False), (3.0, False),
    (None, False),
])
def test_only_this_codes_version_is_current(version, current):
    assert LOG.is_current(version) is current


def test_changes_since_lists_the_tasks_changes_oldest_first_or_every_change_for_no_task():
    assert LOG.changes_since("layout", 1) == [(2, "layout", "b"), (3, "layout", "c")]
    assert LOG.changes_since("tile", 1) == []
    assert LOG.changes_since(None, 2) == [(3, "layout", "c")]
    assert LOG.changes_since("layout", "1") == []  # not a whole number: nothing to name
