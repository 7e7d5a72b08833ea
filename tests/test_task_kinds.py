"""A new task kind needs only what docs/architecture.md names for it ("Adding a task kind").

That is a ``Task`` subclass and instance (``competition/tasks.py``), its graph class
(``competition/data/graphs.py``), a row of ``COLLECTIONS`` (``competition/collections.py``) and its
adapter (``solutions/kinds/``). A toy third kind, ``pick``, is written from ``Task`` itself, not from the
tile or layout task: each run sets two 3-d settings (configs of shape (c, 2, 3)), and a row names the
one config predicted fastest, scored by that config's slowdown. It is declared the way those files
would hold it, in a fresh interpreter (the collections table is read when the kit is imported). Then
the kit's own loader, validator, scorer and ``solve --method heuristic``, ``--method gbdt`` and
``--method gnn`` (each trained, saved, loaded again and predicting) run on a toy collection of it, with
no other file changed: the methods ask the task and the adapter for what differs, never its name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What the three files would hold, then the kit used as it is. Argument: the folder to work in.
SCRIPT = r'''
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

import competition.collections as collections
import competition.tasks as tasks

# competition/tasks.py: the kind, its rows, its labels and its files' schema.
from competition.errors import RowError
from competition.metrics.packing import pack_top_configs
from competition.metrics.tile import prepare_tile_labels, score_tile_labels, tile_slowdown_score

@dataclass(frozen=True, eq=False, repr=False)
class PickTask(tasks.Task):
    """A row names the one config predicted fastest; scored by that config's slowdown."""

    @property
    def top_k(self):
        return 1

    def required_length(self, n_configs):
        return min(1, n_configs)

    def max_length(self, n_configs):
        return None

    def expectation(self, n_configs):
        return (f"at least {self.required_length(n_configs)} distinct config indices out of "
                f"0..{n_configs - 1}, fastest first, separated by ';'")

    def implied_config_count(self, listed, indices):
        return max([listed, *(i + 1 for i in indices)])

    def row_from_predictions(self, predicted_runtime):
        return super().row_from_predictions(predicted_runtime)[:1]

    def scored_part(self, row):
        return row[:1]

    def short_row_error(self, indices, n_configs):
        return RowError("too-short", f"pick row lists no config (the graph has {n_configs})")

    def check_normalizers(self, runtimes, normalizers, where, row_id):
        ok = normalizers.size == runtimes.size and normalizers.min() > 0
        return None if ok else f"{where}: pick row {row_id} needs one positive normalizer per runtime"

    def ranking_target(self, runtimes, normalizers):
        return np.asarray(runtimes) / np.asarray(normalizers)

    def prepare_labels(self, runtimes, normalizers, offsets):
        return prepare_tile_labels(runtimes, normalizers, offsets)

    def score_graphs(self, rows, prepared):
        return score_tile_labels(pack_top_configs(rows, k=1), prepared, k=1)

    def score_graph(self, row, runtimes, normalizers):
        return tile_slowdown_score(np.asarray(row)[:1], runtimes, normalizers, k=1)

PICK = PickTask(
    name="pick", metric=tasks.TILE_SLOWDOWN, config_key="pick_config_feat",
    npz_spec={**tasks._GRAPH_SPEC, "pick_config_feat": (np.dtype(np.float32), ("c", 2, 3)),
              **tasks._RUNTIME_SPEC, "config_runtime_normalizers": (np.dtype(np.int64), ("c",))},
    has_normalizers=True, config_per_node=False,
)
tasks.TASKS[PICK.name] = PICK

# competition/collections.py: one row.
TOY = collections.Collection("pick:xla", "pick", "xla", None)
collections.COLLECTIONS = (*collections.COLLECTIONS, TOY)
collections.COLLECTION_BY_NAME[TOY.name] = TOY
collections.COLLECTION_NAMES = tuple(collections.COLLECTION_BY_NAME)

# competition/data/graphs.py: its graph class.
from competition.data import graphs

