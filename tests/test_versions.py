"""solutions.versions: which saved versions a per-task computation still accepts, and what changed since."""

from __future__ import annotations

import pytest

from solutions.versions import VersionLog

LOG = VersionLog(3, {2: ("layout", "b"), 3: ("layout", "c")}, tasks=("tile", "layout"))


@pytest.mark.parametrize(("task", "version", "same"), [
    ("tile", 1, True), ("tile", 3, True), ("layout", 3, True), ("layout", 2, False),
    ("tile", 4, False), ("tile", 0, False), ("tile", "3", False), ("tile", True, False), ("tile", 3.0, False),
    (None, 3, True), (None, 2, False), ("mystery", 3, True), ("mystery", 1, False),
])
def test_computes_the_same_only_from_the_tasks_last_change_to_the_current_version(task, version, same):
    assert LOG.computes_the_same(task, version) is same


def test_changes_since_lists_the_tasks_changes_oldest_first_or_every_change_for_no_task():
    assert LOG.changes_since("layout", 1) == [(2, "layout", "b"), (3, "layout", "c")]
    assert LOG.changes_since("tile", 1) == []
    assert LOG.changes_since(None, 2) == [(3, "layout", "c")]
    assert LOG.changes_since("layout", "1") == []  # not a whole number: nothing to name
