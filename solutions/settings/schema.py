"""The typed, ranged schema of a method's settings, and the one place a setting's value is checked.

A method's settings are a dataclass (``GNNConfig``, ``GBDTSettings``) whose fields are declared with
:func:`setting`: a default, a meaning, and what is allowed (a range, a list of choices, or a check
that spells a value in its canonical form). :func:`schema` reads those fields back as
:class:`Setting` rows, and every use goes through them:

- ``tpugraphs solve --list-params`` prints each row (type, default, allowed values, meaning);
- ``tpugraphs solve --param NAME=TEXT`` is read by :func:`parse_texts` (text -> typed value, a
  misspelt name answered with the closest one) before any data is read;
- the dataclass's ``__post_init__`` calls :func:`check_settings`, so a settings object (made by the
  command line, a notebook, or a saved model being loaded) never holds a value outside its row.

A refusal is a :class:`SettingError` whose message is one line naming the setting, the value and
what is allowed, e.g. ``setting lr='fast': lr is a number > 0 (default 0.005)``.

A setting worth tuning also declares where ``tpugraphs tune`` searches it (``search=(LOW, HIGH)`` with
``scale="log"`` or ``"linear"`` for numbers, ``search_choices=(...)`` for texts and true/false): a
:class:`SearchRange` kept on its row, checked against what the setting allows when the schema is read.

:class:`MethodSettings` is the one mechanism every learned method uses: its settings dataclass and the
collections that start from other defaults, declared in the method's ``settings`` module (which
imports no torch, torch_geometric or lightgbm), and resolved once per collection
(:meth:`MethodSettings.resolve`) before a model is built.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from competition.collections import Collection

NONE_WORDS = ("none", "null")  # how a command line spells "no value" for a setting that allows one
TRUE_WORDS = ("true", "yes", "1", "on")
FALSE_WORDS = ("false", "no", "0", "off")
VALUE_TYPES = {int: "integer", float: "number", bool: "true/false", str: "text"}


class SettingError(ValueError):
    """A setting's name or value refused; the message is one line meant for the person who gave it."""


SCALES = ("linear", "log")


