"""A Kaggle-sized solution and submission, for the scoring benchmarks.

Shaped like the real test set (docs/competition.md, The task): 844 tile graphs holding about one million
configs in all (2 to ~10,000 per graph, skewed like the real counts) and 8 + 8 + 17 + 17 layout graphs of 1000
configs. Runtimes have ties and duplicates; the submission is a noisy ranking (neither perfect nor
random), so every code path of the metric does real work.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS

LAYOUT_GRAPHS = {"layout:xla:default": 8, "layout:xla:random": 8, "layout:nlp:default": 17,
                 "layout:nlp:random": 17}
TILE_GRAPHS = 844
TILE_TOTAL_CONFIGS = 1_000_000
LAYOUT_CONFIGS = 1000


def tile_config_counts(rng: np.random.Generator) -> np.ndarray:
    raw = rng.lognormal(mean=6.0, sigma=1.3, size=TILE_GRAPHS)
    counts = np.clip(np.round(raw / raw.sum() * TILE_TOTAL_CONFIGS), 2, 10_000).astype(np.int64)
    return counts


def write_case(out_dir: str | Path, seed: int = 0) -> tuple[Path, Path]:
    """Write ``solution.csv`` and ``submission.csv`` under ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    solution_rows, submission_rows = [], []
    graphs: list[tuple[str, int]] = [
        (f"tile:xla:{rng.bytes(16).hex()}", int(n)) for n in tile_config_counts(rng)
    ]
    for collection in COLLECTIONS[1:]:
        graphs += [(f"{collection.name}:{rng.bytes(16).hex()}", LAYOUT_CONFIGS)
                   for _ in range(LAYOUT_GRAPHS[collection.name])]
    for g, (row_id, n) in enumerate(graphs):
        runtime = np.round(rng.lognormal(13, 0.6, size=n) / 100).astype(np.int64) * 100 + 100  # ties
        usage = "Public" if g % 2 == 0 else "Private"
        noisy = np.argsort(np.log(runtime) + rng.normal(0, 0.3, size=n), kind="stable")
        if row_id.startswith("tile:"):
            normalizer = np.full(n, int(np.median(runtime))) + rng.integers(0, 50, size=n)
            solution_rows.append([row_id, ";".join(map(str, runtime)), ";".join(map(str, normalizer)), usage])
            submission_rows.append([row_id, ";".join(map(str, noisy[:5]))])
        else:
            solution_rows.append([row_id, ";".join(map(str, runtime)), "", usage])
            submission_rows.append([row_id, ";".join(map(str, noisy))])
    solution, submission = out / "solution.csv", out / "submission.csv"
    with open(solution, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([["ID", "Runtimes", "Normalizers", "Usage"],
                                                       *solution_rows])
    order = rng.permutation(len(submission_rows))  # rows in any order, as Kaggle accepts
    with open(submission, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(
            [["ID", "TopConfigs"], *(submission_rows[i] for i in order)]
        )
    return solution, submission
