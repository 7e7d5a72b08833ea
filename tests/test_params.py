"""``tpugraphs solve --method M --list-params``: every setting of every method, with a meaning."""

from __future__ import annotations

import dataclasses

import pytest

from competition.cli import main
from solutions.methods.registry import METHODS
from solutions.settings.params import describe
from solutions.solve.runner import describe_params


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_setting_is_listed_with_its_default_and_a_meaning(method):
    settings = METHODS[method].load_settings()
    if settings is None:
        assert "has no settings" in describe_params(method)
        return
    params = describe(settings.settings_class)
    assert params, method
    assert [p.name for p in params if not p.meaning] == [], "write a comment with every setting"
    text = describe_params(method)
    assert all(p.name in text and p.meaning in text for p in params)


def test_the_listed_defaults_are_the_ones_a_method_uses():
    from solutions.methods.gbdt.settings import GBDTSettings
    from solutions.methods.gnn.settings import GNNConfig

    assert {p.name: p.default for p in describe(GNNConfig)} == dataclasses.asdict(GNNConfig())
    assert {p.name: p.default for p in describe(GBDTSettings)} == dataclasses.asdict(GBDTSettings())


def test_list_params_needs_no_data_and_other_calls_still_do(capsys):
    assert main(["solve", "--method", "gbdt", "--list-params"]) == 0
    out = capsys.readouterr().out
    assert "num_leaves" in out and "tile:xla: linear_gain=false, ndcg_at=5, query_size=none" in out
    assert main(["solve", "--method", "nope", "--list-params"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert main(["solve", "--method", "gbdt"]) == 2
    assert "required: --data, --out" in capsys.readouterr().err


def test_the_gnn_lists_at_most_31_settings():
    # 30 at 1.0 (docs/journal/2026-11-28-settings-1.0.md); layout_graphs_per_step, the layout batch size
    # beside tile_graphs_per_step, joined in 1.1
    from solutions.methods.gnn.settings import GNNConfig

    assert len(GNNConfig.field_names()) <= 31


@pytest.mark.parametrize("method", ["gnn", "gbdt"])
def test_every_setting_has_a_row_with_its_reason_in_docs_defaults(method):
    """docs/defaults.md gives each listed setting one row (name, default, reason, evidence)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "defaults.md").read_text(encoding="utf-8")
    section = text.split(f"## {method} (", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = [row.split("`")[1] for row in rows]
    assert named == [p.name for p in describe(METHODS[method].load_settings().settings_class)]
    assert all(row.count("|") == 5 and "](" in row for row in rows)
