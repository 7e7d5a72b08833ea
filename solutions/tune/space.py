"""The search space of a study: the settings a method's schema declares searchable (``search=`` beside
each setting's type and default, ``solutions.settings.schema``), changed by ``--space``.

``--space NAME=LOW..HIGH`` (``:log`` or ``:linear`` after it to choose the scale; without, the scale the
schema declares, else linear) searches a number between LOW and HIGH; ``--space NAME=a,b,c`` one of the
values listed. Each is held to what the setting allows (``check_search``), so a range outside it, an
empty one or an unknown name is refused in one line before any data is read. A setting fixed with
``--param`` is not searched; ``--space-only`` searches the ``--space`` settings alone.

Where a collection starts from a value outside a declared range (gbdt's tile collections have no query
size), that setting is left at the collection's own value: the space is for the regime the defaults
chose. A ``--space`` range is searched whatever the collection starts from.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from competition.collections import Collection
from solutions.settings.schema import (
    MethodSettings,
    SearchRange,
    Setting,
    SettingError,
    check_search,
    schema,
    shown_value,
    unknown_setting,
)

if typing.TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Dimension:
    """One searched setting: its schema row, its range and where the range came from."""

    row: Setting
    range: SearchRange
    origin: str  # "schema" or "--space"

    @property
    def name(self) -> str:
        return self.row.name

    def suggest(self, trial: optuna.Trial) -> object:
        """The trial's value for this setting (Optuna's sampler chooses it within the range)."""
        found = self.range
        if found.choices:
            return trial.suggest_categorical(self.name, list(found.choices))
        if self.row.value_type is int:
            return trial.suggest_int(self.name, int(found.low), int(found.high), log=found.log)
        return trial.suggest_float(self.name, float(found.low), float(found.high), log=found.log)

    def to_json(self) -> dict:
        return {"name": self.name, "range": self.range.text(), "origin": self.origin}


@dataclass(frozen=True)
class Space:
    """The dimensions searched for one collection, the fixed settings, and what was left out and why."""

    dimensions: tuple[Dimension, ...]
    fixed: dict[str, object]
    left_out: dict[str, str]  # setting -> why it is not searched here

    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    def to_json(self) -> dict:
        return {"searched": [d.to_json() for d in self.dimensions], "fixed": self.fixed,
                "left_out": self.left_out}


def parse_space(texts: Sequence[str], settings: MethodSettings) -> dict[str, SearchRange]:
    """``["learning_rate=0.01..0.2:log", "objective=lambdarank,rank_xendcg"]`` -> ranges, each checked
    against its setting; ``SettingError`` (one line, naming the ``--space`` text) otherwise."""
    rows = schema(settings.settings_class)
    found: dict[str, SearchRange] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise SettingError(f"--space {text}: expected NAME=LOW..HIGH or NAME=a,b,c, e.g. --space "
                               "learning_rate=0.01..0.2:log")
        if name not in rows:
            unknown = unknown_setting(settings.settings_class, name, settings.method)
            raise SettingError(f"--space {text}: {unknown}")
        if name in found:
            raise SettingError(f"--space {text}: {name} is given twice; give it once")
        found[name] = check_search(rows[name], _range(rows[name], value.strip(), text), f"--space {text}")
    return found


def _range(row: Setting, value: str, text: str) -> SearchRange:
    scale = None
    body = value
    for word in ("log", "linear"):
        if value.endswith(":" + word):
            scale, body = word, value[: -len(word) - 1]
    try:
        if ".." in body:
            low, high = body.split("..", 1)
            declared = row.search.log if row.search is not None and not row.search.choices else False
            return SearchRange(low=row.parse(low), high=row.parse(high),  # type: ignore[arg-type]
                               log=scale == "log" if scale else declared)
        values = [row.parse(part) for part in body.split(",")]
    except SettingError as exc:
        raise SettingError(f"--space {text}: {exc}") from None
    if scale:
        raise SettingError(f"--space {text}: a scale applies to a range LOW..HIGH, not to listed values")
    if len(values) == 1:
        raise SettingError(f"--space {text}: one value fixes the setting; use --param {row.name}="
                           f"{shown_value(values[0])}")
    return SearchRange(choices=tuple(dict.fromkeys(values)))


def build_space(settings: MethodSettings, collection: Collection, given: Mapping[str, SearchRange],
                fixed: Mapping[str, object], *, only_given: bool = False) -> Space:
    """The space searched for ``collection``: the schema's declared ranges (unless ``only_given``) with
    ``given`` (``--space``) over them, less the ``fixed`` settings (``--param``); ``SettingError`` when
    a setting is both searched and fixed or nothing is left to search."""
    both = sorted(set(given) & set(fixed))
    if both:
        raise SettingError(f"--space {both[0]} and --param {both[0]} contradict each other: a setting is "
                           f"either searched or fixed")
    start = settings.resolve(collection, fixed)  # the settings this collection starts from
    dimensions, left_out = [], {}
    for name, row in schema(settings.settings_class).items():
        if name in given:
            dimensions.append(Dimension(row, given[name], "--space"))
        elif row.search is None or only_given or name in fixed:
            continue
        elif not row.search.contains(getattr(start, name)):
            left_out[name] = (f"{collection.name} starts from {shown_value(getattr(start, name))}, outside "
                              f"{row.search.text()} (--space {name}=... searches it)")
        else:
            dimensions.append(Dimension(row, row.search, "schema"))
    if not dimensions:
        raise SettingError(f"nothing to search for {collection.name}: every searchable setting of --method "
                           f"{settings.method} is fixed or left out; name one with --space NAME=LOW..HIGH")
    return Space(tuple(dimensions), dict(fixed), left_out)


def starting_point(space: Space, settings: MethodSettings,
                   collection: Collection) -> dict[str, object] | None:
    """The values of the searched settings that the collection starts from (the first trial, so the
    defaults are measured as the search measures the rest), or None when one lies outside its range."""
    start = settings.resolve(collection, space.fixed)
    values = {d.name: getattr(start, d.name) for d in space.dimensions}
    if all(d.range.contains(values[d.name]) for d in space.dimensions):
        return values
    return None