@dataclass(frozen=True)
class SearchRange:
    """Where ``tpugraphs tune`` looks for a setting's value unless ``--space`` says otherwise: numbers
    from ``low`` to ``high`` (``log``: on a log scale, for values that matter by their ratio), or one of
    ``choices`` (texts, true/false, or a few numbers)."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple = ()

    def text(self) -> str:
        """``0.01..0.3 (log)``, ``8..255``, ``lambdarank, rank_xendcg``: as ``--space`` spells it."""
        if self.choices:
            return ",".join(shown_value(value) for value in self.choices)
        return f"{shown_value(self.low)}..{shown_value(self.high)}{' (log)' if self.log else ''}"

    def contains(self, value: object) -> bool:
        """Whether ``value`` is one this range can give (a default enqueued as the first trial)."""
        if self.choices:
            return value in self.choices
        if value is None or isinstance(value, bool | str):
            return False
        return self.low <= value <= self.high  # type: ignore[operator]


@dataclass(frozen=True)
class Setting:
    """One row of a method's schema: what ``--param NAME=VALUE`` accepts for ``name``."""

    name: str
    value_type: type  # int, float, bool or str
    default: object
    meaning: str
    optional: bool = False  # None ("none") is allowed, with the meaning the text gives it
    low: float | None = None  # smallest allowed value (numbers)
    high: float | None = None  # largest allowed value (numbers)
    low_open: bool = False  # ``low`` itself is not allowed (e.g. a learning rate > 0)
    high_open: bool = False  # ``high`` itself is not allowed (e.g. a probability < 1)
    choices: tuple[str, ...] = ()  # the allowed texts (str settings)
    # str settings with a grammar: returns the canonical spelling, raises ValueError saying why not
    canonical: Callable[[str], str] | None = None
    grammar: str = ""  # what ``canonical`` accepts, in words (for --list-params and messages)
    search: SearchRange | None = None  # where ``tpugraphs tune`` searches it (None: not searched by default)

    @property
    def type_name(self) -> str:
        return VALUE_TYPES[self.value_type] + (" or none" if self.optional else "")

    def allowed(self) -> str:
        """What the setting accepts, in words: ``an integer >= 1``, ``one of early, intermediate``."""
        if self.choices:
            text = "one of " + ", ".join(self.choices)
        elif self.grammar:
            text = self.grammar
        elif self.value_type is bool:
            text = "true or false"
        else:
            text = ("an integer" if self.value_type is int else "a number") + self._range()
        return text + (" or none" if self.optional else "")

    def _range(self) -> str:
        low = None if self.low is None else f"{'>' if self.low_open else '>='} {_number(self.low)}"
        high = None if self.high is None else f"{'<' if self.high_open else '<='} {_number(self.high)}"
        if low and high:
            return f" {low} and {high}"
        return f" {low or high}" if low or high else ""

    def refuse(self, value: object, why: str = "", given: str | None = None) -> SettingError:
        shown = _text(given if given is not None else value if isinstance(value, str) else shown_value(value))
        return SettingError(f"setting {self.name}={shown}: {why or 'not allowed'}; {self.name} must be "
                            f"{self.allowed()} (default {shown_value(self.default)})")

    def parse(self, text: str) -> object:
        """The typed value a command-line text stands for, checked (``SettingError`` otherwise)."""
        word = text.strip()
        if self.optional and word.lower() in NONE_WORDS:
            return None
        if self.value_type is bool:
            if word.lower() in TRUE_WORDS:
                return True
            if word.lower() in FALSE_WORDS:
                return False
            raise self.refuse(text, "not true or false")
        if self.value_type is int:
            try:
                value: object = int(word)
            except ValueError:
                raise self.refuse(text, "not an integer") from None
        elif self.value_type is float:
            try:
                value = float(word)
            except ValueError:
                raise self.refuse(text, "not a number") from None
        else:
            value = word
        return self.check(value, given=text)

    def check(self, value: object, given: str | None = None) -> object:
        """``value`` if this setting allows it (str settings: in canonical spelling); ``SettingError`` if
        not."""
        if value is None:
            if self.optional:
                return None
            raise self.refuse(given=given, value=value, why="none is not allowed here")
        if self.value_type is bool:
            if not isinstance(value, bool):
                raise self.refuse(given=given, value=value, why="not true or false")
            return value
        if self.value_type is str:
            if not isinstance(value, str):
                raise self.refuse(given=given, value=value, why="not text")
            if self.choices and value not in self.choices:
                close = difflib.get_close_matches(value, self.choices, n=1)
                raise self.refuse(given=given, value=value,
                                  why=f"unknown{f' (did you mean {close[0]}?)' if close else ''}")
            if self.canonical is not None:
                try:
                    return self.canonical(value)
                except ValueError as exc:
                    raise self.refuse(given=given, value=value, why=str(exc).splitlines()[0]) from None
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(given=given, value=value,
                              why=f"not {'an integer' if self.value_type is int else 'a number'}")
        if self.value_type is int and not float(value).is_integer():
            raise self.refuse(given=given, value=value, why="not an integer")
        if not math.isfinite(value):
            raise self.refuse(given=given, value=value, why="not a finite number")
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise self.refuse(given=given, value=value, why="too small")
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            raise self.refuse(given=given, value=value, why="too large")
        return int(value) if self.value_type is int else float(value)


