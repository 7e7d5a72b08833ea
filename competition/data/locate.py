"""Finding the competition data wherever a notebook or script runs.

``find_data()`` answers "where is the data?" the same way on Kaggle, on a laptop with the download and
on a fresh clone with nothing at all, so one notebook runs everywhere without edits. Order of
precedence, first match wins:

1. ``data_dir``, the argument (a notebook's ``DATA_DIR`` parameter): an explicit choice beats
   anything found automatically;
2. the environment variable ``TPUGRAPHS_DATA`` (how the tests and scripts point notebooks at data);
3. the Kaggle input folder ``/kaggle/input/predict-ai-model-runtime`` (or any folder directly under
   ``/kaggle/input`` holding the npz tree, e.g. a mirror dataset), when run on Kaggle;
4. the embedded competition (``competition.data.synth``), generated once if missing, into
   ``$TPUGRAPHS_EMBEDDED_DIR``, else ``data/embedded/`` of the source checkout, else
   ``~/.cache/tpugraphs/embedded/``. Its size is ``scale`` (argument, else ``$TPUGRAPHS_SCALE``,
   else ``small``). Without ``$TPUGRAPHS_EMBEDDED_DIR``, the checkout's ``data/demo/`` (what
   ``make demo`` builds) is used instead when it holds exactly that competition: the same scale,
   seed and generator version, as its stamp (``stamp_competition``) records.

An explicit choice (1 or 2) that holds no competition data is an error naming the folder and what
was expected: it never silently falls back to other data.

``setup_notebook()`` is the starter notebooks' first cell: ``find_data``, then the folder the notebook
writes to (``notebooks/output/`` of the source checkout it runs in), and a note of both.

A data directory is any folder the kit accepts (``resolve_data_dir``, the one rule every command uses): the
Kaggle download root, its ``npz_all/``, an ``npz/`` folder, or the output folder of
``tpugraphs synth`` (holding ``public/`` and ``private/``). The hidden labels are found when the
public folder sits next to ``private/solution.csv``, as ``tpugraphs synth`` writes them; the real
competition's labels were never released, so on Kaggle data ``solution_path`` is None.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from competition.data.tree import has_competition_data

DATA_ENV = "TPUGRAPHS_DATA"
SCALE_ENV = "TPUGRAPHS_SCALE"
EMBEDDED_ENV = "TPUGRAPHS_EMBEDDED_DIR"
DEFAULT_SCALE = "small"

KAGGLE_INPUT = Path("/kaggle/input")
KAGGLE_SLUG = "predict-ai-model-runtime"

Source = Literal["kaggle", "given", "env", "embedded"]

_REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = _REPO_ROOT / "data" / "demo"  # `make demo`'s competition (solutions.demo --out)


@dataclass(frozen=True)
class DataLocation:
    """Where the data is and where it came from.

    ``public_dir`` is the participant's folder (the Kaggle download tree); ``solution_path`` the
    hidden labels (``ID,Runtimes,Normalizers,Usage``) when known, else None; ``source`` says which
    rule of ``find_data`` found it.
    """

    public_dir: Path
    solution_path: Path | None
    source: Source

    @property
    def has_labels(self) -> bool:
        """Whether test submissions can be scored locally (only the embedded competition, or a
        folder laid out like it, carries its test labels)."""
        return self.solution_path is not None

    def describe(self) -> str:
        """One readable paragraph for a notebook's first output."""
        origin = {
            "given": "the data directory you gave",
            "env": f"${DATA_ENV}",
            "kaggle": "the Kaggle competition input",
            "embedded": "the embedded synthetic competition",
        }[self.source]
        labels = (f"hidden test labels: {self.solution_path}" if self.solution_path
                  else "no test labels (the real competition never released them)")
        return f"Data from {origin}: {self.public_dir}\n{labels}"


def find_data(
    data_dir: str | os.PathLike | None = None,
    *,
    scale: str | None = None,
    seed: int = 0,
    embedded_root: str | os.PathLike | None = None,
    progress: bool = True,
) -> DataLocation:
    """Locate the competition data (see the module docstring for the order of precedence).

    Args:
        data_dir: an explicit data directory; None or "" to search.
        scale: size of the embedded competition, used only when it is the data found:
            ``"tiny"`` (seconds) or ``"small"`` (about half a minute to build); default
            ``$TPUGRAPHS_SCALE`` or ``"small"``.
        seed: seed of the embedded competition.
        embedded_root: folder holding embedded competitions (default: see the module docstring).
        progress: show a progress bar while the embedded competition is built.

    Raises:
        FileNotFoundError: ``data_dir`` or ``$TPUGRAPHS_DATA`` names a folder without competition data.
        ValueError: an unknown scale.
    """
    if data_dir not in (None, ""):
        return _given(Path(data_dir).expanduser().absolute(), "given", "DATA_DIR")
    from_env = os.environ.get(DATA_ENV, "").strip()
    if from_env:  # absolute: a notebook may change its working folder afterwards
        return _given(Path(from_env).expanduser().absolute(), "env", f"${DATA_ENV}")
    kaggle = kaggle_data_dir()
    if kaggle is not None:
        return DataLocation(kaggle, _solution_next_to(kaggle), "kaggle")
    scale = scale or os.environ.get(SCALE_ENV, "").strip() or DEFAULT_SCALE
    out = embedded_competition(scale=scale, seed=seed, root=embedded_root, progress=progress)
    return DataLocation(out / "public", out / "private" / "solution.csv", "embedded")


