"""How additive are layout runtimes? The additive one-hot model on real and embedded graphs.

The real-data issue (25) asked the embedded random searches to be *less additive*, by this statistic:
a per-node additive ridge model on one-hot settings, fitted on half of a graph's configs, ranks the other
half at Kendall tau <= 0.60 (one released real random search: 0.48). A tau below 1 has two causes, and
the statistic alone cannot tell them apart:

- **interactions**: the runtime depends on settings jointly, which no sum of per-setting terms can
  express. Then the additive model also misses the runtime itself: its R^2 is below 1;
- **ties and noise**: configs whose true runtimes are equal (or differ by less than the measurement
  noise) cannot be ordered by any model, additive or not. Then R^2 stays near 1 and tau still falls.

So this benchmark gives, per labelled layout graph (real: every one of ``bench_real``'s; embedded:
the train and valid graphs of ``small``, both searches), over three random halves (fit on one, rank
the other):

- ``tau node``: the issue's statistic, one category per configurable node's whole setting (output,
  input and kernel together), the better of ridge strengths 0.1 and 1;
- ``tau tensor``: the same with one category per tensor (output, input, kernel apart): a model that
  cannot see an interaction within a node;
- ``R2``: the share of the ranked half's log-runtime variance the per-tensor fit explains (out of
  sample), the best of ridge strengths 1e-3, 0.1 and 1: near 1 means additive;
- ``at fastest``: configs within 0.01 % of the fastest runtime (``tpugraphs stats``'s figure): ties;
- ``noise`` and ``beyond``: the graph's measurement noise (the 95th percentile of the relative
  differences between its configs measured more than once, ``competition.stats.noise``) and the share
  of its pairs of configs whose runtimes differ by more than that;
- ``tau node beyond``: ``tau node`` counted on only those pairs (the same fits and halves): what is
  left of the statistic once the pairs no measurement can order are set aside. Near 1 on an additive
  graph whatever its ties; below it, interactions;
- ``heuristic``, ``rule 2`` and ``rule 1``: the tau of the kit's heuristic on the whole graph (no
  fitting; its layout rule 3: a roofline of each convolution's and dot's matrix work, inflated by its
  output's padding, against its bytes, and reshapes that are copies), of its former rule 2 (the padded
  output elements alone, and the copies) and of rule 1 (the padded size of every configured tensor,
  x3 for a tensor whose layout disagrees with what its neighbour provides or expects): whether
  weighing padding by the work behind it, and charging a disagreement between neighbours, help rank
  the graph (docs/journal/2026-11-27-what-real-runtimes-teach.md, "Version 5: no charge between neighbours";
  docs/journal/2026-11-26-heuristic-layout-rules-2-and-3.md; ``solutions.methods.heuristic``).

Graphs with fewer than 40 configs (``--min-configs``), or without two distinct settings, are left out:
too few to split.
Results go to ``--out`` (JSON) and a Markdown table on stdout (docs/synthetic-data.md, "What still
disagrees").

usage: python -m benchmarks.bench_additivity [--real DIR] [--synth-seeds 0,1] [--synth-root DIR] [--only TEXT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from benchmarks.bench_real import RealGraph, find_real_graphs, only_matching, real_data_parser
from competition.collections import COLLECTIONS
from competition.data.graphs import LayoutGraph, load_graph
from competition.data.layout_description import FASTEST_TOLERANCE
from competition.data.locate import embedded_competition
from competition.data.tree import split_dir
from competition.metrics.layout import kendall_tau_score
from competition.stats.noise import pairs_beyond_noise, taus_beyond_noise
from solutions.features.dedup import repeat_noise_of
from solutions.features.layout_geometry import layout_context, layout_geometry
from solutions.features.shapes import config_chunks

MIN_CONFIGS = 40
HALVES = 3
TAU_STRENGTHS = (0.1, 1.0)  # the statistic
R2_STRENGTHS = (1e-3, 0.1, 1.0)  # near least squares too: an exactly additive graph reaches R^2 1


def one_hot_design(settings: np.ndarray, per: str) -> np.ndarray | None:
    """One-hot columns (first level dropped, duplicate columns of tied nodes merged) of each node's
    setting (``per="node"``) or each tensor's (``per="tensor"``); None when no setting varies.

    settings: ``(c, nc, 18)`` layout config features (output, input, kernel; 6 slots each).
    """
    columns = []
    for j in range(settings.shape[1]):
        parts = [settings[:, j]] if per == "node" else [settings[:, j, 6 * t: 6 * t + 6] for t in range(3)]
        for part in parts:
            _, level = np.unique(part, axis=0, return_inverse=True)
            level = level.reshape(-1)
            if level.max() > 0:
                columns.append(np.eye(level.max() + 1)[level][:, 1:])
    if not columns:
        return None
    return np.unique(np.concatenate(columns, axis=1), axis=1)


def _ridge(x: np.ndarray, y: np.ndarray, strength: float) -> tuple[np.ndarray, float]:
    """Weights and intercept of a ridge fit (the intercept is not penalised)."""
    x_mean, y_mean = x.mean(axis=0), y.mean()
    xc = x - x_mean
    w = np.linalg.solve(xc.T @ xc + strength * np.eye(x.shape[1]), xc.T @ (y - y_mean))
    return w, float(y_mean - x_mean @ w)


def _halves(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for seed in range(HALVES):
        order = np.random.default_rng(seed).permutation(n)
        out.append((order[: n // 2], order[n // 2:]))
    return out


def _tau(predicted: np.ndarray, runtime: np.ndarray) -> float:
    """The official layout score of ranking ``runtime``'s configs by ``predicted`` (fastest first)."""
    return kendall_tau_score(np.argsort(predicted, kind="stable"), runtime)