def setting(default: object, meaning: str = "", *, low: float | None = None,
            high: float | None = None, low_open: bool = False, high_open: bool = False,
            choices: Iterable[str] = (), canonical: Callable[[str], str] | None = None,
            grammar: str = "", search: tuple[float, float] | None = None, scale: str = "linear",
            search_choices: Iterable[object] = ()) -> typing.Any:
    """A settings-dataclass field with its schema row (the type comes from the field's annotation).

    ``search=(LOW, HIGH)`` and ``scale`` (``linear`` or ``log``), or ``search_choices``: where
    ``tpugraphs tune`` searches the setting by default (checked against what the setting allows when
    the schema is read)."""
    if scale not in SCALES:
        raise TypeError(f"setting scale={scale!r}: one of {', '.join(SCALES)}")
    found = None
    if search is not None:
        found = SearchRange(low=search[0], high=search[1], log=scale == "log")
    elif search_choices:
        found = SearchRange(choices=tuple(search_choices))
    metadata = {"setting": {"meaning": meaning, "low": low, "high": high, "low_open": low_open,
                            "high_open": high_open, "choices": tuple(choices), "canonical": canonical,
                            "grammar": grammar, "search": found}}
    return dataclasses.field(default=default, metadata=metadata)


def schema(settings_class: type) -> dict[str, Setting]:
    """The schema rows of a settings dataclass, in field order (class defaults)."""
    return _rows(settings_class)


@cache
def _rows(settings_class: type) -> dict[str, Setting]:
    hints = typing.get_type_hints(settings_class)
    rows = {}
    for field in dataclasses.fields(settings_class):
        spec = field.metadata.get("setting")
        if spec is None:
            raise TypeError(f"{settings_class.__name__}.{field.name} is not declared with setting(...)")
        where = f"{settings_class.__name__}.{field.name}"
        value_type, optional = _value_type(hints[field.name], where)
        row = Setting(field.name, value_type, field.default, optional=optional, **spec)
        if row.search is not None:
            check_search(row, row.search, where)
        rows[field.name] = row
    return rows


def check_search(row: Setting, found: SearchRange, where: str) -> SearchRange:
    """``found`` if it is a search range the setting of ``row`` allows: numbers for a number (LOW < HIGH
    and LOW > 0 on a log scale), choices for a text or true/false, each end and choice a value the setting
    accepts; ``SettingError`` (one line, beginning with ``where``) otherwise. ``--space`` is held to the same
    rule."""
    if found.choices:
        if len(set(found.choices)) < 2:
            raise SettingError(f"{where}: a search lists two or more different values; one value fixes "
                               f"the setting (--param {row.name}=VALUE)")
        for value in found.choices:
            row.check(value)
        return found
    if row.value_type not in (int, float):
        raise SettingError(f"{where}: {row.name} is {row.type_name}, searched by listing values "
                           f"({row.name}=a,b), not by a range")
    for value in (found.low, found.high):
        row.check(value)
    if not found.low < found.high:  # type: ignore[operator]
        raise SettingError(f"{where}: the range {shown_value(found.low)}..{shown_value(found.high)} is "
                           f"empty; give LOW < HIGH")
    if found.log and found.low <= 0:  # type: ignore[operator]
        raise SettingError(f"{where}: a log scale needs LOW > 0, got {shown_value(found.low)}")
    return found


def _value_type(hint: object, where: str) -> tuple[type, bool]:
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        given = [a for a in args if a is not type(None)]
        if len(given) == 1 and len(args) == 2 and given[0] in VALUE_TYPES:
            return given[0], True
    elif hint in VALUE_TYPES:
        return hint, False  # type: ignore[return-value]
    raise TypeError(f"{where}: a setting is int, float, bool or str, optionally | None; got {hint!r}")


def check_settings(settings: object) -> None:
    """Check (and put into canonical spelling) every field of a settings object; ``SettingError`` if one is
    refused.

    Called by the settings dataclasses' ``__post_init__``: whoever builds one gets a checked one.
    """
    for name, row in schema(type(settings)).items():
        object.__setattr__(settings, name, row.check(getattr(settings, name)))


