"""The scorer version recorded with every score, so a rescore can tell what scored what.

``SCORER_VERSION`` is ``<kit version>+<12 hex digits>``: the digits hash the source of the modules
that decide a score (collections, metrics, submission validator, scorer). Any edit to those files
changes it, even without a version bump; a rescore then records the new value on each submission.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

SCORING_MODULES = ("collections.py", "metrics.py", "submission.py", "scoring.py")


def _kit_version() -> str:
    try:
        return metadata.version("tpugraphs-kit")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def scorer_version() -> str:
    """``<kit version>+<hash of the scoring modules' source>``."""
    import competition

    package_dir = Path(competition.__file__).resolve().parent
    digest = hashlib.sha256()
    for name in SCORING_MODULES:
        path = package_dir / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return f"{_kit_version()}+{digest.hexdigest()[:12]}"


SCORER_VERSION = scorer_version()
