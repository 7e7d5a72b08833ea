"""Peak memory of a command, measured in a process of its own so that runs never share a peak."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A wrapper process runs the command and reports ru_maxrss of its only child (KiB) and the wall time.
_WRAPPER = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": done.returncode, "seconds": time.perf_counter() - started,
                  "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "stdout": done.stdout, "stderr": done.stderr}))
"""


@dataclass(frozen=True)
class Measured:
    peak_mb: float  # peak resident memory of the command (MiB)
    seconds: float  # its wall time
    stdout: str
    stderr: str


def measure_command(cmd: list[str]) -> Measured:
    """Run ``cmd`` from the project root with the project importable; RuntimeError if it fails."""
    wrapper = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(wrapper.stdout)
    if result["rc"]:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed (exit {result['rc']}):\n{result['stderr']}")
    return Measured(result["peak_kib"] / 1024, result["seconds"], result["stdout"], result["stderr"])


def measure_python(code: str, *args: str) -> Measured:
    """``measure_command`` for ``python -c code args``."""
    return measure_command([sys.executable, "-c", code, *args])