def closest_name(name: str, names: Iterable[str]) -> str | None:
    """The setting ``name`` most likely stands for: the one whose words' initials it spells (``lr`` ->
    ``learning_rate``), the one it begins, or the closest spelling; None when none is close."""
    names = list(names)
    word = name.strip().lower()
    by_initials = [n for n in names if "_" in n and "".join(part[:1] for part in n.split("_")) == word]
    if len(by_initials) == 1:
        return by_initials[0]
    by_prefix = [n for n in names if len(word) >= 3 and n.startswith(word)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    close = difflib.get_close_matches(word, names, n=1)
    return close[0] if close else None


def unknown_setting(settings_class: type, name: str, method: str) -> SettingError:
    """The refusal of a name that is not a setting, with the closest one when there is one (the same
    wording for every method)."""
    close = closest_name(name, schema(settings_class))
    hint = f"; did you mean {close}?" if close else ""
    return SettingError(f"setting {name}: --method {method} has no such setting{hint} "
                        f"(tpugraphs solve --method {method} --list-params lists them)")


def parse_texts(settings_class: type, texts: Mapping[str, str], method: str) -> dict[str, object]:
    """``{"hidden": "64"}`` -> ``{"hidden": 64}``: each text read and checked by its setting's row."""
    rows = schema(settings_class)
    values = {}
    for name, text in texts.items():
        if name not in rows:
            raise unknown_setting(settings_class, name, method)
        values[name] = rows[name].parse(text)
    return values


def check_names(settings_class: type, values: Mapping[str, object], method: str) -> None:
    """Refuse any name of ``values`` that is not a setting (``GNNRanker(hiden=64)``)."""
    rows = schema(settings_class)
    for name in values:
        if name not in rows:
            raise unknown_setting(settings_class, name, method)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _text(text: str) -> str:
    """A value as given, on one line: quoted with escapes when it holds a control character, cut when long."""
    shown = text if text.isprintable() else repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def shown_value(value: object) -> str:
    """A setting's value as the CLI writes it: none, true/false, or the value."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class MethodSettings:
    """A learned method's settings: the dataclass that is their schema, and where each collection
    starts from.

    ``collection_defaults(collection)`` gives the values a collection starts from instead of the class
    defaults (empty for most); it asks the collection and its task, never a kind's name. Declared once
    per method in its ``settings`` module; the runner, ``--param``, ``--list-params`` and the saved
    models read it from there.
    """

    method: str
    settings_class: type
    collection_defaults: Callable[[Collection], Mapping[str, object]]

    def parse(self, texts: Mapping[str, str]) -> dict[str, object]:
        """``--param`` texts -> typed values (``SettingError`` naming the closest setting)."""
        return parse_texts(self.settings_class, texts, self.method)

    def defaults_for(self, collection: Collection) -> dict[str, object]:
        """The settings of ``collection`` that differ from the class defaults."""
        return dict(self.collection_defaults(collection))

    def resolve(self, collection: Collection, params: Mapping[str, object] | None = None) -> object:
        """The settings ``collection`` is fitted with: its defaults, then ``params`` (a ``--param``
        always wins). A collection default that ``params`` rule out gives way (the others are kept);
        an error left after that is the person's own (``SettingError``)."""
        params = dict(params or {})
        check_names(self.settings_class, params, self.method)
        defaults = self.defaults_for(collection)
        try:
            return self.settings_class(**{**defaults, **params})
        except SettingError:
            if not defaults:
                raise
        kept: dict[str, object] = {}
        for key, value in defaults.items():
            try:
                self.settings_class(**{**kept, key: value, **params})
            except SettingError:
                continue
            kept[key] = value
        return self.settings_class(**{**kept, **params})

    def differing_collections(self) -> dict[str, dict[str, object]]:
        """Each collection whose defaults differ from the class defaults, with what differs."""
        from competition.collections import COLLECTIONS

        return {c.name: values for c in COLLECTIONS if (values := self.defaults_for(c))}

    def defaults_note(self) -> str:
        """The ``--list-params`` lines naming the collections that start elsewhere."""
        differ = [f"{name}: " + ", ".join(f"{key}={shown_value(value)}" for key, value in values.items())
                  for name, values in self.differing_collections().items()]
        return ("collections that start from other defaults (a --param still wins; --collection NAME "
                "shows one):\n  " + "\n  ".join(differ)) if differ else ""