def setup_notebook(data_dir: str | os.PathLike | None = None, scale: str | None = None) -> DataLocation:
    """Find the data (``find_data(data_dir, scale=scale)``), choose the folder the notebook writes to, and
    print both; the first cell of every starter notebook.

    A notebook that runs inside the source checkout the kit comes from (a clone, installed or not) works
    in the checkout's ``notebooks/output/``, which git ignores; elsewhere (Kaggle, an installed kit) in
    the folder it runs in. ``data_dir`` is resolved before the working folder changes.

    Raises:
        FileNotFoundError: ``data_dir`` or ``$TPUGRAPHS_DATA`` names a folder without competition data.
        ValueError: an unknown scale.
    """
    data = find_data(data_dir, scale=scale)
    checkout = source_checkout()
    if checkout is not None and Path.cwd().resolve().is_relative_to(checkout):
        output = checkout / "notebooks" / "output"
        output.mkdir(parents=True, exist_ok=True)
        os.chdir(output)
    print(data.describe())
    print(f"Files written by this notebook: {Path.cwd()}")
    return data


def resolve_data_dir(folder: str | os.PathLike, what: str | None = None) -> Path:
    """The data directory a user named, checked: the one rule of the CLI's ``--data`` and of ``find_data``.

    Accepts every layout ``find_npz_root`` accepts, and the output folder of ``tpugraphs synth`` (or
    ``tpugraphs prepare``), whose ``public/`` is then used. Raises FileNotFoundError naming the folder
    (as ``what``, e.g. ``--data``, when given) and what was expected otherwise.
    """
    folder = Path(folder).expanduser()
    named = f"{what} = {str(folder)!r}" if what else str(folder)
    if not folder.is_dir():
        problem = "a file, not a directory" if folder.exists() else "no such directory"
        raise FileNotFoundError(
            f"{named}: {problem}. Point it at the competition download "
            "(the folder holding sample_submission.csv and npz_all/), or the output folder of "
            "`tpugraphs synth`."
        )
    if not has_competition_data(folder) and has_competition_data(folder / "public"):
        return folder / "public"  # the output folder of `tpugraphs synth`
    if not has_competition_data(folder):
        raise FileNotFoundError(
            f"{named} holds no competition data: expected npz_all/npz/tile/xla/... "
            f"(the Kaggle download tree), an npz/ folder, or the output of `tpugraphs synth`."
        )
    return folder


def _given(folder: Path, source: Source, what: str) -> DataLocation:
    try:
        folder = resolve_data_dir(folder, what)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{exc} Or leave it unset to use the embedded competition.") from None
    return DataLocation(folder, _solution_next_to(folder), source)


def _solution_next_to(public_dir: Path) -> Path | None:
    candidate = public_dir.parent / "private" / "solution.csv"
    return candidate if candidate.is_file() else None


def kaggle_data_dir(input_dir: Path | None = None) -> Path | None:
    """The competition data under the Kaggle input folder, or None (not on Kaggle, or not attached).

    Looks at the competition's own folder first, then at every folder directly under the input
    folder (sorted, so the choice is stable), for a mirror dataset of the npz tree.
    """
    input_dir = KAGGLE_INPUT if input_dir is None else input_dir
    if not input_dir.is_dir():
        return None
    preferred = [input_dir / KAGGLE_SLUG, input_dir / "competitions" / KAGGLE_SLUG]
    others = sorted(p for p in input_dir.iterdir() if p.is_dir() and p not in preferred)
    for folder in preferred + others:
        if folder.is_dir() and has_competition_data(folder):
            return folder
    return None


def source_checkout() -> Path | None:
    """The repository the kit's code comes from when it is a source checkout (a clone, used in place or
    installed with ``pip install -e``); None for an installed copy of the kit."""
    return _REPO_ROOT if (_REPO_ROOT / "pyproject.toml").is_file() else None


