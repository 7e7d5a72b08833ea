"""PARAMS.json: the settings chosen for each collection of one method, written by ``tpugraphs tune`` and
read by ``tpugraphs solve --params`` (a ``--param`` still wins over it).

The file is JSON::

    {"format": "tpugraphs-params", "version": 1, "method": "gbdt",
     "collections": {
       "layout:xla:random": {
         "params": {"learning_rate": 0.05, "num_leaves": 63},
         "source": "tuned",
         "note": "the tuned settings beat the defaults on the 4 held-out valid graphs beyond the noise",
         ...}}}

``params`` is what ``solve`` applies on top of the collection's own defaults (``MethodSettings.resolve``);
``source`` is ``tuned`` (the search's best settings), ``defaults`` (the search found nothing that beat the
defaults beyond the noise: ``params`` then holds only the settings fixed for the whole search, if any) or
``given`` (written by hand). Every other key of an entry (the study, the scores, the intervals) is the
record of how it was chosen; ``solve`` keeps it out of the way. Each setting is checked by the method's
schema when the file is read, so a hand-edited file is refused in one line naming the file, the
collection and the setting.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from competition.collections import COLLECTION_NAMES
from solutions.settings.schema import MethodSettings, SettingError, check_names, schema

FORMAT = "tpugraphs-params"
VERSION = 1
SOURCES = ("tuned", "defaults", "given")


class ParamsFileError(ValueError):
    """A PARAMS.json that cannot be read or used; the message is one line naming the file."""


@dataclass(frozen=True)
class ParamsFile:
    """A read and checked PARAMS.json: per collection, its settings (typed by the schema) and source."""

    path: Path
    method: str
    entries: dict[str, dict]  # collection name -> the entry as written
    params: dict[str, dict[str, object]]  # collection name -> the checked settings
    sha256: str

    def params_for(self, collection: str) -> dict[str, object]:
        """The settings the file gives ``collection`` (empty when the file does not name it)."""
        return dict(self.params.get(collection, {}))

    def source_of(self, collection: str) -> str:
        """``tuned``, ``defaults``, ``given``, or ``absent`` for a collection the file does not name."""
        entry = self.entries.get(collection)
        return str(entry.get("source", "given")) if entry is not None else "absent"

    def origin(self, collections: Iterable[str]) -> dict:
        """Where the settings of ``collections`` came from, as a saved run records it."""
        return {"file": str(self.path), "sha256": self.sha256,
                "collections": {name: {"source": self.source_of(name), "params": self.params_for(name)}
                                for name in collections}}


def _refuse(path: Path, why: str) -> ParamsFileError:
    return ParamsFileError(f"{path}: {why}")


def read_params_file(path: str | Path, method: str, settings: MethodSettings | None) -> ParamsFile:
    """Read and check ``path`` for ``--method method`` (``settings``: its schema; None for a method without
    settings, which no PARAMS.json fits). ``ParamsFileError`` (one line) for anything wrong."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _refuse(path, f"cannot read it ({exc.strerror or exc})") from None
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _refuse(path, f"not JSON ({exc}); expected a PARAMS.json written by tpugraphs tune") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _refuse(path, f"not a PARAMS.json (no \"format\": \"{FORMAT}\"); tpugraphs tune writes one")
    if document.get("version") != VERSION:
        raise _refuse(path, f"PARAMS.json version {document.get('version')!r}; this kit reads version "
                            f"{VERSION}")
    if document.get("method") != method:
        raise _refuse(path, f"holds settings of --method {document.get('method')}, not --method {method}")
    if settings is None:
        raise _refuse(path, f"--method {method} has no settings to read from it")
    collections = document.get("collections")
    if not isinstance(collections, dict):
        raise _refuse(path, "\"collections\" must map collection names to their settings")
    rows = schema(settings.settings_class)
    params: dict[str, dict[str, object]] = {}
    for name, entry in collections.items():
        if name not in COLLECTION_NAMES:
            raise _refuse(path, f"unknown collection {name!r}; the collections are "
                                f"{', '.join(COLLECTION_NAMES)}")
        values = entry.get("params") if isinstance(entry, dict) else None
        if not isinstance(values, dict):
            raise _refuse(path, f"collection {name}: \"params\" must map setting names to values")
        if entry.get("source", "given") not in SOURCES:
            raise _refuse(path, f"collection {name}: source {entry.get('source')!r} is not one of "
                                f"{', '.join(SOURCES)}")
        try:
            check_names(settings.settings_class, values, method)
            params[name] = {key: rows[key].check(value) for key, value in values.items()}
        except SettingError as exc:
            raise _refuse(path, f"collection {name}: {exc}") from None
    return ParamsFile(path, method, dict(collections), params, hashlib.sha256(raw).hexdigest())


def write_entry(path: str | Path, method: str, collection: str, entry: Mapping) -> None:
    """Put ``entry`` (``params``, ``source``, ``note`` and its record) for ``collection`` into ``path``,
    keeping the file's other collections; a file of another method is refused. Written whole, then
    swapped in, so a reader never sees half a file."""
    path = Path(path)
    document: dict = {"format": FORMAT, "version": VERSION, "method": method, "collections": {}}
    if path.exists():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _refuse(path, f"exists and is not a readable PARAMS.json ({exc}); choose another --out") \
                from None
        if not isinstance(found, dict) or found.get("format") != FORMAT:
            raise _refuse(path, "exists and is not a PARAMS.json; choose another --out")
        if found.get("method") != method:
            raise _refuse(path, f"holds settings of --method {found.get('method')}; choose another --out "
                                f"for --method {method}")
        if isinstance(found.get("collections"), dict):
            document["collections"] = found["collections"]
    document["collections"][collection] = dict(entry)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)
