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
    wrapper = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                             check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(wrapper.stdout)
    if result["rc"]:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed (exit {result['rc']}):\n{result['stderr']}")
    return Measured(result["peak_kib"] / 1024, result["seconds"], result["stdout"], result["stderr"])


def measure_python(code: str, *args: str) -> Measured:
    """``measure_command`` for ``python -c code args``."""
    return measure_command([sys.executable, "-c", code, *args])


@dataclass(frozen=True)
class MeasuredTree:
    """A long command measured from outside: wall time, the peak of its whole process tree's memory."""

    rc: int
    seconds: float
    # the largest sum of resident memory over the command and its descendants (sampled), and never below
    # peak_process_mb
    peak_tree_mb: float
    peak_process_mb: float  # the largest resident memory of one process of the tree (getrusage, exact)
    cpu_seconds: float  # user + system CPU time of the tree


# argv: usage.json cmd...; runs cmd with this process's output, forwards SIGINT, writes its figures.
_TREE_WRAPPER = """
import json, resource, signal, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGINT, lambda *_: proc.send_signal(signal.SIGINT))
rc = proc.wait()
u = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as fh:
    json.dump({"rc": rc, "peak_kib": u.ru_maxrss, "cpu": u.ru_utime + u.ru_stime}, fh)
"""


def _tree_rss_kib(root: int) -> int:
    """Resident memory (KiB) of ``root`` and every descendant, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total


def measure_tree(cmd: list[str], *, log: Path | None = None, timeout: float | None = None,
                 interval: float = 1.0, env: dict[str, str] | None = None) -> MeasuredTree:
    """Run ``cmd`` from the project root, sampling the memory of its process tree every ``interval`` s.

    Its output goes to ``log`` (appended; discarded when None). ``timeout``: seconds after which the
    command is interrupted (SIGINT, then killed 60 s later); ``rc`` then says how it ended.
    """
    import signal
    import tempfile
    import time

    started = time.perf_counter()
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    usage = Path(tempfile.mkstemp(prefix="measure-", suffix=".json")[1])
    try:
        # The wrapper (a few MB, counted in the tree) reports the tree's exact getrusage figures.
        proc = subprocess.Popen([sys.executable, "-c", _TREE_WRAPPER, str(usage), *cmd], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
        peak, interrupted = 0, None
        while proc.poll() is None:
            peak = max(peak, _tree_rss_kib(proc.pid))
            now = time.perf_counter() - started
            if timeout is not None and now > timeout and interrupted is None:
                proc.send_signal(signal.SIGINT)
                interrupted = now
            if interrupted is not None and now > interrupted + 60:
                proc.kill()
            time.sleep(interval)
        proc.wait()
        reported = json.loads(usage.read_text() or "{}")
    finally:
        if log:
            out.close()
        usage.unlink(missing_ok=True)
    process_peak_kib = reported.get("peak_kib", 0)
    # The tree's peak is at least its largest process's exact peak: samples can miss a short command
    # (one taken while the child is still starting reads no memory, the next comes after it ended).
    return MeasuredTree(reported.get("rc", proc.returncode), time.perf_counter() - started,
                        max(peak, process_peak_kib) / 1024, process_peak_kib / 1024, reported.get("cpu", 0.0))