def default_embedded_root() -> Path:
    """``$TPUGRAPHS_EMBEDDED_DIR``, else ``data/embedded`` of a writable source checkout, else the
    user cache (``~/.cache/tpugraphs/embedded``, e.g. when the kit is installed read-only on Kaggle)."""
    from_env = os.environ.get(EMBEDDED_ENV, "").strip()
    if from_env:
        return Path(from_env).expanduser()
    checkout = source_checkout()
    if checkout is not None and os.access(checkout, os.W_OK):
        return checkout / "data" / "embedded"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tpugraphs" / "embedded"


def embedded_competition(
    *, scale: str = DEFAULT_SCALE, seed: int = 0, root: str | os.PathLike | None = None, progress: bool = True
) -> Path:
    """The folder of the embedded competition ``(scale, seed)``, generated on first use.

    Returns ``ROOT/<scale>-seed<seed>`` holding ``public/`` and ``private/solution.csv``. It is built
    in a temporary sibling folder and renamed into place, so an interrupted build never leaves a
    half-written competition that a later call would take for a complete one.
    """
    from competition.data.synth import GENERATOR_VERSION, SCALES, generate_competition

    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (from the argument or ${SCALE_ENV}); "
                         f"expected one of {', '.join(SCALES)}")
    if root is None and not os.environ.get(EMBEDDED_ENV, "").strip() and \
            is_embedded_competition(DEMO_DIR, scale=scale, seed=seed):
        return DEMO_DIR  # `make demo` built exactly this one already
    root = (Path(root).expanduser() if root is not None else default_embedded_root()).absolute()
    target = root / f"{scale}-seed{seed}"
    if _is_complete(target, GENERATOR_VERSION):
        return target
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    if progress:
        print(f"Building the {scale} embedded competition (seed {seed}) in {target}; this happens once.",
              file=sys.stderr)
    try:
        generate_competition(partial, scale=scale, seed=seed, progress=progress)
        stamp_competition(partial, scale=scale, seed=seed)
        if target.exists():  # unfinished, made by another generator version, or another process was faster
            if _is_complete(target, GENERATOR_VERSION):
                return target
            shutil.rmtree(target)
        try:
            partial.rename(target)
        except OSError:
            if not _is_complete(target, GENERATOR_VERSION):  # another process renamed its copy first
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


# Written beside public/ and private/ (outside the Kaggle tree): a competition made by another version
# of the generator is stale and is rebuilt rather than silently reused. The stamp says which
# competition a folder holds, for folders whose name does not (data/demo).
_VERSION_FILE = "generator-version"
_STAMP_FILE = "embedded.json"


def stamp_competition(out: str | os.PathLike, *, scale: str, seed: int) -> None:
    """Record, beside ``out/public`` and ``out/private``, which embedded competition ``out`` holds
    (scale, seed, generator version), once it is completely written."""
    from competition.data.synth import GENERATOR_VERSION

    out = Path(out)
    (out / _VERSION_FILE).write_text(f"{GENERATOR_VERSION}\n")
    stamp = {"scale": scale, "seed": int(seed), "generator_version": GENERATOR_VERSION}
    (out / _STAMP_FILE).write_text(json.dumps(stamp) + "\n")


def clear_stamp(out: str | os.PathLike) -> None:
    """Remove the stamp before ``out`` is rewritten in place: an interrupted rewrite is then never reused."""
    for name in (_STAMP_FILE, _VERSION_FILE):
        (Path(out) / name).unlink(missing_ok=True)


def competition_stamp(out: str | os.PathLike) -> dict | None:
    """The stamp ``stamp_competition`` wrote beside ``out/public`` and ``out/private`` (scale, seed,
    generator version), or None where there is none (built by hand, or being rewritten)."""
    try:
        stamp = json.loads((Path(out) / _STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_embedded_competition(out: str | os.PathLike, *, scale: str, seed: int) -> bool:
    """Whether ``out`` holds exactly the embedded competition ``(scale, seed)`` of this generator version,
    completely written (its stamp says so; a folder without one is unknown, so not reused)."""
    from competition.data.synth import GENERATOR_VERSION

    out = Path(out)
    if not _is_complete(out, GENERATOR_VERSION):
        return False
    wanted = {"scale": scale, "seed": int(seed), "generator_version": GENERATOR_VERSION}
    return competition_stamp(out) == wanted


def _is_complete(out: Path, generator_version: int) -> bool:
    version = out / _VERSION_FILE
    return (
        (out / "public" / "sample_submission.csv").is_file()
        and (out / "private" / "solution.csv").is_file()
        and version.is_file()
        and version.read_text().strip() == str(generator_version)
    )
