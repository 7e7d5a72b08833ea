"""The kit's version, as the installed package records it (pyproject.toml's ``version``).

After the version in pyproject.toml changes, reinstall (``pip install -e .``) so the package metadata,
and so this, follow it.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "tpugraphs-kit"


def kit_version() -> str:
    """``1.0.0`` and so on; ``0+unknown`` in a source tree that was never installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
