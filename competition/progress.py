"""Progress the kit shows while a person waits: one helper decides how, from where the output goes.

- a terminal (stderr is a TTY): tqdm bars, redrawn in place with carriage returns;
- a Jupyter kernel: one line per bar in the cell's output, updated in place through an IPython display
  handle (``update_display_data``). It needs no ``ipywidgets`` (so no ``TqdmWarning: IProgress not
  found``), renders the same in JupyterLab, VS Code and a static preview of an executed notebook, and
  bars that do not stay (``leave=False``: loading, validating, the epochs of one collection) share one
  line of the cell, so a cell shows a bounded number of lines however many bars it opens;
- anything else (a pipe, a log file, CI): plain lines, at most one per bar every 30 seconds
  (``$TPUGRAPHS_PROGRESS_EVERY``), and a last one when such a bar ends; never a carriage return, and
  nothing for work done sooner (a log keeps the commands' own messages, not a line per file);
- off: ``enabled=False`` (the commands' ``--quiet``), or ``$TQDM_DISABLE`` set.

``$TPUGRAPHS_PROGRESS`` (``bars``, ``notebook``, ``lines`` or ``off``) overrides the choice.

``progress(...)`` takes the tqdm arguments the kit uses (an iterable, ``total``, ``desc``, ``unit``,
``unit_scale``, ``initial``, ``leave``) and returns an object with tqdm's ``update``, ``set_postfix``,
``set_description``, ``close`` and the context-manager protocol, so call sites read as with tqdm.
This module imports nothing heavy: tqdm and IPython only when a bar of theirs is shown.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TextIO

Mode = Literal["bars", "notebook", "lines", "off"]
MODES: tuple[str, ...] = ("bars", "notebook", "lines", "off")
MODE_ENV = "TPUGRAPHS_PROGRESS"
EVERY_ENV = "TPUGRAPHS_PROGRESS_EVERY"
DEFAULT_EVERY_S = 30.0
NOTEBOOK_REFRESH_S = 0.5  # display updates are messages to the front end: a few per second at most
NOTEBOOK_WIDTH = 90


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (IPython's ZMQ shell), not a terminal IPython."""
    shell_module = sys.modules.get("IPython")
    if shell_module is None:  # never imported: certainly not a kernel
        return False
    try:
        shell = shell_module.get_ipython()
    except AttributeError:
        return False
    return shell is not None and hasattr(shell, "kernel")


def import_tqdm_auto_quietly() -> None:
    """Import ``tqdm.auto`` without its ``TqdmWarning: IProgress not found`` in a notebook lacking ipywidgets.

    Libraries import ``tqdm.auto`` for bars of their own (PyTorch Geometric does on import); the kit
    never uses it, so its warning about widgets would only be noise at the top of a cell. Python caches
    the module: later imports by anyone stay quiet too.
    """
    if "tqdm.autonotebook" in sys.modules or not in_notebook():
        return
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.auto  # noqa: F401


def choose_mode(enabled: bool = True, stream: TextIO | None = None) -> Mode:
    """How progress is shown (see the module docstring)."""
    if not enabled or os.environ.get("TQDM_DISABLE", "").strip() not in ("", "0", "false", "False"):
        return "off"
    forced = os.environ.get(MODE_ENV, "").strip().lower()
    if forced:
        if forced not in MODES:
            raise ValueError(f"${MODE_ENV} = {forced!r}: expected one of {', '.join(MODES)}")
        return forced  # type: ignore[return-value]
    if in_notebook():
        return "notebook"
    stream = sys.stderr if stream is None else stream
    try:
        return "bars" if stream.isatty() else "lines"
    except (AttributeError, ValueError):  # a closed or unusual stream
        return "lines"


def _every_s() -> float:
    raw = os.environ.get(EVERY_ENV, "").strip()
    if not raw:
        return DEFAULT_EVERY_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"${EVERY_ENV} = {raw!r}: expected a number of seconds") from None
    return max(value, 0.0)


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | float | None = None,
    desc: str = "",
    unit: str = "it",
    unit_scale: bool = False,
    initial: int = 0,
    leave: bool = True,
    enabled: bool = True,
    stream: TextIO | None = None,
) -> Progress:
    """A progress bar in the form that suits where the output goes (see the module docstring)."""
    if total is None and iterable is not None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    mode = choose_mode(enabled, stream)
    if mode == "bars":
        return _TqdmBar(iterable, total=total, desc=desc, unit=unit, unit_scale=unit_scale, initial=initial,
                        leave=leave, stream=stream)
    if mode == "notebook":
        return _NotebookBar(iterable, total=total, desc=desc, unit=unit, unit_scale=unit_scale,
                            initial=initial,
                            leave=leave)
    if mode == "lines":
        return _LineBar(iterable, total=total, desc=desc, unit=unit, unit_scale=unit_scale, initial=initial,
                        leave=leave, stream=stream, every_s=_every_s())
    return Progress(iterable, total=total, desc=desc, unit=unit, unit_scale=unit_scale, initial=initial,
                    leave=leave)


