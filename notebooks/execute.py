"""Execute the starter notebooks in place, stamped with what their outputs come from (``make notebooks``).

    python notebooks/execute.py                  # every notebook, on the small embedded competition
    python notebooks/execute.py 03_*.ipynb       # some of them
    python notebooks/execute.py --check          # say which committed notebooks are stale; exit 1 if any

Each notebook runs top to bottom in a fresh kernel (this interpreter, registered for the run only),
started in ``notebooks/`` as Jupyter starts it (its first cell imports the clone's kit and works in
``notebooks/output/``, ignored by git), on the embedded competition of ``--scale`` (seed 0;
``data/demo`` is reused when ``make demo`` built exactly it), and is written back with its outputs, so
GitHub previews it. Its metadata records, under ``tpugraphs``:

- ``cells``: a hash of the notebook's own code cells;
- ``kit``: the kit's version (the installed package's, as the leaderboard's scorer version reads it);
- ``data``: the scale, seed and generator version of the competition it ran on;
- ``tiny_figures``: the figures (every number printed with four or more decimals: scores, taus,
  intervals), per code cell, of a second execution on the *tiny* competition in a fresh folder, as
  ``make test`` executes it.

``tests/test_notebooks.py`` recomputes these: a notebook whose cells changed, or that ran on another
release of the kit or another generator, fails the test until it is re-executed. An edit elsewhere in
the kit between releases does not make a notebook stale: the slow test of ``tests/test_notebooks.py``
executes every notebook against the working tree, so such an edit that breaks one fails there, and
one that moves its figures beyond the known spread between machines (``CROSS_MACHINE_SPREAD``) fails
the comparison with ``tiny_figures`` there too: the committed outputs no longer come from the code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
METADATA_KEY = "tpugraphs"
CELL_TIMEOUT_S = 1800  # the small competition: the longest cell (notebook 03's training) takes minutes
# A figure is a number printed with four or more decimals (scores, taus, intervals; timings and memory
# are printed with fewer). The same code on another machine moves the figures of a trained model: the
# gnn's tile test score in notebook 03 came out 0.9887 on one machine and 0.9472 on another, repeatably
# (0.04; the final score 0.5958 and 0.5875). A figure that moves more than this is a change of the code.
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d{4,}(?![\w.])")
# Interval bounds ("[0.2739, 0.5033]") are left out: at the tiny competition's two graphs per collection a
# t interval is 12.7 standard errors wide, so its bounds amplify any move of the scores they come from.
INTERVAL = re.compile(r"\[[^\]\n]*\]")
CROSS_MACHINE_SPREAD = 0.05


def cells_hash(nb: dict) -> str:
    """A hash of the notebook's code cells, in order."""
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in nb["cells"] if c["cell_type"] == "code"]
    return hashlib.sha256(json.dumps(sources).encode()).hexdigest()[:16]


def data_stamp(scale: str, seed: int = 0) -> dict:
    from competition.data.synth import GENERATOR_VERSION

    return {"scale": scale, "seed": seed, "generator_version": GENERATOR_VERSION}


def stamp(nb: dict, scale: str) -> dict:
    """What a notebook's outputs come from: its code cells, the kit's release and the competition."""
    from competition.version import kit_version

    return {"cells": cells_hash(nb), "kit": kit_version(), "data": data_stamp(scale)}


