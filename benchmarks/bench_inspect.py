"""Memory of ``tpugraphs inspect`` on the largest real layout file's shape (issue 6, item 6).

The file: 100,040 configs x 121 configurable nodes (``benchmarks.realscale.write_nlp_npz``, 872 MB of
float32 ``node_config_feat``, compressed). Measured as peak resident memory of whole processes, each
started fresh:
- the kit: ``python -m competition.cli inspect FILE --json`` (streams the config tensor in chunks into
  compact rows and counts distinct configs exactly);
- the baseline: a plain ``np.load(FILE)['node_config_feat']`` followed by ``np.unique(axis=0)`` on
  the configs, what a user would write.
Targets: the kit under 350 MB peak, and both count the same number of distinct configs.

usage: python -m benchmarks.bench_inspect [--configs 100040] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import measure_command, measure_python
from benchmarks.realscale import NLP_CONFIGS, worst_case_nlp_npz

ROOT = Path(__file__).resolve().parents[1]
TARGET_MB = 350

_BASELINE = """
import sys, numpy as np
feat = np.load(sys.argv[1])["node_config_feat"]
print(len(np.unique(feat.reshape(feat.shape[0], -1), axis=0)))
"""
def run(configs: int = NLP_CONFIGS, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = worst_case_nlp_npz(keep or Path(tmp) / "albert_like.npz", num_configs=configs)
        kit = measure_command([sys.executable, "-m", "competition.cli", "inspect", str(path), "--json"])
        base = measure_python(_BASELINE, str(path))
    kit_mb, kit_s, kit_out = kit.peak_mb, kit.seconds, kit.stdout.strip()
    base_mb, base_s, base_out = base.peak_mb, base.seconds, base.stdout.strip()
    summary = json.loads(kit_out)
    return {
        "configs": summary["configs"],
        "configurable_nodes": summary["configurable_nodes"],
        "distinct_configs": summary["distinct_configs"],
        "baseline_distinct_configs": int(base_out),
        "kit_peak_mb": kit_mb,
        "kit_s": kit_s,
        "baseline_peak_mb": base_mb,
        "baseline_s": base_s,
        "memory_ratio": kit_mb / base_mb,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=NLP_CONFIGS)
    parser.add_argument("--keep", type=Path, help="reuse (or write) the generated file here")
    args = parser.parse_args()
    figures = run(args.configs, args.keep)
    print(json.dumps(figures, indent=2))
    ok = (figures["kit_peak_mb"] < TARGET_MB
          and figures["distinct_configs"] == figures["baseline_distinct_configs"])
    print(f"\ninspect peak {figures['kit_peak_mb']:.0f} MB (target < {TARGET_MB} MB) vs np.load "
          f"{figures['baseline_peak_mb']:.0f} MB; distinct configs {figures['distinct_configs']} vs "
          f"{figures['baseline_distinct_configs']}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