def _cross_fitted(x: np.ndarray, runtime: np.ndarray, strengths: Sequence[float], score) -> float:
    """The best over ``strengths`` of the mean over the halves of ``score(predicted log runtime, log
    runtime, runtime)`` on the ranked half of an additive ridge fit to the other half."""
    y = np.log(runtime)
    best = -np.inf
    for strength in strengths:
        scores = []
        for fit, ranked in _halves(len(y)):
            w, b = _ridge(x[fit], y[fit], strength)
            scores.append(score(x[ranked] @ w + b, y[ranked], runtime[ranked]))
        best = max(best, float(np.mean(scores)))
    return best


def _r2(predicted: np.ndarray, y: np.ndarray) -> float:
    variance = float(np.var(y))
    return 1.0 - float(np.var(y - predicted)) / variance if variance > 0 else 1.0


def ridge_tau(x: np.ndarray, runtime: np.ndarray, strengths: Sequence[float] = TAU_STRENGTHS) -> float:
    """Mean over the halves of the tau of an additive ridge fit, the best strength."""
    return _cross_fitted(x, runtime, strengths, lambda predicted, y, ranked: _tau(predicted, ranked))


def ridge_tau_beyond_noise(x: np.ndarray, runtime: np.ndarray, noise: float,
                           strengths: Sequence[float] = TAU_STRENGTHS) -> float:
    """``ridge_tau`` counted only on the ranked half's pairs of configs whose runtimes differ by more
    than ``noise`` (relative): the best strength of the mean over the halves (NaN when a half has no
    such pair)."""
    def beyond(predicted: np.ndarray, y: np.ndarray, ranked: np.ndarray) -> float:
        return float(taus_beyond_noise([predicted], [ranked], noise)[0])

    value = _cross_fitted(x, runtime, strengths, beyond)
    return value if np.isfinite(value) else float("nan")  # no half had a pair beyond the noise


def additive_r2(x: np.ndarray, runtime: np.ndarray, strengths: Sequence[float] = R2_STRENGTHS) -> float:
    """Mean over the halves of the out-of-sample R^2 of log runtime under an additive fit, the best
    strength (1.0 for an exactly additive graph)."""
    return _cross_fitted(x, runtime, strengths, lambda predicted, y, ranked: _r2(predicted, y))