def stale_reasons(path: Path) -> list[str]:
    """Why the committed outputs of ``path`` may not come from its cells on this release (empty: they do)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    recorded = nb.get("metadata", {}).get(METADATA_KEY)
    if not recorded:
        return ["never executed by notebooks/execute.py (no metadata.tpugraphs)"]
    reasons = []
    if recorded.get("cells") != cells_hash(nb):
        reasons.append("its code cells changed since it was executed")
    ran_on = recorded.get("data", {})
    current = data_stamp(ran_on.get("scale", "small"), ran_on.get("seed", 0))
    if ran_on != current:
        reasons.append(f"executed on {ran_on}, the generator now makes {current}")
    from competition.version import kit_version

    ran_with, current_kit = recorded.get("kit", "(not recorded)"), kit_version()
    if ran_with != current_kit:
        reasons.append(f"executed with kit {ran_with}, this is kit {current_kit}")
    return reasons


def _output_text(output: dict) -> str:
    text = output.get("text", "") if output.get("output_type") == "stream" else \
        output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def figures(nb: dict) -> dict[str, list[float]]:
    """The figures each code cell printed (``FIGURE``, outside interval brackets), keyed by the cell's
    position among the code cells."""
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    found = {str(i): [float(x) for output in cell.get("outputs", [])
                      for x in FIGURE.findall(INTERVAL.sub("", _output_text(output)))]
             for i, cell in enumerate(code)}
    return {i: values for i, values in found.items() if values}


def figure_differences(recorded: dict[str, list[float]], measured: dict[str, list[float]],
                       spread: float = CROSS_MACHINE_SPREAD) -> list[str]:
    """Where ``measured`` departs from ``recorded``: a cell whose figures differ in number, or one that
    moved by more than ``spread`` (one line each, empty when they agree)."""
    problems = []
    for cell in sorted(set(recorded) | set(measured), key=int):
        was, now = recorded.get(cell, []), measured.get(cell, [])
        if len(was) != len(now):
            problems.append(f"code cell {cell}: {len(now)} figures printed, {len(was)} recorded")
            continue
        moved = [(a, b) for a, b in zip(was, now, strict=True) if abs(a - b) > spread]
        if moved:
            shown = ", ".join(f"{a:.4f} recorded, {b:.4f} now" for a, b in moved[:3])
            problems.append(f"code cell {cell}: {shown} (beyond the cross-machine spread {spread})")
    return problems


def kernel_path(folder: Path) -> Path:
    """A JUPYTER_PATH whose ``python3`` kernel is this interpreter: no kernel installation needed."""
    spec_dir = folder / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (tpugraphs)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return folder


def execute(nb, workdir: Path, *, timeout_func=None, cell_timeout: int = CELL_TIMEOUT_S) -> None:
    """Execute ``nb`` (an nbformat notebook, changed in place) in ``workdir``. Needs ``JUPYTER_PATH`` to
    name a ``python3`` kernel (``kernel_path``)."""
    from nbclient import NotebookClient

    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(workdir)}},
                            timeout=cell_timeout, timeout_func=timeout_func, startup_timeout=60)
    client.reset_execution_trackers()  # as NotebookClient.execute does; it keeps display ids per run
    with client.setup_kernel():
        info = client.wait_for_reply(client.kc.kernel_info())
        nb.metadata["language_info"] = info["content"]["language_info"]
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)


def relative_outputs(nb, root: Path = ROOT) -> None:
    """Saved outputs name files relative to the repository (``data/demo/public``), never this machine's
    absolute path to it; a reader's clone lives elsewhere."""
    prefix = str(root) + "/"
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if "text" in output:
                output["text"] = output["text"].replace(prefix, "")
            for key, value in output.get("data", {}).items():
                if key.startswith("text/") and isinstance(value, str):
                    output["data"][key] = value.replace(prefix, "")


def _clean(nb) -> None:
    for cell in nb.cells:  # a clean slate: nothing of an earlier run survives a failed cell
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None


def tiny_figures(nb) -> dict[str, list[float]]:
    """The figures of ``nb`` executed as ``make test`` executes it: on the tiny competition named by
    ``$TPUGRAPHS_DATA``, in a fresh folder (no file of another notebook at hand)."""
    import copy

    from competition.data.locate import find_data

    copied = copy.deepcopy(nb)
    _clean(copied)
    saved = {name: os.environ.get(name) for name in ("TPUGRAPHS_SCALE", "TPUGRAPHS_DATA")}
    os.environ["TPUGRAPHS_SCALE"] = "tiny"
    os.environ["TPUGRAPHS_DATA"] = str(find_data(scale="tiny").public_dir)
    try:
        with tempfile.TemporaryDirectory() as folder:
            execute(copied, Path(folder))
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
    return figures(copied)


def run_one(path: Path, scale: str) -> float:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    _clean(nb)
    started = time.monotonic()
    execute(nb, NOTEBOOK_DIR)
    seconds = time.monotonic() - started
    relative_outputs(nb)
    nb.metadata[METADATA_KEY] = stamp(nb, scale)
    if scale == "small":  # what make test compares its own execution with
        nb.metadata[METADATA_KEY]["tiny_figures"] = tiny_figures(nb)
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python notebooks/execute.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/*.ipynb")
    parser.add_argument("--scale", default="small", choices=("tiny", "small"),
                        help="the embedded competition to run on (default: small)")
    parser.add_argument("--check", action="store_true", help="only say which notebooks are stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    paths = [p if p.is_absolute() or p.exists() else NOTEBOOK_DIR / p for p in args.notebooks] or \
        sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if args.check:
        stale = {p.name: stale_reasons(p) for p in paths}
        for name, reasons in stale.items():
            print(f"{name}: {'; '.join(reasons) if reasons else 'up to date'}")
        return 1 if any(stale.values()) else 0

    # The committed outputs come from the embedded competition, never from data a variable points at.
    for name in ("TPUGRAPHS_DATA", "TPUGRAPHS_EMBEDDED_DIR", "TQDM_DISABLE", "TPUGRAPHS_PROGRESS"):
        os.environ.pop(name, None)
    os.environ["TPUGRAPHS_SCALE"] = args.scale
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    from competition.data.locate import find_data

    print(find_data(scale=args.scale).describe())  # built (once) before the first notebook
    with tempfile.TemporaryDirectory() as jupyter:
        os.environ["JUPYTER_PATH"] = str(kernel_path(Path(jupyter)))
        for path in paths:
            print(f"executing {path.name} ...", flush=True)
            print(f"  {run_one(path, args.scale):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
