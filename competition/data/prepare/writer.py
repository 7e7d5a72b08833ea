"""Writing the prepared competition: the train and valid graphs copied byte for byte, the held-out
graphs with their labels zeroed and their configs shuffled (and sampled, for layout), the sample
submission, the solution and the ``split.json`` audit; what was written goes into ``PrepareSummary``."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import SOLUTION_COLUMNS, SUBMISSION_HEADER, Collection
from competition.data.graphs import load_graph
from competition.data.prepare.plan import COLLECTION_KEY, CONFIGS_STREAM, SourceGraph, stream
from competition.data.prepare.source import check_labels, read_sampled_layout
from competition.data.synth.writer import join_ints, write_csv, write_npz
from competition.data.tree import CompetitionFolder

#: Bumped whenever the files written for a given source, seed and options change.
PREPARE_VERSION = 1


@dataclass
class PrepareSummary(CompetitionFolder):
    """What ``prepare_competition`` wrote."""

    seed: int = 0
    graphs: dict[str, dict[str, int]] = field(default_factory=dict)  # collection -> split -> graphs
    test_configs: dict[str, int] = field(default_factory=dict)  # collection -> configs of its test graphs
    ignored_test: dict[str, int] = field(default_factory=dict)  # collection -> unlabelled source test graphs
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def split_report(self) -> Path:
        return self.out_dir / "private" / "split.json"

    def table(self) -> str:
        return self.counts_table(self.graphs, "test configs", self.test_configs, "13,d")


def _write_test_graph(graph: SourceGraph, target: Path, seed: int, index: int, layout_test_configs: int,
                      chunk_bytes: int) -> tuple[int, list, list | None]:
    """Write one held-out graph; returns (file size, runtimes, normalizers) in the new config order."""
    rng = stream(seed, CONFIGS_STREAM, COLLECTION_KEY[graph.collection.name], index)
    task = graph.collection.task
    if not task.prepare_samples_configs:  # every config kept (tile: the file is small)
        tile = load_graph(graph.path, task.name)
        check_labels(graph.path, "config_runtime", tile.config_runtime)
        check_labels(graph.path, "config_runtime_normalizers", tile.config_runtime_normalizers)
        graph.configs = rng.permutation(tile.num_configs)
        runtimes = tile.config_runtime[graph.configs]
        normalizers = tile.config_runtime_normalizers[graph.configs]
        arrays = dict(tile.arrays(), config_feat=tile.config_feat[graph.configs],
                      config_runtime=np.zeros_like(runtimes),
                      config_runtime_normalizers=np.zeros_like(normalizers))
        size = write_npz(target, {key: arrays[key] for key in task.npz_spec})
        return size, runtimes.tolist(), normalizers.tolist()
    # A sample without replacement comes in random order: that order is the new config order.
    count = min(graph.num_configs, layout_test_configs)
    graph.configs = rng.choice(graph.num_configs, size=count, replace=False)
    arrays = read_sampled_layout(graph.path, graph.configs, chunk_bytes)
    runtimes = arrays["config_runtime"]
    check_labels(graph.path, "config_runtime", runtimes)
    arrays["config_runtime"] = np.zeros_like(runtimes)
    return write_npz(target, {key: arrays[key] for key in task.npz_spec}), runtimes.tolist(), None


def write_competition(staging: Path, graphs: list[SourceGraph], chosen: list[Collection],
                      summary: PrepareSummary, test_groups: dict[str, list[str]], *, seed: int,
                      test_share: float, layout_test_configs: int, group_by: str, chunk_bytes: int,
                      bar) -> None:
    """Write the planned competition into ``staging`` (``public/``, ``private/``), counted in ``summary``."""
    npz_root = staging / "public" / "npz_all" / "npz"
    for collection in chosen:
        for split in ("train", "valid", "test"):
            (npz_root / collection.subpath / split).mkdir(parents=True, exist_ok=True)
    solution_rows: dict[str, list[tuple]] = {c.name: [] for c in chosen}
    sample_rows: dict[str, list[tuple]] = {c.name: [] for c in chosen}
    with bar:
        test_index = dict.fromkeys(summary.graphs, 0)
        for graph in graphs:
            name = graph.collection.name
            if graph.side == "dropped":
                bar.update(1)
                continue
            target = npz_root / graph.collection.subpath / graph.side / f"{graph.stem}.npz"
            if graph.side == "test":
                size, runtimes, normalizers = _write_test_graph(
                    graph, target, seed, test_index[name], layout_test_configs, chunk_bytes)
                test_index[name] += 1
                row_id = graph.collection.row_id(graph.stem)
                normalizer_cell = join_ints(normalizers) if normalizers is not None else ""
                solution_rows[name].append((row_id, join_ints(runtimes), normalizer_cell, graph.usage))
                listed = range(graph.collection.required_length(len(runtimes)))
                sample_rows[name].append((row_id, join_ints(listed)))
                summary.test_configs[name] += len(runtimes)
            else:
                shutil.copyfile(graph.path, target)  # byte for byte: train graphs are the source's
                size = target.stat().st_size
            summary.graphs[name][graph.side] += 1
            summary.files += 1
            summary.bytes += size
            bar.update(1)
    sample = [row for c in chosen for row in sorted(sample_rows[c.name])]
    solution = [row for c in chosen for row in sorted(solution_rows[c.name])]
    summary.bytes += write_csv(staging / "public" / "sample_submission.csv", SUBMISSION_HEADER, sample)
    summary.bytes += write_csv(staging / "private" / "solution.csv", SOLUTION_COLUMNS, solution)
    summary.bytes += _write_split_report(staging / "private" / "split.json", graphs, chosen, summary,
                                         test_groups, seed=seed, test_share=test_share,
                                         layout_test_configs=layout_test_configs, group_by=group_by)
    summary.files += 3


def _write_split_report(path: Path, graphs: list[SourceGraph], chosen: list[Collection],
                        summary: PrepareSummary, test_groups: dict[str, list[str]], **options) -> int:
    """``split.json``: the options, the counts, the test groups and one line per source graph."""
    head = {
        "format_version": PREPARE_VERSION,
        **options,
        "family_rule": "competition.data.prepare.model_family",
        "collections": [c.name for c in chosen],
        "counts": summary.graphs,
        "test_configs": summary.test_configs,
        "ignored_source_test_graphs": summary.ignored_test,
        "test_groups": test_groups,
    }
    records = []
    for graph in sorted(graphs, key=lambda g: (COLLECTION_KEY[g.collection.name], g.relpath)):
        record = {"collection": graph.collection.name, "source": graph.relpath, "family": graph.family,
                  "split": graph.side, "stem": graph.stem, "source_configs": graph.num_configs}
        if graph.side == "test":
            record["usage"] = graph.usage
            record["configs"] = [int(i) for i in graph.configs]
        records.append(json.dumps(record))
    text = json.dumps(head, indent=2)[:-2] + ',\n  "graphs": [\n    ' + ",\n    ".join(records) + "\n  ]\n}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.stat().st_size