def rule_taus(graph: LayoutGraph) -> tuple[float, float, float]:
    """The tau of the kit's heuristic on ``graph`` (``LayoutGeometry.cost``, rule 3, as ``tpugraphs
    solve --method heuristic`` ranks), of its former rule 2 (padded conv/dot output elements, the same
    copies) and of rule 1 (every configured tensor's padded size, x3 for a tensor whose layout
    disagrees with its neighbour's). One pass over the configs gives all three."""
    context = layout_context(graph)
    feat = graph.node_config_feat
    current, second, first = [], [], []
    for part in config_chunks(*feat.shape[:2]):
        geometry = layout_geometry(feat[part], context)
        current.append(geometry.cost())
        padded = geometry.padded_elements * geometry.active
        copied = (padded[:, :, 0] + padded[:, :, 1]) * geometry.reshape_copy
        second.append(np.where(geometry.reshape[None], copied, padded[:, :, 0]).sum(axis=1))
        first.append((padded * (1.0 + 2.0 * geometry.mismatch)).sum(axis=(1, 2)))
    runtime = graph.config_runtime.astype(np.float64)
    return tuple(_tau(np.concatenate(rule), runtime) for rule in (current, second, first))


@dataclass
class Additivity:
    """The figures of one graph (see the module docstring)."""

    graph: str
    configs: int
    tau_node: float
    tau_tensor: float
    r2: float
    at_fastest: float
    heuristic: float | None = None
    rule_2: float | None = None
    rule_1: float | None = None
    # the measurement noise (relative), the share of pairs beyond it and tau node on those pairs; None
    # where the graph has too few configs measured more than once
    noise: float | None = None
    beyond: float | None = None
    tau_node_beyond: float | None = None


def measure(name: str, settings: np.ndarray, runtime: np.ndarray, *, min_configs: int = MIN_CONFIGS,
            graph: LayoutGraph | None = None) -> Additivity | None:
    """The figures of one graph, or None when it has fewer than ``min_configs`` configs or nothing
    varies; the two rule columns only with ``graph`` (whose configs and runtimes these are)."""
    runtime = np.asarray(runtime, dtype=np.float64)
    settings = np.asarray(settings).astype(np.int64)
    if len(runtime) < max(min_configs, 4) or np.all(runtime == runtime[0]):
        return None
    by_node, by_tensor = one_hot_design(settings, "node"), one_hot_design(settings, "tensor")
    if by_node is None or by_tensor is None:
        return None
    heuristic, rule_2, rule_1 = rule_taus(graph) if graph is not None else (None, None, None)
    noise = repeat_noise_of(settings, runtime)
    beyond_figures = {} if noise is None else {
        "noise": noise.level, "beyond": pairs_beyond_noise(runtime, noise.level),
        "tau_node_beyond": ridge_tau_beyond_noise(by_node, runtime, noise.level)}
    return Additivity(
        graph=name, configs=len(runtime),
        tau_node=ridge_tau(by_node, runtime), tau_tensor=ridge_tau(by_tensor, runtime),
        r2=additive_r2(by_tensor, runtime),
        at_fastest=float(np.mean(runtime <= runtime.min() * (1 + FASTEST_TOLERANCE))),
        heuristic=heuristic, rule_2=rule_2, rule_1=rule_1, **beyond_figures,
    )


def measure_real(found: Sequence[RealGraph], notes: list[str], *, min_configs: int = MIN_CONFIGS,
                 say=None) -> list[Additivity]:
    """The rows of the labelled real layout graphs in ``found``; ``notes`` gets the ones left out, ``say``
    (when given) one line per graph as it is measured (a full release has hundreds)."""
    rows = []
    for real in found:
        if real.collection.task_name != "layout" or real.no_signal:
            continue
        started = time.perf_counter()
        [graph] = real.graphs
        row = measure(real.name, graph.node_config_feat, graph.config_runtime, min_configs=min_configs,
                      graph=graph)
        if row is None:
            notes.append(f"left out: {real.name}: fewer than {min_configs} configs or no setting varies")
        else:
            rows.append(row)
        if say is not None:
            say(f"  {real.name}: {graph.num_configs:,} configs, {time.perf_counter() - started:.1f} s")
    return rows


def embedded_rows(public: Path, label: str, *, min_configs: int = MIN_CONFIGS) -> dict[str, list[Additivity]]:
    """Every labelled layout graph of one embedded competition, by collection."""
    out: dict[str, list[Additivity]] = {}
    for collection in COLLECTIONS:
        if collection.task_name != "layout":
            continue
        for split in ("train", "valid"):
            for path in sorted(split_dir(public, collection, split).glob("*.npz")):
                graph = load_graph(path, "layout")
                assert isinstance(graph, LayoutGraph)
                row = measure(f"{label}/{collection.name}:{split}/{path.stem}", graph.node_config_feat,
                              graph.config_runtime, min_configs=min_configs, graph=graph)
                if row is not None:
                    out.setdefault(collection.name, []).append(row)
    return out


