"""benchmarks/bench_engineered.py runs at the largest xla size with a few configs and prints its table."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from benchmarks import bench_engineered  # noqa: E402


def test_the_benchmark_prints_its_three_cases(capsys):
    assert bench_engineered.main(["--configs", "12", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "43,615 nodes, 2,250 configurable, 12 configs" in out
    rows = [line for line in out.splitlines() if line.startswith("| with") or line.startswith("| without")]
    names = [r.split(" | ")[0] for r in rows]
    assert names == ["| without", "| with, capped at 4,096", "| with, every config"]
    assert rows[0].split(" | ")[3] == "1.0x" and all(" | 12 | " in r for r in rows)
