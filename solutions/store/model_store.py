"""The model folder of ``tpugraphs solve``: written atomically per run, checked before ``--predict-only``.

Layout of ``model_dir``::

    solve.json                 the manifest: method, and per collection the run that wrote its model
    tile_xla/                  one folder per collection, as the method saves it, plus
    tile_xla/run.json          a stamp: the run id that wrote this folder
    .staging-<run id>/         a run in progress (removed when it completes; a leftover is an interrupted run)

A run saves every model into its staging folder first. Only when the whole run has succeeded (every
collection trained, the submission written and validated) are the folders moved into place and the
manifest replaced, so an interrupted run leaves the previous models and manifest as they were.
``check_saved_run`` compares each folder's stamp with the manifest before any work: a folder that a
crash left half-replaced, or one missing, is named, and ``--predict-only`` refuses to mix runs.

Runs on different collections accumulate (train ``tile:xla`` today, ``layout:*`` tomorrow): the
manifest keeps an entry per collection, each naming its own run and settings.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "solve.json"
STAMP = "run.json"
STAGING_PREFIX = ".staging-"
FORMAT = 2  # the manifest's format: a manifest of another is refused, naming the command that remakes it


class ModelStoreError(Exception):
    """A model folder that cannot serve ``--predict-only``; the message names what is wrong."""


def slug(collection_name: str) -> str:
    """Folder name of a collection's saved model: ``layout:xla:random`` -> ``layout_xla_random``."""
    return collection_name.replace(":", "_")


def _write_json_atomically(path: Path, record: Mapping) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


def read_manifest(model_dir: Path) -> dict:
    path = model_dir / MANIFEST
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelStoreError(f"{path}: unreadable ({exc}); run without --predict-only to retrain") from None
    return record if isinstance(record, dict) else {}


@dataclass
class Run:
    """One training run writing into ``model_dir``: ``path_for`` gives each collection's staging folder."""

    model_dir: Path
    method: str
    settings: dict  # options and parameters, recorded with each collection's entry
    run_id: str

    @classmethod
    def start(cls, model_dir: Path, method: str, settings: Mapping) -> Run:
        model_dir.mkdir(parents=True, exist_ok=True)
        for leftover in model_dir.glob(STAGING_PREFIX + "*"):  # interrupted runs: nothing of theirs is in use
            shutil.rmtree(leftover, ignore_errors=True)
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        return cls(model_dir, method, dict(settings), run_id)

    @property
    def staging(self) -> Path:
        return self.model_dir / (STAGING_PREFIX + self.run_id)

    def path_for(self, collection_name: str) -> Path:
        return self.staging / slug(collection_name)

    def stamp(self, collection_name: str) -> None:
        """Mark a saved model as this run's (called after the method saved it)."""
        _write_json_atomically(self.path_for(collection_name) / STAMP,
                               {"run_id": self.run_id, "method": self.method, "collection": collection_name})

    def commit(self, collection_names: Iterable[str]) -> None:
        """Move this run's models into place and record them in the manifest: the run is complete."""
        names = list(collection_names)
        previous = read_manifest(self.model_dir)
        kept = previous.get("collections", {}) if previous.get("method") == self.method else {}
        if not isinstance(kept, dict):  # a format-1 manifest: its entries carry no run ids
            kept = {}
        for name in names:
            target = self.model_dir / slug(name)
            if target.exists():
                retired = self.staging / (".old-" + slug(name))
                os.replace(target, retired)
            os.replace(self.path_for(name), target)
        entries = {**kept, **{name: {"run_id": self.run_id, **self.settings} for name in names}}
        _write_json_atomically(self.model_dir / MANIFEST,
                               {"format": FORMAT, "method": self.method, "collections": entries})
        shutil.rmtree(self.staging, ignore_errors=True)

    def abandon(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def check_saved_run(model_dir: Path, method: str, collection_names: Iterable[str]) -> dict[str, Path]:
    """The model folder of each collection, after checking that each comes whole from a completed run.

    Raises ModelStoreError naming every missing, mixed or foreign folder, before any work is done.
    """
    manifest_path = model_dir / MANIFEST
    record = read_manifest(model_dir)
    if not record:
        raise ModelStoreError(f"{model_dir}: no saved models here ({MANIFEST} is missing); run without "
                              "--predict-only first (or point --model-dir at the folder a "
                              "previous run wrote)")
    saved = record.get("method")
    if saved != method:
        raise ModelStoreError(f"{model_dir} holds {saved!r} models, not {method!r}; choose --method {saved} "
                              f"or another --model-dir")
    entries = record.get("collections")
    if record.get("format") != FORMAT or not isinstance(entries, dict):
        raise ModelStoreError(f"{manifest_path}: a manifest of format {record.get('format')!r}, this kit "
                              f"reads format {FORMAT} only (which run wrote each model is not known, so a "
                              "mix of runs cannot be ruled out); retrain (run without --predict-only)")
    problems = []
    folders = {}
    for name in collection_names:
        folder = model_dir / slug(name)
        entry = entries.get(name)
        if entry is None:
            listed = ", ".join(entries) or "none"
            problems.append(f"{name}: no model in this folder (its completed runs cover: {listed})")
            continue
        try:
            stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            problems.append(f"{name}: {folder} is missing or has no run stamp ({STAMP}); the run "
                            f"that listed it ({entry.get('run_id')}) did not leave it whole")
            continue
        if stamp.get("run_id") != entry.get("run_id"):
            problems.append(f"{name}: {folder} was written by run {stamp.get('run_id')} but "
                            f"{MANIFEST} lists run {entry.get('run_id')} (an interrupted run?)")
            continue
        folders[name] = folder
    if problems:
        raise ModelStoreError(f"{model_dir}: the saved models do not come from completed runs; run without "
                              f"--predict-only to retrain:\n  " + "\n  ".join(problems))
    return folders