FIGURES = ("tau_node", "tau_tensor", "r2", "at_fastest", "noise", "beyond", "tau_node_beyond", "heuristic",
           "rule_2", "rule_1")
COLUMNS = ("tau node", "tau tensor", "R2", "at fastest", "noise %", "beyond", "tau node beyond", "heuristic",
           "rule 2", "rule 1")


def _header(first: str, second: str) -> list[str]:
    return [f"| {first} | {second} | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _plain(value: float | None, scale: float = 1.0, digits: int = 3) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{scale * value:.{digits}f}"


def real_table(rows: Sequence[Additivity]) -> str:
    lines = _header("graph", "configs")
    for r in rows:
        lines.append(f"| {r.graph} | {r.configs:,} | {r.tau_node:.3f} | {r.tau_tensor:.3f} | {r.r2:.3f} | "
                     f"{r.at_fastest:.3f} | {_plain(r.noise, 100, 4)} | {_plain(r.beyond, digits=2)} | "
                     f"{_plain(r.tau_node_beyond)} | {_signed(r.heuristic)} | {_signed(r.rule_2)} | "
                     f"{_signed(r.rule_1)} |")
    return "\n".join(lines)


def embedded_table(by_collection: dict[str, list[Additivity]]) -> str:
    """Per collection, each figure's p10 / median / p90 over its graphs (the noise columns over the
    graphs that have one)."""
    lines = _header("collection", "graphs")
    for name, rows in by_collection.items():
        cells = []
        for figure in FIGURES:
            values = np.array([v for r in rows if (v := getattr(r, figure)) is not None], dtype=np.float64)
            values = values[np.isfinite(values)]
            if not values.size:
                cells.append("-")
                continue
            scale, digits = (100, 4) if figure == "noise" else (1, 3)
            p10, p50, p90 = scale * np.percentile(values, [10, 50, 90])
            # how many graphs the noise columns rest on (those with enough repeated configs)
            over = f" ({values.size} graphs)" if figure == "noise" and values.size < len(rows) else ""
            cells.append(f"{p10:.{digits - 1}f} / **{p50:.{digits}f}** / {p90:.{digits - 1}f}{over}")
        lines.append(f"| {name} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = real_data_parser("bench_additivity", __doc__)
    parser.add_argument("--synth-seeds", default="0,1", help="embedded competitions to measure (none: '')")
    parser.add_argument("--min-configs", type=int, default=MIN_CONFIGS,
                        help=f"leave out graphs of fewer configs (default {MIN_CONFIGS}; half fit the model)")
    parser.add_argument("--out", type=Path, default=Path("data/bench-real/additivity.json"),
                        help="JSON results")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    found, notes = find_real_graphs(args.real, protos=not args.no_protos)
    selected = only_matching(found, args.only, "bench_additivity")
    if selected is None:
        return 2
    real = measure_real(selected, notes, min_configs=args.min_configs, say=print)
    for note in notes:
        print(f"note: {note}")
    print("### real layout graphs\n")
    print(real_table(real))
    embedded: dict[str, dict[str, list[Additivity]]] = {}
    for seed in (int(s) for s in args.synth_seeds.split(",") if s):
        public = embedded_competition(scale=args.scale, seed=seed, root=args.synth_root) / "public"
        begun = time.perf_counter()
        embedded[f"{args.scale}-seed{seed}"] = embedded_rows(public, f"{args.scale}-seed{seed}",
                                                             min_configs=args.min_configs)
        print(f"  embedded {args.scale}-seed{seed}: {time.perf_counter() - begun:.0f} s")
    if embedded:
        pooled: dict[str, list[Additivity]] = {}
        for by_collection in embedded.values():
            for name, rows in by_collection.items():
                pooled.setdefault(name, []).extend(rows)
        print(f"\n### embedded `{args.scale}` ({', '.join(embedded)}): p10 / median / p90 over train and "
              f"valid graphs\n")
        print(embedded_table(pooled))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "real": [asdict(r) for r in real], "notes": notes,
        "embedded": {label: {name: [asdict(r) for r in rows] for name, rows in by.items()}
                     for label, by in embedded.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }, indent=1) + "\n")
    print(f"\nwritten: {args.out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
