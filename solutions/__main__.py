"""``python -m solutions ARGS``: the same as ``tpugraphs solve ARGS``.

The entry point for ``torchrun``, which starts Python modules, not console scripts:
``torchrun --nproc_per_node=2 -m solutions --data data/demo/public --out sub.csv`` trains the gnn
in two processes (``solutions.compute.distributed``; docs/training-at-scale.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from competition.cli import main as tpugraphs


def main(argv: Sequence[str] | None = None) -> int:
    return tpugraphs(["solve", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
