"""What the real-data benchmarks share: the protocols, the bootstrap draws and how a result is printed.

``bench_real`` measures every method on real graphs and ``compare_real`` pairs two methods of one such
run; both print ``mean [low, high]`` cells and the same caption under a collection row that rests on
too few graphs, so those live here, beside the names of the protocols both read.
"""

from __future__ import annotations

PROTOCOLS = ("transfer", "within", "across")
DRAWS = 2000  # bootstrap draws of every interval
FEW_GRAPHS = 10  # a collection row over fewer graphs says its interval is too narrow


def mean_and_interval(estimate: float, low: float, high: float) -> str:
    """One table cell: ``+0.123 [+0.05, +0.20]``."""
    return f"{estimate:+.3f} [{low:+.2f}, {high:+.2f}]"


def few_graphs_note(graphs: dict[str, int]) -> list[str]:
    """The caption under a collection table (collection -> graphs) whose rows rest on too few graphs."""
    few = [c for c, count in graphs.items() if count < FEW_GRAPHS]
    if not few:
        return []
    return [f"\n({', '.join(few)}: fewer than {FEW_GRAPHS} graphs, so the interval, which can only reshuffle "
            "the graphs at hand, is too narrow; docs/statistics.md)"]
