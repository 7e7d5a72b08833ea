"""``tpugraphs solve --method M --list-params``: every setting of every method, with a meaning."""

from __future__ import annotations

import dataclasses

import pytest

from competition.cli import main
from solutions.method import METHODS
from solutions.params import describe
from solutions.runner import describe_params


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_setting_is_listed_with_its_default_and_a_meaning(method):
    cls = METHODS[method].load_class()
    if not hasattr(cls, "param_table"):
        assert "has no settings" in describe_params(method)
        return
    params, _ = cls.param_table()
    assert params, method
    assert [p.name for p in params if not p.meaning] == [], "write a comment with every setting"
    text = describe_params(method)
    assert all(p.name in text and p.meaning in text for p in params)


def test_the_listed_defaults_are_the_ones_a_method_uses():
    from solutions.gbdt.settings import GBDTSettings
    from solutions.gnn.train import GNNConfig

    assert {p.name: p.default for p in describe(GNNConfig)} == dataclasses.asdict(GNNConfig())
    assert {p.name: p.default for p in describe(GBDTSettings)} == dataclasses.asdict(GBDTSettings())


def test_list_params_needs_no_data_and_other_calls_still_do(capsys):
    assert main(["solve", "--method", "gbdt", "--list-params"]) == 0
    out = capsys.readouterr().out
    assert "num_leaves" in out and "tile:xla starts from other defaults" in out
    assert main(["solve", "--method", "nope", "--list-params"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert main(["solve", "--method", "gbdt"]) == 2
    assert "required: --data, --out" in capsys.readouterr().err
