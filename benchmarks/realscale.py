"""Deterministic synthetic layout graphs at the real extremes (docs/competition.md, Data format), for
benchmarks.

- ``xla_layout_graph()``: the largest xla layout graph's size, 43,615 nodes, 72,000 edges and 2,250
  configurable nodes, shaped like HLO: about one node in six is a source (parameter, constant), most
  nodes read one to three operands, mostly recent ones (operands are usually produced a few
  instructions earlier) and sometimes far back (a long-range edge to a parameter or a distant result).
  Configurable nodes (convolution, dot, reshape) are drawn among nodes with operands. Edges obey the
  released conventions: ``[u, v]`` with u consuming v, u > v, rows sorted, no duplicates.
- ``write_nlp_npz(path)``: the largest nlp layout file, 100,040 configs x 121 configurable nodes
  (872 MB of ``node_config_feat`` as float32), 98 % of the configs duplicates of 2,000 distinct ones
  with runtimes a few tenths of a percent apart, like the real duplicates. Written in the format of
  ``np.savez_compressed`` (a zip of deflated ``.npy`` members, readable by ``np.load`` and
  ``competition.data.graphs.load_graph``) but streamed chunk by chunk, so the generator's memory stays
  around 100 MB whatever the config count.

Nothing here is derived from real data; the sizes are the published extremes.

usage: python -m benchmarks.realscale OUT.npz [--configs 100040]   (writes the nlp file)
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from competition.data.graphs import LayoutGraph
from competition.tasks import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM

XLA_NODES, XLA_EDGES, XLA_CONFIGURABLE = 43_615, 72_000, 2_250
NLP_CONFIGS, NLP_CONFIGURABLE, NLP_NODES, NLP_DISTINCT = 100_040, 121, 4_000, 2_000

# Opcode ids of the upstream hlo_opcode.h table (docs/featurizer.md, The rules) for the configurable kinds.
CONFIGURABLE_OPCODES = {"convolution": 26, "dot": 34, "reshape": 75}
_OPERAND_COUNT_P = (0.12, 0.26, 0.36, 0.15, 0.11)  # P(0..4 operands), before dedup and the edge budget


def _random_dag(rng: np.random.Generator, num_nodes: int, num_edges: int) -> np.ndarray:
    """(num_edges, 2) sorted unique edges [u, v] with u > v; operands mostly a few nodes back."""
    degree = rng.choice(len(_OPERAND_COUNT_P), size=num_nodes, p=_OPERAND_COUNT_P)
    degree = np.minimum(degree, np.arange(num_nodes))  # node i has at most i earlier nodes to read
    u = np.repeat(np.arange(num_nodes, dtype=np.int64), degree)
    local = rng.geometric(0.3, size=u.shape[0])  # 1, 2, 3, ... back: mostly recent results
    far = np.floor(rng.random(u.shape[0]) * u).astype(np.int64) + 1  # anywhere earlier
    offset = np.where(rng.random(u.shape[0]) < 0.12, far, local)
    v = u - np.minimum(offset, u)
    keys = np.unique(u * num_nodes + v)
    if keys.shape[0] < num_edges:
        raise ValueError(f"only {keys.shape[0]} distinct edges drawn for {num_nodes} nodes; ask "
                         "for fewer edges")
    keys = np.sort(rng.choice(keys, size=num_edges, replace=False))
    return np.stack([keys // num_nodes, keys % num_nodes], axis=1)


def _node_feat(rng: np.random.Generator, num_nodes: int) -> np.ndarray:
    """(n, 140) float32: small counts everywhere, a few wide columns (sums/products reach 1e8+)."""
    feat = rng.integers(0, 8, size=(num_nodes, NODE_FEAT_DIM)).astype(np.float32)
    wide = [21, 22, 28, 29]  # dimension sum/product-like columns
    feat[:, wide] = np.round(rng.lognormal(8, 3, size=(num_nodes, len(wide)))).astype(np.float32)
    return feat


def _layout_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """(count, 18) float32 layout rows: mostly rank-2 tensors, so most slots are -1 (unset)."""
    rows = np.full((count, LAYOUT_CONFIG_DIM), -1, np.float32)
    for vector in range(3):
        rank = rng.choice([2, 3, 4], size=count, p=[0.7, 0.2, 0.1])
        keys = rng.random((count, 6))
        keys[np.arange(6)[None, :] >= rank[:, None]] = 2.0  # dims beyond the rank sort last
        order = np.argsort(keys, axis=1)  # first `rank` entries: a random order of 0..rank-1
        used = np.arange(6)[None, :] < rank[:, None]
        rows[:, vector * 6 : vector * 6 + 6] = np.where(used, order, -1)
    return rows


def xla_layout_graph(
    *,
    num_nodes: int = XLA_NODES,
    num_edges: int = XLA_EDGES,
    num_configurable: int = XLA_CONFIGURABLE,
    num_configs: int = 8,
    num_computations: int = 40,
    seed: int = 0,
) -> LayoutGraph:
    """A layout graph with the largest xla graph's node, edge and configurable-node counts.

    ``num_configs`` is small by default: pruning does not read configs (20,000 configs of 2,250
    nodes would be 3.2 GB).
    """
    rng = np.random.default_rng(seed)
    edges = _random_dag(rng, num_nodes, num_edges)
    has_operands = np.flatnonzero(np.bincount(edges[:, 0], minlength=num_nodes) > 0)
    config_ids = np.sort(rng.choice(has_operands, size=num_configurable, replace=False)).astype(np.int64)
    opcode = rng.choice([o for o in range(1, 121) if o not in CONFIGURABLE_OPCODES.values()], size=num_nodes)
    opcode[config_ids] = rng.choice(list(CONFIGURABLE_OPCODES.values()), size=num_configurable,
                                    p=[0.5, 0.3, 0.2])
    candidates = _layout_rows(rng, num_configurable * 4).reshape(num_configurable, 4, LAYOUT_CONFIG_DIM)
    pick = rng.integers(0, 4, size=(num_configs, num_configurable))
    splits = np.unique(np.concatenate([[0], rng.choice(np.arange(1, num_nodes), size=num_computations - 1,
                                                       replace=False)]))
    return LayoutGraph(
        node_feat=_node_feat(rng, num_nodes),
        node_opcode=opcode.astype(np.uint8),
        edge_index=edges,
        config_runtime=rng.integers(8 * 10**7, 4 * 10**8, size=num_configs).astype(np.int64),
        node_config_feat=candidates[np.arange(num_configurable), pick],
        node_config_ids=config_ids,
        node_splits=splits.astype(np.int64).reshape(1, -1),
    )


def _write_npy_member(archive: zipfile.ZipFile, key: str, array: np.ndarray) -> None:
    with archive.open(f"{key}.npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


def write_nlp_npz(
    path: str | Path,
    *,
    num_configs: int = NLP_CONFIGS,
    num_configurable: int = NLP_CONFIGURABLE,
    num_nodes: int = NLP_NODES,
    distinct_configs: int = NLP_DISTINCT,
    chunk_configs: int = 4096,
    seed: int = 0,
    progress: bool = False,
    compresslevel: int | None = None,
) -> Path:
    """Write a layout npz with ``num_configs`` configs drawn from ``distinct_configs`` distinct ones.

    Each configurable node has 2-8 candidate rows (as in the real protos); a distinct config picks one
    per node. Every config repeats a distinct one (its runtime: the distinct config's runtime times
    1 + up to 0.4 % noise). ``node_config_feat`` is generated and written ``chunk_configs`` at a
    time. ``compresslevel``: zlib level of the members (None: zlib's default, as ``np.savez_compressed``;
    1 writes several times faster, for benchmarks that write many files). Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    graph = xla_layout_graph(
        num_nodes=num_nodes, num_edges=int(num_nodes * 1.6), num_configurable=num_configurable,
        num_configs=1, num_computations=10, seed=seed,
    )
    num_candidates = rng.integers(2, 9, size=num_configurable)
    candidates = _layout_rows(rng, num_configurable * 8).reshape(num_configurable, 8, LAYOUT_CONFIG_DIM)
    pool_picks = np.floor(rng.random((distinct_configs, num_configurable)) * num_candidates).astype(np.int64)
    pool = candidates[np.arange(num_configurable), pool_picks]  # (distinct, nc, 18)
    which = rng.integers(0, distinct_configs, size=num_configs)
    which[:distinct_configs] = rng.permutation(distinct_configs)[: min(distinct_configs, num_configs)]
    base = rng.lognormal(np.log(3e8), 0.5, size=distinct_configs)
    runtime = np.round(base[which] * (1 + rng.random(num_configs) * 0.004)).astype(np.int64)

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True,
                         compresslevel=compresslevel) as archive:
        _write_npy_member(archive, "node_feat", graph.node_feat)
        _write_npy_member(archive, "node_opcode", graph.node_opcode)
        _write_npy_member(archive, "edge_index", graph.edge_index)
        _write_npy_member(archive, "config_runtime", runtime)
        _write_npy_member(archive, "node_config_ids", graph.node_config_ids)
        _write_npy_member(archive, "node_splits", graph.node_splits)
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
            "fortran_order": False,
            "shape": (num_configs, num_configurable, LAYOUT_CONFIG_DIM),
        }
        with archive.open("node_config_feat.npy", "w", force_zip64=True) as fh, tqdm(
            total=num_configs, unit="config", disable=not progress, desc=path.name
        ) as bar:
            np.lib.format.write_array_header_2_0(fh, header)
            for start in range(0, num_configs, chunk_configs):
                chunk = pool[which[start : start + chunk_configs]]
                fh.write(chunk.astype(np.float32, copy=False).tobytes())
                bar.update(chunk.shape[0])
    return path


def worst_case_nlp_npz(path: Path, *, num_configs: int = NLP_CONFIGS) -> Path:
    """The worst-case nlp file at ``path``: reused when it exists (``--keep``), written otherwise."""
    if not path.exists():
        started = time.perf_counter()
        write_nlp_npz(path, num_configs=num_configs)
        print(f"generated {path} ({path.stat().st_size / 2**20:.0f} MiB) in "
              f"{time.perf_counter() - started:.0f} s")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="npz file to write")
    parser.add_argument("--configs", type=int, default=NLP_CONFIGS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    write_nlp_npz(args.out, num_configs=args.configs, seed=args.seed, progress=True)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in "
          f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
