"""Carve a new hidden-label competition out of labelled graphs: ``prepare_competition``.

The real competition's test labels were never released, so a held-out set with hidden labels has to
be made from the labelled train and valid graphs, as benchmarks built on Kaggle competitions do.
``prepare_competition(data_dir, out_dir, ...)`` reads any Kaggle-layout tree (a real download, an
upstream mirror tree, ``tpugraphs synth`` output) and writes the kit's format:

```
OUT/public/sample_submission.csv            one row per new test graph (0;1;2;3;4 / identity)
OUT/public/npz_all/npz/<collection>/train/  the remaining labelled graphs, copied byte for byte
OUT/public/npz_all/npz/<collection>/valid/
OUT/public/npz_all/npz/<collection>/test/   the held-out graphs: anonymised 32-hex stems, runtimes
                                            (and tile normalizers) zeroed, configs shuffled
OUT/private/solution.csv                    ID,Runtimes,Normalizers,Usage (Public/Private per collection)
OUT/private/split.json                      the audit: every source file, its family, where it went,
                                            its new stem and, for test graphs, the source index of
                                            every config in the new order
```

How test graphs are chosen (docs/prepare.md shows the commands):

- **By model family** (``group_by="family"``, the default). The real train split holds the same model
  at several batch sizes, topologies and precisions (``resnet50.4x4.fp16``, ``resnet50.8x8.fp32``,
  ``..._batch_size_16_train`` / ``_32_``); a near-twin left in train would leak the answer, so a
  whole family goes to one side. ``model_family`` derives it from the stem; ``group_by="graph"``
  makes every program its own group.
- **Default and random searches of a program stay together.** ``layout:xla:default`` and
  ``layout:xla:random`` (and the two nlp collections) are split as one: a program, named by its stem,
  and its family are test in both or in neither.
- **How many.** Per split unit (tile, layout xla, layout nlp) the groups are shuffled and taken while
  the test graphs stay within ``test_share`` of the unit's graphs (at least one); a collection left
  without a test graph gets the smallest group that has one. A family larger than the target never
  goes to test. Every collection must keep a labelled graph, otherwise the split is refused.
- **Configs.** A layout test graph keeps a random sample of ``layout_test_configs`` configs (1000, as
  on Kaggle; all when it has fewer) in a random order; a tile test graph keeps all its configs, in a
  random order too (a featurized tree lists them in proto order, default run first, which would hint
  at the answer). Sampled configs are read by streaming the config tensor a chunk at a time, so
  memory stays bounded on the 100,040-config graphs.

Everything random draws from ``numpy.random.default_rng([seed, purpose, key])`` streams and every file
is written with the embedded competition's byte-reproducible writer, so the same source and seed give
the same bytes. The competition is written to a temporary folder beside ``out_dir`` and renamed into
place at the end: a failure or an interruption leaves no half-written competition (and, with
``force``, the previous one untouched).
"""


from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, Collection
from competition.data.atomic import replace_dir
from competition.data.locate import resolve_data_dir
from competition.data.prepare.families import model_family
from competition.data.prepare.plan import PrepareError, SourceGraph, name_test_graphs, plan_split
from competition.data.prepare.source import labelled_collections, list_labelled, scan_graph
from competition.data.prepare.writer import PrepareSummary, write_competition
from competition.data.tree import find_npz_root

__all__ = ["PrepareError", "PrepareSummary", "model_family", "prepare_competition"]

GROUP_BY = ("family", "graph")
DEFAULT_TEST_SHARE = 0.1  # Kaggle held out 844 of 7,229 tile graphs, 8 of 76 xla and 17 of 235 nlp programs
DEFAULT_LAYOUT_TEST_CONFIGS = 1000  # as on Kaggle
CHUNK_BYTES = 8 * 2**20  # raw bytes of a source config tensor decoded per step


