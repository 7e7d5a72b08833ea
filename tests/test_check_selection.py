"""``make check``'s selection (``pytest --check``, the root conftest.py) names files that exist."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_left_out_of_make_check_exists_and_says_why():
    spec = importlib.util.spec_from_file_location("_root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = sorted(path for path in module.NOT_IN_CHECK if not (ROOT / path).exists())
    assert missing == [], f"conftest.py's NOT_IN_CHECK names what is not there: {missing}"
    assert all(reason.strip() for reason in module.NOT_IN_CHECK.values())
