"""``benchmarks/bench_attribution.py``: which settings move a real graph's runtime and which ones each
method charges: a known additive runtime, and the shipped proto (the heuristic needs no training, so the
tiny competition is only built, never learned from)."""

from __future__ import annotations

import json

import numpy as np
from graph_builders import layout_graph_from_edges
from real_protos import needs_realdata

from benchmarks import bench_attribution as ba


def test_group_effects_recover_a_known_additive_runtime():
    """Three configurable nodes, two of them tied; a runtime made of known per-group terms comes back
    exactly, and a target that ignores a group gives it no effect."""
    graph = layout_graph_from_edges(6, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4)], [1, 2, 3], num_configs=40)
    rng = np.random.default_rng(0)
    rows = np.full((40, 3, 18), -1, dtype=np.float32)
    a, b = rng.integers(0, 2, 40), rng.integers(0, 3, 40)
    rows[:, 0, 0] = rows[:, 1, 0] = a  # nodes 0 and 1 tied: the same row in every config
    rows[:, 2, 0] = b
    graph.node_config_feat[:] = rows
    truth = 0.5 * a + np.array([0.0, 0.2, 1.0])[b]
    effects, summary = ba.attribute(graph, {"truth": truth, "blind": 0.5 * a})
    by_node = {e.node: e for e in effects}
    assert set(by_node) == {0, 2} and by_node[0].members == 2
    spread = truth.std()
    assert np.isclose(by_node[0].effects["truth"] * spread, 0.5)
    assert np.isclose(by_node[2].effects["truth"] * spread, 1.0)
    assert by_node[2].effects["blind"] < 1e-9
    assert summary["truth"]["r2"] > 0.999 and summary["blind"]["r2"] > 0.999


@needs_realdata()
def test_smoke_run_on_the_shipped_proto(tmp_path, capsys):
    out = tmp_path / "attribution.json"
    argv = ["--real", str(tmp_path / "no-kaggle-tree"), "--scale", "tiny", "--synth-root",
            str(tmp_path / "synth"), "--methods", "heuristic", "--out", str(out)]
    assert ba.main(argv) == 0
    assert "#### layout:xla:default:proto/module_tuning_data_layout" in capsys.readouterr().out
    [proto] = json.loads(out.read_text())["graphs"].values()
    groups = {tuple(g["output_shape"]): g for g in proto["groups"]}
    # the real runtimes: the lone [3, 3, 3, 192, 64] weight gradient moves them most, twice the 15 tied
    # [.., 64, 128] ones; the activations' and reshapes' settings move nothing (docs/synthetic-data.md)
    lone, tied = groups[(3, 3, 3, 192, 64)], groups[(3, 3, 3, 64, 128)]
    assert lone["effects"]["truth"] > 1.5 * tied["effects"]["truth"] and tied["members"] == 15
    for shape in ((2, 96, 96, 96, 32), (96, 96, 96)):
        assert groups[shape]["effects"]["truth"] < 0.01
    # the heuristic's rule 3 charges what the truth charges, in about its proportions
    assert proto["summary"]["truth"]["r2"] > 0.999 and proto["summary"]["heuristic"]["corr_with_truth"] > 0.9


def test_unknown_method_is_a_usage_error(capsys):
    assert ba.main(["--methods", "magic", "--no-protos", "--real", "/nonexistent"]) == 2
    assert "unknown method(s) magic" in capsys.readouterr().err