class Progress:
    """Counts and shows nothing (``off``); the base of the other forms, which override ``_show``."""

    def __init__(self, iterable: Iterable[Any] | None, *, total: int | float | None, desc: str, unit: str,
                 unit_scale: bool, initial: int, leave: bool) -> None:
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.unit = unit
        self.unit_scale = unit_scale
        self.n = initial
        self.leave = leave
        self.postfix = ""
        self.started = time.monotonic()
        self.closed = False

    # tqdm's interface ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("this progress bar was made without an iterable; call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self) -> int:
        return int(self.total or 0)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int | float = 1) -> None:
        self.n += n
        self._show(final=False)

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())
        self._show(final=False)

    def set_description(self, desc: str) -> None:
        self.desc = desc
        self._show(final=False)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._show(final=True)

    # what the forms share -----------------------------------------------------------------------

    def _show(self, *, final: bool) -> None:
        """Show the current state (``final``: once, when the bar closes)."""

    def format(self, width: int | None = None) -> str:
        """tqdm's own one-line rendering: with a bar of ``width`` columns, or without a bar (None)."""
        from tqdm import tqdm

        elapsed = time.monotonic() - self.started
        bar_format = None  # tqdm's bar
        if not width:  # a plain line: no bar characters
            bar_format = ("{desc}{percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                          "{rate_fmt}{postfix}]"
                          if self.total else "{desc}{n_fmt} [{elapsed}, {rate_fmt}{postfix}]")
        prefix = f"{self.desc}: " if self.desc else ""
        return tqdm.format_meter(self.n, self.total, elapsed, ncols=width, prefix=prefix, unit=self.unit,
                                 unit_scale=self.unit_scale, postfix=self.postfix or None,
                                 bar_format=bar_format,
                                 ascii=False)


class _TqdmBar(Progress):
    """A terminal: tqdm itself."""

    def __init__(self, iterable: Iterable[Any] | None, *, stream: TextIO | None, **kwargs: Any) -> None:
        super().__init__(iterable, **kwargs)
        from tqdm import tqdm

        self._bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, unit_scale=self.unit_scale,
                         initial=self.n, leave=self.leave, file=stream or sys.stderr)

    def update(self, n: int | float = 1) -> None:
        self.n += n
        self._bar.update(n)

    def set_postfix(self, **values: Any) -> None:
        self._bar.set_postfix(**values)

    def set_description(self, desc: str) -> None:
        self.desc = desc
        self._bar.set_description(desc)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._bar.close()


class _LineBar(Progress):
    """A pipe or a file: a plain line every ``every_s`` seconds, and one when a bar that printed ends."""

    def __init__(self, iterable: Iterable[Any] | None, *, stream: TextIO | None, every_s: float,
                 **kwargs: Any) -> None:
        super().__init__(iterable, **kwargs)
        self._stream = stream
        self._every_s = every_s
        self._last = self.started
        self._printed = False

    def _show(self, *, final: bool) -> None:
        now = time.monotonic()
        due = now - self._last >= self._every_s
        if (final and self._printed) or (not final and due):
            stream = self._stream or sys.stderr
            print(self.format(), file=stream, flush=True)
            self._last, self._printed = now, True


class _NotebookBar(Progress):
    """A Jupyter kernel: a text line updated in place through a display handle.

    A bar that stays (``leave=True``) gets its own line. Bars that do not share one line per cell
    execution, blanked when they close: nested and successive passing bars never pile up.
    """

    _transient: dict[int, Any] = {}  # execution count -> the display handle passing bars share

    def __init__(self, iterable: Iterable[Any] | None, **kwargs: Any) -> None:
        super().__init__(iterable, **kwargs)
        from IPython import get_ipython
        from IPython.display import display

        self._last = 0.0
        if self.leave:
            self._handle = display({"text/plain": self.format(NOTEBOOK_WIDTH)}, raw=True, display_id=True)
            return
        cell = getattr(get_ipython(), "execution_count", 0)
        handle = self._transient.get(cell)
        if handle is None:
            self._transient.clear()  # handles of earlier cells are never updated again
            handle = self._transient[cell] = display({"text/plain": ""}, raw=True, display_id=True)
        self._handle = handle
        self._show(final=False)

    def _show(self, *, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self._last < NOTEBOOK_REFRESH_S:
            return
        self._last = now
        text = "" if final and not self.leave else self.format(NOTEBOOK_WIDTH)
        self._handle.update({"text/plain": text}, raw=True)
