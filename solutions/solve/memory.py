"""Peak resident memory of the process: over the whole run (``process_peak_mb``) or while a block runs
(``PeakMemory``), so ``tpugraphs solve`` can report what each collection needed."""

from __future__ import annotations

import os
import resource
import sys
import threading
from collections.abc import Callable
from pathlib import Path


def rss_reader() -> Callable[[], int] | None:
    """A function giving the current resident set size in bytes, or None where none is available."""
    try:
        import psutil

        process = psutil.Process()
        return lambda: process.memory_info().rss
    except ImportError:
        pass
    statm = Path("/proc/self/statm")
    if statm.is_file():
        page = os.sysconf("SC_PAGE_SIZE")
        return lambda: int(statm.read_text().split()[1]) * page
    return None


def process_peak_mb() -> float:
    """Peak resident memory of this process since it started (``getrusage``; KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


class PeakMemory:
    """Peak resident memory while a block runs: ``with PeakMemory() as mem: ...; mem.peak_mb``.

    A background thread samples the RSS every ``interval`` seconds (psutil, or /proc/self/statm);
    it catches torch's and numpy's allocations, which ``tracemalloc`` does not see. Where no RSS
    reader exists it falls back to the process peak (``getrusage``), which never goes down.
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak_bytes = 0
        self._read = rss_reader()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._read())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakMemory:
        if self._read is not None:
            self._sample()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20 if self._read is not None else process_peak_mb()
