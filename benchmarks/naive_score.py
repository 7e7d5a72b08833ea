"""The straightforward scorer the kit is measured against: csv module + scipy, one row at a time.

What a competitor would write from the metric's description: read both files with ``csv``, parse
each row into Python ints, compute ``2 - min(top5)/min(all)`` on normalised runtimes and
``scipy.stats.kendalltau`` on ranks per layout row, average per collection, then across collections.
It does the same basic checks (missing/unknown IDs, permutation) so the comparison is fair.

usage: python benchmarks/naive_score.py SUBMISSION.csv SOLUTION.csv   (prints the score)
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict

from scipy.stats import kendalltau


def main(submission_path: str, solution_path: str) -> float:
    with open(solution_path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        solution = {row[0]: row[1:] for row in reader}
    with open(submission_path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        submission = {row[0]: row[1] for row in reader}
    if set(submission) != set(solution):
        raise SystemExit("submission IDs do not match the solution")
    per_collection = defaultdict(list)
    for row_id, (runtimes_text, normalizers_text, usage) in solution.items():
        if usage == "Ignored":
            continue
        collection = row_id.rsplit(":", 1)[0]
        runtimes = [int(x) for x in runtimes_text.split(";")]
        predicted = [int(x) for x in submission[row_id].split(";")]
        if collection == "tile:xla":
            normalizers = [int(x) for x in normalizers_text.split(";")]
            y = [r / n for r, n in zip(runtimes, normalizers, strict=True)]
            value = 2 - min(y[i] for i in predicted[:5]) / min(y)
        else:
            if sorted(predicted) != list(range(len(runtimes))):
                raise SystemExit(f"{row_id}: not a permutation")
            ranks = [0] * len(predicted)
            for position, config in enumerate(predicted):
                ranks[config] = position
            value = kendalltau(ranks, runtimes).statistic
        per_collection[collection].append(value)
    means = [sum(v) / len(v) for v in per_collection.values()]
    return sum(means) / len(means)


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]))
