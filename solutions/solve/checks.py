"""The checks ``tpugraphs solve`` makes before any work: the method, the collections, the data folder
and its splits, the device, the cache folder and the torchrun world. Each failure raises ``SolveError``
with a message for the person at the keyboard (``tpugraphs solve`` prints it and exits 2)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from competition.collections import COLLECTIONS, Collection, get_collection
from competition.data.graphs import list_split
from competition.data.locate import resolve_data_dir
from competition.data.tree import split_dir
from solutions.methods.registry import MethodInfo, get_method
from solutions.store import model_store


class SolveError(Exception):
    """A problem with how ``solve`` was called or with the data it was pointed at (not a bug)."""


def collection_slug(collection: Collection) -> str:
    """Folder name of a collection's saved model: ``layout:xla:random`` -> ``layout_xla_random``."""
    return model_store.slug(collection.name)


def resolve_collections(names: Sequence[str] | None) -> tuple[Collection, ...]:
    """The collections called ``names`` (all five when None or empty), in the usual order."""
    if not names:
        return COLLECTIONS
    chosen = set()
    for name in names:
        try:
            chosen.add(get_collection(name))
        except ValueError as exc:
            raise SolveError(str(exc)) from None
    return tuple(c for c in COLLECTIONS if c in chosen)


def describe_params(method: str, *, as_json: bool = False, collections: Sequence[str] | None = None) -> str:
    """The ``--list-params`` text of a method: each setting, its default, what is allowed and its meaning
    (``as_json``: one JSON document,
    ``{"method", "collection", "settings": [{name, default, allowed, meaning}], "note"}``). With one
    collection the defaults are those it starts from. Imports nothing that training needs."""
    from solutions.settings.params import describe, format_params

    info = resolve_method(method)
    settings = info.load_settings()
    chosen = resolve_collections(collections) if collections else ()
    if len(chosen) > 1:
        raise SolveError("--list-params shows one collection's defaults; give --collection once")
    collection = chosen[0] if chosen else None
    if settings is None:
        params, note = [], ""
    elif collection is None:
        params, note = describe(settings.settings_class), settings.defaults_note()
    else:
        params = describe(settings.settings_class, settings.resolve(collection))
        note = f"the defaults {collection.name} starts from (a --param still wins)"
    if as_json:
        return json.dumps({"method": info.name, "collection": None if collection is None else collection.name,
                           "settings": [p.to_json() for p in params], "note": note}, indent=2)
    if settings is None:
        return f"--method {info.name} has no settings (--param is not used)"
    return format_params(info.name, params, note)


def parse_method_params(method: str, texts: Mapping[str, str]) -> dict[str, object]:
    """``--param`` texts -> typed values, each read by the method's schema (``solutions.settings.schema``):
    ``{"hidden": "64"}`` -> ``{"hidden": 64}``. ``SolveError`` (one line) for a name or value refused.
    Imports nothing that training needs."""
    from solutions.settings.schema import SettingError

    info = resolve_method(method)
    if not texts:
        return {}
    settings = info.load_settings()
    if settings is None:
        raise SolveError(f"--param {', '.join(texts)}: --method {info.name} has no settings")
    try:
        return settings.parse(texts)
    except SettingError as exc:
        raise SolveError(str(exc)) from None


def check_params(info: MethodInfo, collections: Sequence[Collection], params: Mapping[str, object]) -> None:
    """Resolve the settings each chosen collection will be fitted with, so that a value or a combination
    the schema refuses stops the run before any data is read or any folder is made."""
    from solutions.settings.schema import SettingError

    if not params:
        return
    settings = info.load_settings()
    if settings is None:
        raise SolveError(f"--param {', '.join(params)}: --method {info.name} has no settings")
    try:
        for collection in collections:
            settings.resolve(collection, params)
    except SettingError as exc:
        raise SolveError(str(exc)) from None


def read_params(path: str | Path, info: MethodInfo):
    """``--params PARAMS.json`` read and checked against the method's schema
    (``solutions.settings.params_file.ParamsFile``); ``SolveError`` naming the file otherwise."""
    from solutions.settings.params_file import ParamsFileError, read_params_file

    try:
        return read_params_file(path, info.name, info.load_settings())
    except ParamsFileError as exc:
        raise SolveError(f"--params {exc}") from None


def resolve_method(name: str) -> MethodInfo:
    try:
        return get_method(name)
    except ValueError as exc:
        raise SolveError(str(exc)) from None


def check_splits(data_dir: str | Path, collections: Sequence[Collection], splits: Sequence[str]) -> Path:
    """The data directory resolved (the CLI's one rule, ``resolve_data_dir``), with every split needed."""
    try:
        data_dir = resolve_data_dir(data_dir, "--data")
    except FileNotFoundError as exc:
        raise SolveError(str(exc)) from None
    for collection in collections:
        for split in splits:
            try:
                paths = list_split(data_dir, collection, split)
            except FileNotFoundError as exc:
                raise SolveError(str(exc)) from None
            if not paths:
                raise SolveError(f"{split_dir(data_dir, collection, split)}: no {split} graphs (*.npz) "
                                 "in this folder")
    return data_dir


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; any other name is checked and kept."""
    if device == "auto":
        try:
            import torch
        except ImportError:
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"
    check_device(device)
    return device


def check_device(device: str) -> None:
    if device == "cpu":
        return
    try:
        import torch
    except ImportError:
        raise SolveError(f"--device {device} needs torch, which is not installed; use --device cpu") from None
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise SolveError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise SolveError(f"--device {device}: torch sees no CUDA GPU on this machine; use --device cpu")


def check_cache_dir(cache_dir: Path | None) -> None:
    """The cache folder must be a folder this process can create and write (checked before any training)."""
    if cache_dir is None:
        return
    if cache_dir.exists() and not cache_dir.is_dir():
        raise SolveError(f"--cache-dir {cache_dir}: exists and is not a folder")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SolveError(f"--cache-dir {cache_dir}: cannot create it ({exc.strerror})") from None
    if not os.access(cache_dir, os.W_OK | os.X_OK):
        raise SolveError(f"--cache-dir {cache_dir}: not writable by this user; choose another folder")


def torchrun_world_size() -> int:
    """How many processes torchrun started (its ``WORLD_SIZE``); 1 outside torchrun."""
    text = os.environ.get("WORLD_SIZE", "1")
    try:
        return max(1, int(text))
    except ValueError:
        raise SolveError(f"WORLD_SIZE={text!r} in the environment is not a process count") from None


def check_world(world_size: int, method: MethodInfo, predict_only: bool) -> None:
    if world_size == 1:
        return
    if method.name != "gnn":
        raise SolveError(f"{world_size} processes (torchrun) train the gnn only; run --method {method.name} "
                         f"as one process (python -m solutions or tpugraphs solve)")
    if predict_only:
        raise SolveError("--predict-only trains nothing: run it as one process, not under torchrun")


def check_jobs(jobs: int, world_size: int) -> None:
    """``--jobs``: a whole number of processes, and not under torchrun (whose processes share each
    collection's training)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SolveError(f"--jobs must be a whole number of processes, 1 or more; got {jobs!r}")
    if jobs > 1 and world_size > 1:
        raise SolveError(f"--jobs {jobs} runs collections in processes of its own, and under torchrun the "
                         f"{world_size} processes already train each collection together: leave --jobs out")


def default_model_dir(out: Path) -> Path:
    return out.with_name(out.stem + ".models") if out.suffix else out.with_name(out.name + ".models")
