"""benchmarks/bench_step_memory.py on the tiny competition: the traced peak grows with the step's rows,
and a tile collection is refused in one line."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from benchmarks import bench_step_memory  # noqa: E402
from benchmarks.bench_gnn_speed import load_examples  # noqa: E402
from competition.collections import get_collection  # noqa: E402
from solutions.methods.gnn.settings import SETTINGS  # noqa: E402


def test_a_step_of_several_graphs_holds_more_tensor_bytes_than_one(tiny_competition):
    collection = get_collection("layout:xla:default")
    config = SETTINGS.resolve(collection, {"hidden": 16, "layers": 2})
    examples = load_examples(tiny_competition / "public", collection.name, config, limit=3)
    assert len(examples) == 3
    rows = bench_step_memory.measure(examples, config, collection.task, graphs_per_step=3)
    assert [r["graphs"] for r in rows] == [1, 1, 3]
    assert rows[0]["configurable_nodes"] >= rows[1]["configurable_nodes"]  # the largest first
    assert all(r["peak_bytes"] > 0 for r in rows)
    assert rows[2]["rows"] > rows[0]["rows"] and rows[2]["peak_bytes"] > rows[0]["peak_bytes"]
    assert bench_step_memory.table(rows).count("\n") == 4


def test_a_tile_collection_is_refused_in_one_line(tiny_competition, capsys):
    with pytest.raises(SystemExit) as stopped:
        bench_step_memory.main(["--data", str(tiny_competition / "public"), "--collection", "tile:xla"])
    assert stopped.value.code == 2
    assert "a layout collection is needed" in capsys.readouterr().err
