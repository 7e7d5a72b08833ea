"""Which settings move a real graph's runtime, and which ones each method charges (``make bench-real``'s
diagnosis, group by group).

For every labelled real layout graph at hand (``bench_real.find_real_graphs``) the configurable nodes
are gathered into their tied groups (nodes whose row is the same in every config of the graph), and each
group's distinct settings become one-hot columns. One least-squares fit of those columns per target
says how far each group's settings move it:

- ``truth``: the log runtime (an exact fit on the real `unet_3d` searches and the proto: their runtimes
  are additive, BENCHMARKS.md, "Real data");
- each method's prediction on the same configs, the method trained on the embedded competition's
  collection of that graph (the transfer protocol, one competition seed and one method seed).

Every target is z-scored over the graph's configs first, so a group's **effect** (the spread of its
coefficients, max - min) is in standard deviations of that target, comparable across targets. A method
that ranks the graph well charges the groups the truth charges, in the same proportions; a group the
truth leaves at zero and a method charges is something the embedded competition taught it that the real
runtimes do not show. ``corr`` is the correlation of all of a target's coefficients with the truth's.

Results go to ``--out`` (JSON) and one Markdown table per graph on stdout (docs/synthetic-data.md, "What
the learned methods charge").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.bench_real import METHODS, find_real_graphs, fit_method, only_matching, real_data_parser
from competition.collections import Collection
from competition.data.graphs import LayoutGraph
from competition.data.locate import embedded_competition
from solutions.features.layout_geometry import LayoutContext, layout_context
from solutions.features.shapes import CONFIGURABLE_KINDS


@dataclass
class GroupEffect:
    """One tied group of configurable nodes and how far its settings move each target."""

    node: int  # the group's first configurable node (index among the graph's configurable nodes)
    kind: str  # convolution, dot, reshape or "other"
    members: int
    output_shape: list[int]
    settings: int  # distinct settings of the group in the graph's configs
    effects: dict[str, float]  # target -> spread of the group's coefficients (target std units)


def group_design(graph: LayoutGraph, context: LayoutContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-hot columns of every tied group's distinct settings (the first setting of each group is the
    reference) and an intercept: (c, k + 1); the group of each column (k,); the groups' first nodes.
    ``context``: ``layout_context(graph, with_tied=True)``."""
    assert context.representative is not None
    rows = graph.node_config_feat.astype(np.int64)
    groups = np.unique(context.representative)
    columns, owner = [], []
    for g in groups:
        _, inverse = np.unique(rows[:, g], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for k in range(1, int(inverse.max()) + 1):
            columns.append((inverse == k).astype(np.float64))
            owner.append(g)
    design = np.column_stack([*columns, np.ones(graph.num_configs)])
    return design, np.asarray(owner, dtype=np.int64), groups


def fit_effects(design: np.ndarray, owner: np.ndarray, groups: np.ndarray,
                target: np.ndarray) -> tuple[dict[int, np.ndarray], float]:
    """Per group its coefficients (0 for the reference setting first), in std units of ``target``, and
    the fit's R^2."""
    y = np.asarray(target, dtype=np.float64)
    y = (y - y.mean()) / (y.std() or 1.0)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    r2 = 1.0 - float((residual ** 2).sum() / max(float((y ** 2).sum()), 1e-12))
    return {int(g): np.concatenate([[0.0], coef[:-1][owner == g]]) for g in groups}, r2


def attribute(graph: LayoutGraph, targets: dict[str, np.ndarray]) -> tuple[list[GroupEffect], dict]:
    """The group effects of every target on ``graph`` and, per target, its R^2 and coefficient
    correlation with ``truth``."""
    context = layout_context(graph, with_tied=True)
    design, owner, groups = group_design(graph, context)
    fits = {name: fit_effects(design, owner, groups, values) for name, values in targets.items()}
    truth = np.concatenate([fits["truth"][0][int(g)] for g in groups])
    summary = {}
    for name, (coefs, r2) in fits.items():
        mine = np.concatenate([coefs[int(g)] for g in groups])
        corr = float(np.corrcoef(mine, truth)[0, 1]) if np.std(mine) > 0 and np.std(truth) > 0 else 0.0
        summary[name] = {"r2": round(r2, 4), "corr_with_truth": round(corr, 4)}
    rows = []
    for g in groups:
        kind = int(context.kind[g])
        rows.append(GroupEffect(
            node=int(g), kind=CONFIGURABLE_KINDS[kind] if kind >= 0 else "other",
            members=int((context.representative == g).sum()),
            output_shape=[int(v) for v in context.tensor_dims[g, 0] if v > 0],
            settings=len(fits["truth"][0][int(g)]),
            effects={name: float(np.ptp(coefs[int(g)])) for name, (coefs, _) in fits.items()}))
    return rows, summary


def table(name: str, rows: list[GroupEffect], summary: dict) -> str:
    targets = list(summary)
    lines = [f"#### {name}", "",
             "| group (first node) | kind | nodes | output | settings | " + " | ".join(targets) + " |",
             "|---|---|---|---|---|" + "---|" * len(targets)]
    for r in rows:
        lines.append(f"| {r.node} | {r.kind} | {r.members} | `{r.output_shape}` | {r.settings} | "
                     + " | ".join(f"{r.effects[t]:.3f}" for t in targets) + " |")
    lines.append("| corr with truth (R^2) | | | | | " + " | ".join(
        f"{summary[t]['corr_with_truth']:+.3f} ({summary[t]['r2']:.3f})" for t in targets) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = real_data_parser("bench_attribution", __doc__)
    parser.add_argument("--methods", default="heuristic,gbdt,gnn",
                        help=f"comma-separated, of {', '.join(METHODS)} (default: heuristic,gbdt,gnn)")
    parser.add_argument("--synth-seed", type=int, default=0, help="the embedded competition to train on")
    parser.add_argument("--seed", type=int, default=0, help="method seed")
    parser.add_argument("--out", type=Path, default=Path("data/bench-real/attribution.json"),
                        help="JSON results")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        print(f"bench_attribution: unknown method(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    found, notes = find_real_graphs(args.real, protos=not args.no_protos)
    selected = only_matching(found, args.only, "bench_attribution")
    if selected is None:
        return 2
    graphs = [g for g in selected if g.collection.task_name == "layout" and g.no_signal is None]
    for note in notes:
        print(f"note: {note}")
    public = embedded_competition(scale=args.scale, seed=args.synth_seed, root=args.synth_root) / "public"
    models: dict[tuple[str, str], object] = {}

    def model(method: str, collection: Collection):
        key = (method, collection.name)
        if key not in models:
            models[key] = fit_method(method, {}, public, collection, args.seed, None)
        return models[key]

    results = {}
    for real in graphs:
        [graph] = real.graphs
        assert isinstance(graph, LayoutGraph)
        targets = {"truth": np.log(graph.config_runtime.astype(np.float64))}
        for method in methods:
            predicted = model(method, real.collection).predict(real.collection, graph)
            targets[method] = np.asarray(predicted, dtype=np.float64)
        rows, summary = attribute(graph, targets)
        print("\n" + table(real.name, rows, summary))
        results[real.name] = {"groups": [r.__dict__ for r in rows], "summary": summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "methods": methods, "synth_seed": args.synth_seed, "seed": args.seed, "scale": args.scale,
        "seconds": round(time.perf_counter() - started, 1), "graphs": results}, indent=1) + "\n")
    print(f"\nwritten: {args.out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
