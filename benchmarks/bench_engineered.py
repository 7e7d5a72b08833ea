"""What the gnn's engineered config features cost at the largest xla size (``engineered_features``).

The graph: ``benchmarks.realscale.xla_layout_graph`` (43,615 nodes, 72,000 edges, 2,250 configurable
nodes) with ``--configs`` distinct configs (default 8,192: twice the ``layout_max_train_configs`` cap). Each
case builds the training example the gnn builds (``make_example``: OneHop pruning, deduplication),
timed as the median of ``--repeats`` runs in this process:

- ``without``: ``engineered_features=false`` (the example alone, the baseline of the ratios);
- ``with, capped``: the default, a fixed sample of ``layout_max_train_configs`` configs featurized;
- ``with, every config``: ``layout_max_train_configs=none``, every config featurized (what a graph to
  predict pays: validation and test graphs keep every config).

Reported: seconds, the ratio to ``without``, and the feature cost per featurized config. No target:
the figures say what the cap buys and what prediction pays.

usage: python -m benchmarks.bench_engineered [--configs 8192] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.realscale import xla_layout_graph
from solutions.methods.gnn.data import make_example
from solutions.methods.gnn.settings import GNNConfig
from solutions.pruning import OneHop


def _time(build, repeats: int) -> tuple[float, object]:
    seconds, example = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        example = build()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), example


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    cap = GNNConfig().layout_max_train_configs
    graph = xla_layout_graph(num_configs=args.configs)
    print(f"graph: {graph.num_nodes:,} nodes, {graph.num_configurable_nodes:,} configurable, "
          f"{graph.num_configs:,} configs; median of {args.repeats}")
    cases = {"without": dict(engineered=False),
             f"with, capped at {cap:,}": dict(engineered=True, max_configs=cap),
             "with, every config": dict(engineered=True)}
    rows, base = [], None
    for name, options in cases.items():
        seconds, example = _time(lambda o=options: make_example("g", graph, transform=OneHop(), compress=True,
                                                                **o), args.repeats)
        base = seconds if base is None else base
        featurized = example.num_configs if options["engineered"] else 0
        per_config = (seconds - base) / featurized * 1e3 if featurized else float("nan")
        rows.append((name, example.num_configs, seconds, seconds / base, per_config))
    print("| case | configs kept | seconds | ratio to without | feature ms per config |")
    print("|---|---|---|---|---|")
    for name, kept, seconds, ratio, per_config in rows:
        shown = "-" if per_config != per_config else f"{per_config:.2f}"
        print(f"| {name} | {kept:,} | {seconds:.1f} | {ratio:.1f}x | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
