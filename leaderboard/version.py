"""The scorer version recorded with every score, so a rescore can tell what scored what.

``SCORER_VERSION`` is ``<kit version>+<12 hex digits>``: the digits hash the source of the whole rules
package (``competition.sources.rules_files``: collections, tasks, metric, validator, scorer and what
they import). Any edit to those files changes it, even without a version bump; a rescore then records
the new value on each submission.
"""

from __future__ import annotations

import hashlib

from competition.version import kit_version


def scorer_version() -> str:
    """``<kit version>+<hash of the rules package's source>``."""
    from competition.sources import PACKAGE_DIR, rules_files

    digest = hashlib.sha256()
    for relative in rules_files():
        digest.update(relative.as_posix().encode())
        digest.update((PACKAGE_DIR / relative).read_bytes())
    return f"{kit_version()}+{digest.hexdigest()[:12]}"


SCORER_VERSION = scorer_version()