@dataclass
class PickGraph(graphs._GraphBase):
    """A toy graph: one 4-d config per run, with normalizers."""

    task: ClassVar[tasks.Task] = PICK
    pick_config_feat: np.ndarray  # (c, 2, 3) float32
    config_runtime_normalizers: np.ndarray  # (c,) int64

    @property
    def normalizers(self) -> np.ndarray:
        return self.config_runtime_normalizers

# solutions/kinds/pick.py: its adapter. The configs are one vector per graph once the two settings are
# laid side by side; the defaults of ConfigsPerGraph do the rest (signed-log columns, no heuristic rule).
from solutions.kinds import ConfigsPerGraph, register
from solutions.features.log_scale import signed_log1p

class PickKind(ConfigsPerGraph):
    def config_width(self):
        return 6

    def config_keys(self, graph):
        return np.asarray(graph.configs).reshape(len(graph.configs), -1)

    def config_vectors(self, graph):
        return signed_log1p(self.config_keys(graph))

    def config_features(self, graph, configs=None):
        keys = self.config_keys(graph)
        return signed_log1p((keys if configs is None else keys[configs]).astype(np.float64))

register(PickKind(PICK))

# The kit, untouched.
from competition.data.graphs import expected_from_data_dir, graph_kind, load_graph, save_graph
from competition.scoring import load_solution, score_submission
from competition.submission import validate_submission
from solutions.solve.runner import solve

work = Path(sys.argv[1])
public = work / "public"
rng = np.random.default_rng(0)

def toy_graph(runtimes):
    c = len(runtimes)
    return PickGraph(
        node_feat=rng.random((3, tasks.NODE_FEAT_DIM), dtype=np.float32),
        node_opcode=np.array([1, 2, 3], np.uint8), edge_index=np.array([[1, 0], [2, 1]], np.int64),
        config_runtime=np.asarray(runtimes, np.int64),
        pick_config_feat=rng.random((c, 2, 3), dtype=np.float32),
        config_runtime_normalizers=np.ones(c, np.int64))

for split in ("train", "valid"):
    save_graph(toy_graph([30, 10, 20]), public / TOY.npz_subdir / split / "a.npz")
# The test graphs' runtimes are hidden (zeros), as released; the labels go to the solution file.
labels = {"g1": [30, 10, 20], "g2": [5, 10]}
for stem, runtimes in labels.items():
    save_graph(toy_graph([0] * len(runtimes)), public / TOY.npz_subdir / "test" / f"{stem}.npz")
solution = work / "solution.csv"
solution.write_text("ID,Runtimes,Normalizers,Usage\n" + "".join(
    f"{TOY.row_id(stem)},{';'.join(map(str, r))},{';'.join('1' * len(r))},Public\n"
    for stem, r in labels.items()))

path = public / TOY.npz_subdir / "test" / "g1.npz"
out = work / "sub.csv"
report = solve(public, "heuristic", out, collections=[TOY.name])
checked = validate_submission(out, expected_from_data_dir(public, [TOY]))
scored = score_submission(out, load_solution(solution))
bad = work / "bad.csv"
bad.write_text(f"ID,TopConfigs\n{TOY.row_id('g1')},\n{TOY.row_id('g2')},0\n")
refused = validate_submission(bad, expected_from_data_dir(public, [TOY]))
learned = {}
for method, params in (("gbdt", {"num_boost_round": 5, "min_boost_round": 1}),
                       ("gnn", {"tile_epochs": 2, "hidden": 8, "layers": 1})):
    written = work / f"{method}.csv"
    trained = solve(public, method, written, collections=[TOY.name], method_params=params)
    again = solve(public, method, work / f"{method}-again.csv", collections=[TOY.name],
                  model_dir=work / f"{method}.models", predict_only=True)
    learned[method] = {
        "valid": validate_submission(written, expected_from_data_dir(public, [TOY])).ok,
        "same_after_load": written.read_text() == (work / f"{method}-again.csv").read_text(),
        "validation": trained.collections[0].validation_score,
        "loaded_validation": again.collections[0].validation_score,
        "score": score_submission(written, load_solution(solution)).collections[TOY.name],
    }
