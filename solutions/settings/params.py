"""What ``tpugraphs solve --method M --list-params`` prints: each setting, its default, what is allowed
and its meaning, read from the method's schema (``solutions.settings.schema``)."""

from __future__ import annotations

from dataclasses import dataclass

from solutions.settings.schema import schema, shown_value


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    allowed: str  # e.g. "an integer >= 1", "one of early, intermediate"
    meaning: str

    def to_json(self) -> dict:
        return {"name": self.name, "default": self.default, "allowed": self.allowed, "meaning": self.meaning}


def describe(settings_class: type, defaults: object | None = None) -> list[Param]:
    """The settings of a settings dataclass, from its schema.

    ``defaults`` is an instance whose values are shown instead of the class defaults (e.g. the
    settings a method uses for tile collections).
    """
    return [Param(row.name, getattr(defaults, row.name) if defaults is not None else row.default,
                  row.allowed(), row.meaning) for row in schema(settings_class).values()]


def format_params(method: str, params: list[Param], note: str = "") -> str:
    width = max((len(p.name) for p in params), default=0)
    value_width = max((len(shown_value(p.default)) for p in params), default=0)
    allowed_width = max((len(p.allowed) for p in params), default=0)
    lines = [f"settings of --method {method} (tpugraphs solve --param NAME=VALUE; none, true and "
             "false as words):",
             f"  {'name':<{width}}  {'default':<{value_width}}  {'allowed':<{allowed_width}}  meaning"]
    lines += [f"  {p.name:<{width}}  {shown_value(p.default):<{value_width}}  {p.allowed:<{allowed_width}}  "
              f"{p.meaning}".rstrip() for p in params]
    if note:
        lines.append(note)
    return "\n".join(lines)
