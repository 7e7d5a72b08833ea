"""The one way a method's model is saved, loaded and refused.

A method supplies only what it saves: its ``ModelFile`` (the JSON file's name, the format version it
writes) and the fields. ``ModelFile.write`` writes them beside the method's name and format version;
``ModelFile.read`` reads them back and refuses a file of another format; ``SavedMeta`` then checks what
the method needs (``require``), rebuilds its settings (``rebuild``) and reads its weights through their
library (``weights``), each refusal one line naming the file, what is wrong and the command that trains
the model again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class SavedModelError(ValueError):
    """A saved model this code cannot use (another format version, a setting it cannot rebuild).

    The message names the file and what is wrong; ``tpugraphs solve --predict-only`` shows it as a
    usage error instead of predicting with different settings.
    """


def retrain_command(method: str, collection: object) -> str:
    """The command that trains a saved model of ``method`` again (on ``collection`` when the file names
    one), for the refusal of a model this kit cannot use."""
    name = collection if isinstance(collection, str) and collection else "NAME"
    return f"tpugraphs solve --method {method} --collection {name} --data PUBLIC_DIR --out SUB.csv"


def read_saved_json(file: Path) -> dict:
    """A saved model's JSON file as a dict; ``SavedModelError`` naming the file when it is not one (a
    damaged copy, a hand edit)."""
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SavedModelError(f"{file}: not JSON ({exc}); write the model again (run without "
                              "--predict-only)") from None
    if not isinstance(data, dict):
        raise SavedModelError(f"{file}: a JSON object was expected, not a {type(data).__name__}; write the "
                              "model again (run without --predict-only)")
    return data


def unreadable_model_file(file: Path, reader: str, exc: BaseException) -> SavedModelError:
    """The refusal of a saved weight file its library cannot read (damaged, truncated, another model's):
    the file, the library's complaint in one line, and what to do."""
    complaint = (str(exc).strip().splitlines() or [""])[0][:200]
    return SavedModelError(f"{file}: {reader} cannot read it ({type(exc).__name__}: {complaint}); write the "
                           "model again (run without --predict-only)")


def is_version(saved: object, current: int) -> bool:
    """Whether a saved version is this code's ``current`` one: a whole number equal to it (4.0, "4" or True
    are not version 4)."""
    return isinstance(saved, int) and not isinstance(saved, bool) and saved == current


def shown_version(saved: object) -> str:
    """A saved version as a refusal names it (a value that is no whole number says so)."""
    whole = isinstance(saved, int) and not isinstance(saved, bool)
    return str(saved) if whole else f"{saved!r} (not a whole number)"


@dataclass(frozen=True)
class ModelFile:
    """A method's saved-model JSON: its file name and, for a learned method, the format version it writes
    (``format_version``; None: the file has no format, as for the random baseline)."""

    method: str
    name: str
    format_version: int | None = None
    indent: int | None = 2

    def write(self, folder: Path, fields: dict[str, Any]) -> Path:
        """Write ``fields`` after the format version and the method's name into ``folder/name`` (the folder
        made if needed); returns the file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        head: dict[str, Any] = {} if self.format_version is None else {"format_version": self.format_version}
        document = {**head, "method": self.method, **fields}
        file = folder / self.name
        file.write_text(json.dumps(document, indent=self.indent) + "\n", encoding="utf-8")
        return file

    def read(self, folder: Path) -> SavedMeta:
        """The saved fields of ``folder/name``; ``SavedModelError`` for a file that is no JSON object or of
        another format version (naming both and the command that retrains it)."""
        file = Path(folder) / self.name
        data = read_saved_json(file)
        meta = SavedMeta(file, data, retrain_command(self.method, data.get("collection")))
        if self.format_version is not None and data.get("format_version") != self.format_version:
            raise meta.refusal(f"a {self.method} model of format version {data.get('format_version')!r}; "
                               f"this kit reads format {self.format_version} only")
        return meta


@dataclass(frozen=True)
class SavedMeta:
    """The fields a model's JSON file holds, with the refusals every method words the same way."""

    file: Path
    data: dict[str, Any]
    retrain: str  # the command that trains the model again

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def refusal(self, why: str) -> SavedModelError:
        """``FILE: why; retrain it: COMMAND``."""
        return SavedModelError(f"{self.file}: {why}; retrain it: {self.retrain}")

    def require(self, section: str, names: Iterable[str], what: str = "setting") -> None:
        """Refuse a file whose ``section`` lacks one of ``names``: a saved model records every setting it
        was trained with, and today's defaults never fill in for one it lacks."""
        recorded = self.data.get(section) or {}
        missing = [name for name in names if name not in recorded]
        if missing:
            raise self.refusal(f"{section} lacks the {what}{'s' if len(missing) > 1 else ''} "
                               f"{', '.join(missing)}")

    def rebuild(self, build: Callable[[], T], *errors: type[BaseException]) -> T:
        """``build()``, with ``errors`` (a hand-edited or foreign file's settings) refused naming the file."""
        try:
            return build()
        except (TypeError, ValueError, *errors) as exc:
            raise self.refusal(str(exc)) from None

    def weights(self, file: Path, library: str, read: Callable[[], T], *errors: type[BaseException]) -> T:
        """``read()`` of a weight file, whose failure (damaged, truncated, another model's: ``errors``) is
        refused naming the file and the library's complaint."""
        try:
            return read()
        except errors as exc:
            raise unreadable_model_file(file, library, exc) from None