def _check_out_dir(out_dir: Path, root: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise FileExistsError(f"{out_dir} is not empty; choose an empty folder, or replace it with "
                              "tpugraphs prepare --force")
    out_abs, root_abs = out_dir.resolve(), root.resolve()
    if out_abs == root_abs or out_abs in root_abs.parents:
        raise ValueError(f"{out_dir} holds the source data {root}; write the new competition elsewhere")


def _check_arguments(seed: int, test_share: float, layout_test_configs: int, group_by: str) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0 < test_share < 1:
        raise ValueError(f"test share must be between 0 and 1 (exclusive), got {test_share!r}")
    if layout_test_configs < 1:
        raise ValueError(f"layout test configs must be at least 1, got {layout_test_configs!r}")
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")


def _chosen_collections(data_dir: Path, root: Path, names: Sequence[str] | None) -> list[Collection]:
    """The collections to prepare: those named (each must have labelled graphs), else every one that has."""
    present = labelled_collections(data_dir)
    if not present:
        raise FileNotFoundError(f"{data_dir}: no labelled graphs (train/valid *.npz) under {root}; expected "
                                "the Kaggle download tree "
                                "(<data>/npz_all/npz/<collection>/{train,valid}/*.npz)")
    if not names:
        return present
    unknown = [name for name in names if name not in COLLECTION_BY_NAME]
    if unknown:
        raise ValueError(f"unknown collection {unknown[0]!r}; expected one of "
                         f"{', '.join(COLLECTION_BY_NAME)}")
    absent = [name for name in names if COLLECTION_BY_NAME[name] not in present]
    if absent:
        raise FileNotFoundError(f"{data_dir}: no labelled graphs of {', '.join(absent)}; it holds "
                                f"labelled graphs of: {', '.join(c.name for c in present)}")
    return [c for c in COLLECTIONS if c.name in set(names)]


def _scan_sources(root: Path, chosen: list[Collection], enabled: bool) -> list[SourceGraph]:
    """Every labelled graph of the chosen collections, with its figures and model family."""
    from competition.progress import progress as progress_bar

    sources = [(c, split, path) for c in chosen for split, path in list_labelled(root, c)]
    return [SourceGraph(collection, split, path, path.relative_to(root).as_posix(),
                        scan_graph(path, collection), model_family(path.stem))
            for collection, split, path in progress_bar(sources, desc="prepare: scan", unit="graph",
                                                        enabled=enabled)]


def _empty_summary(out_dir: Path, seed: int, chosen: list[Collection], root: Path) -> PrepareSummary:
    """The summary before anything is written: zero counts, and the unlabelled test graphs left out."""
    summary = PrepareSummary(out_dir=out_dir, seed=seed)
    for collection in chosen:
        summary.graphs[collection.name] = {"train": 0, "valid": 0, "test": 0}
        summary.test_configs[collection.name] = 0
        test_folder = root / collection.subpath / "test"
        unlabelled = len(list(test_folder.glob("*.npz"))) if test_folder.is_dir() else 0
        summary.ignored_test[collection.name] = unlabelled
    return summary


def prepare_competition(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    collections: Sequence[str] | None = None,
    seed: int = 0,
    test_share: float = DEFAULT_TEST_SHARE,
    layout_test_configs: int = DEFAULT_LAYOUT_TEST_CONFIGS,
    group_by: str = "family",
    force: bool = False,
    progress: bool | None = False,
    chunk_bytes: int = CHUNK_BYTES,
) -> PrepareSummary:
    """Write a new competition with hidden labels to ``out_dir``, carved from the labelled graphs of
    ``data_dir`` (see the module docstring for the rules).

    Args:
        data_dir: a Kaggle-layout tree (download root, its ``npz_all/``, an upstream ``npz/`` folder).
        out_dir: where ``public/`` and ``private/`` go; must be empty or absent unless ``force``.
        collections: names of the collections to prepare (default: every one with labelled graphs).
        seed: non-negative integer; the same source and seed give byte-identical files.
        test_share: share of each split unit's graphs to hold out, in (0, 1).
        layout_test_configs: configs kept per layout test graph (all when a graph has fewer).
        group_by: ``"family"`` (whole model families) or ``"graph"`` (programs) go to test.
        force: replace a non-empty ``out_dir`` (only once the new competition is complete).
        progress: show progress bars (None: only on a terminal).

    Raises FileNotFoundError (no labelled graphs, unknown folder), FileExistsError (``out_dir`` not
    empty), ValueError (bad arguments; ``PrepareError`` when the split is impossible) and
    DataFormatError naming the file for unreadable source data. ``out_dir`` is then left as it was.
    """
    _check_arguments(seed, test_share, layout_test_configs, group_by)
    seed = int(seed)
    started = time.perf_counter()
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    data_dir = resolve_data_dir(data_dir)  # the one data-directory rule: a synth output folder is its public/
    root = find_npz_root(data_dir)
    chosen = _chosen_collections(data_dir, root, collections)
    _check_out_dir(out_dir, root, force)

    from competition.progress import progress as progress_bar

    enabled = progress is not False  # None: the form suits the output (competition.progress)
    graphs = _scan_sources(root, chosen, enabled)
    test_groups = plan_split(graphs, seed=seed, test_share=test_share, group_by=group_by)
    summary = _empty_summary(out_dir, seed, chosen, root)
    name_test_graphs(graphs, chosen, seed)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.preparing-", dir=out_dir.parent))
    try:
        write_competition(staging, graphs, chosen, summary, test_groups, seed=seed, test_share=test_share,
                          layout_test_configs=layout_test_configs, group_by=group_by, chunk_bytes=chunk_bytes,
                          bar=progress_bar(total=len(graphs), desc="prepare: write", unit="graph",
                                           enabled=enabled))
        replace_dir(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary.seconds = time.perf_counter() - started
    return summary