print(json.dumps({
    "learned": learned,
    "kind": graph_kind(path), "graph": type(load_graph(path)).__name__,
    "rows": out.read_text().splitlines(), "valid": checked.ok,
    "validation": report.collections[0].validation_score, "metric": report.collections[0].metric,
    "score": scored.collections[TOY.name],
    "refused": [p.message for p in refused.problems],
}))
'''


def test_a_toy_third_task_kind_is_validated_scored_and_solved_by_the_kit_unchanged(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["kind"], result["graph"]) == ("pick", "PickGraph")
    # The heuristic has no rule for the kind: every config costs the same, so config 0 is named.
    assert result["rows"] == ["ID,TopConfigs", "pick:xla:g1,0", "pick:xla:g2,0"]
    assert result["valid"] is True and result["metric"] == "tile_slowdown"
    assert result["validation"] == 2 - 30 / 10  # the valid graph's config 0 is 3x the fastest
    assert result["score"] == ((2 - 30 / 10) + (2 - 5 / 5)) / 2  # by hand from the labels
    # An empty row is refused with the kind's own rule (at least k = 1 index of the graph's 3).
    assert result["refused"] == ["TopConfigs is empty; expected at least 1 distinct config indices "
                                 "out of 0..2, fastest first, separated by ';'"]
    # gbdt and the gnn train on the kind's own config columns, save, load and predict the same rows.
    for method in ("gbdt", "gnn"):
        facts = result["learned"][method]
        assert facts["valid"] is True and facts["same_after_load"] is True, method
        assert facts["validation"] == facts["loaded_validation"], method
        assert -1.0 <= facts["validation"] <= 1.0 and -1.0 <= facts["score"] <= 1.0, method



def test_a_kind_with_its_own_config_columns_gets_them_as_features_in_process():
    """The adapter of a kind that is neither layout rows nor tile bounds (``ConfigsPerGraph``): its config
    columns, signed-log scaled, one name per column (the toy kind above runs it in a child process)."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    import numpy as np

    import competition.tasks as tasks
    from solutions.features.log_scale import signed_log1p
    from solutions.kinds import ConfigsPerGraph, KindError, kind_of
    from solutions.kinds.layout import LAYOUT_KIND
    from solutions.kinds.tile import TILE_KIND

    @dataclass(frozen=True, eq=False, repr=False)
    class WideTask(tasks.TileTask):
        """Not registered: the adapter is built from the task object alone."""

    wide = WideTask(name="wide", metric=tasks.TILE_SLOWDOWN, config_key="wide_config_feat",
                    npz_spec={**tasks._GRAPH_SPEC, "wide_config_feat": (np.dtype(np.float32), ("c", 3)),
                              **tasks._RUNTIME_SPEC},
                    has_normalizers=False, config_per_node=False, k=1)
    kind = ConfigsPerGraph(wide)
    assert "wide" in kind.configs and kind.heuristic_cost(None) is None
    assert kind.config_feature_names() == ["log_config_0", "log_config_1", "log_config_2"]
    configs = np.array([[0.0, 9.0, -99.0], [1.0, 2.0, 3.0]], dtype=np.float32)
    graph = SimpleNamespace(configs=configs)
    np.testing.assert_array_equal(kind.config_features(graph, None), signed_log1p(configs.astype(np.float64)))
    np.testing.assert_array_equal(kind.config_features(graph, np.array([1])),
                                  signed_log1p(configs[[1]].astype(np.float64)))
    assert kind_of("tile") is TILE_KIND and kind_of(tasks.LAYOUT) is LAYOUT_KIND
    # A kind without an adapter is refused by name, with the kinds that have one.
    try:
        kind_of(wide)
    except KindError as exc:
        assert "'wide'" in str(exc) and "layout, tile" in str(exc)
    else:
        raise AssertionError("a kind without an adapter was accepted")
