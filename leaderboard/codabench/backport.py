"""The rules' source, rewritten to run on Python 3.8 for the exported scoring program.

The kit is written for Python 3.11; Codabench's images run older interpreters (its default image
has Python 3.7, the maintained ``codalab-legacy`` images 3.8 and up). The scoring program carries
a copy of the rule files (``competition.sources.RULE_FILES``) in which the few constructs newer
than 3.8 are rewritten, by position in the source, leaving every other byte (comments included) as
it is:

- ``isinstance(x, A | B)`` and ``issubclass``: the union becomes the tuple ``(A, B)``;
- ``zip(..., strict=True)``: a ``zip`` of the program's own (``competition/_compat.py``) that
  checks the lengths as 3.10's does, and is the built-in ``zip`` on 3.10 and newer;
- a type alias (``Spec = dict[str, tuple[int | str, ...]]``) at module or class level: spelt with
  ``typing`` (``Dict``, ``Tuple``, ``Union``), which 3.8 can subscript.

Annotations need nothing: every rule file that has them starts with ``from __future__ import
annotations``, so they are never evaluated. Anything else this module knows to be newer than 3.8
(syntax, a builtin generic subscripted at run time, a name imported from a later ``typing`` or
standard module, a later method) refuses the export with the file, line and construct
(``BackportError``), so that a rule-file edit can never ship a program that fails on Codabench.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

TARGET = (3, 8)
TARGET_TEXT = "3.8"

COMPAT_MODULE = '''\
"""What the scoring program's copy of the rules needs on Python 3.8 and 3.9 (written by the export)."""

import builtins
import sys

if sys.version_info >= (3, 10):
    zip = builtins.zip
else:
    def zip(*iterables, strict=False):
        """``zip`` with 3.10's ``strict``: ValueError when the iterables differ in length."""
        if not strict:
            yield from builtins.zip(*iterables)
            return
        iterators = [iter(it) for it in iterables]
        while True:
            items = []
            for position, iterator in enumerate(iterators):
                try:
                    items.append(next(iterator))
                except StopIteration:
                    if position:
                        raise ValueError(f"zip() argument {position + 1} is shorter than argument 1") \\
                            from None
                    for later, rest in enumerate(iterators[1:], start=2):
                        for _ in rest:
                            raise ValueError(f"zip() argument {later} is longer than argument 1")
                    return
            yield tuple(items)
'''
COMPAT_IMPORT = "from competition import _compat as _compat"
TYPING_IMPORT = "import typing as _typing"

_BUILTIN_GENERICS = {
    "dict": "Dict",
    "list": "List",
    "tuple": "Tuple",
    "set": "Set",
    "frozenset": "FrozenSet",
    "type": "Type",
}
# Names that a later Python added, by module: importing them is refused.
_LATER_NAMES = {
    "typing": {
        "Self": "3.11",
        "TypeAlias": "3.10",
        "ParamSpec": "3.10",
        "TypeGuard": "3.10",
        "Concatenate": "3.10",
        "Never": "3.11",
        "LiteralString": "3.11",
        "Required": "3.11",
        "NotRequired": "3.11",
        "Unpack": "3.11",
        "TypeVarTuple": "3.11",
        "assert_never": "3.11",
        "reveal_type": "3.11",
        "dataclass_transform": "3.11",
        "override": "3.12",
        "Annotated": "3.9",
    },
    "functools": {"cache": "3.9"},
    "itertools": {"pairwise": "3.10", "batched": "3.12"},
    "math": {"lcm": "3.9", "nextafter": "3.9", "ulp": "3.9", "cbrt": "3.11", "exp2": "3.11"},
    "enum": {"StrEnum": "3.11", "verify": "3.11"},
    "datetime": {"UTC": "3.11"},
}
_LATER_MODULES = {"zoneinfo": "3.9", "graphlib": "3.9", "tomllib": "3.11"}
_LATER_METHODS = {"removeprefix": "3.9", "removesuffix": "3.9", "bit_count": "3.10"}
_LATER_DATACLASS_ARGS = {"slots": "3.10", "kw_only": "3.10", "match_args": "3.10", "weakref_slot": "3.11"}


class BackportError(ValueError):
    """A rule file uses something newer than Python 3.8 that the export cannot rewrite."""


@dataclass
class _Edit:
    start: int  # byte offsets into the source
    end: int
    text: str


class _Rewriter(ast.NodeVisitor):
    def __init__(self, source: bytes, name: str) -> None:
        self.source = source
        self.name = name
        self.lines = [0]
        for line in source.splitlines(keepends=True):
            self.lines.append(self.lines[-1] + len(line))
        self.edits: list[_Edit] = []
        self.needs_compat = False
        self.needs_typing = False
        self.handled: set[int] = set()  # id() of nodes already rewritten (their insides are not checked)
        self.depth = 0  # inside a function body (0: module or class level)

    # -- positions -------------------------------------------------------------------------------

    def offset(self, line: int, col: int) -> int:
        return self.lines[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),
        )  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end].decode()

    def refuse(self, node: ast.AST, what: str, version: str) -> None:
        raise BackportError(
            f"{self.name}:{getattr(node, 'lineno', 0)}: {what} needs Python {version}; the "
            f"Codabench scoring program runs on Python {TARGET_TEXT} and newer: write it "
            f"another way in the rule file"
        )

    def check_annotation(self, annotation: ast.expr) -> None:
        """An annotation of a file without ``from __future__ import annotations``: evaluated at import."""
        for node in ast.walk(annotation):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                self.refuse(
                    node,
                    "an X | Y annotation evaluated at import (the file has no 'from "
                    "__future__ import annotations')",
                    "3.10",
                )
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in _BUILTIN_GENERICS
            ):
                self.refuse(
                    node,
                    f"a {node.value.id}[...] annotation evaluated at import (the file has no "
                    "'from __future__ import annotations')",
                    "3.9",
                )

    # -- the constructs ----------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        self.depth += 1
        for statement in node.body:
            self.visit(statement)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's naming

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:  # the annotation is a string under `from __future__ import annotations`
            self._maybe_alias(node.value)
            self.visit(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.depth == 0 and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._maybe_alias(node.value)
        self.generic_visit(node)

    def _maybe_alias(self, value: ast.expr) -> None:
        if self.depth == 0 and _is_type_expression(value) and _has_later_typing(value):
            start, end = self.span(value)
            self.edits.append(_Edit(start, end, ast.unparse(_as_typing(value))))
            self.needs_typing = True
            self.handled.update(id(n) for n in ast.walk(value))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            kinds = node.args[1]
            if isinstance(kinds, ast.BinOp) and isinstance(kinds.op, ast.BitOr):
                members = _union_members(kinds)
                start, end = self.span(kinds)
                self.edits.append(_Edit(start, end, "(" + ", ".join(self.text(m) for m in members) + ")"))
                self.handled.update(id(n) for n in ast.walk(kinds))
        if isinstance(func, ast.Name) and func.id == "zip" and any(k.arg == "strict" for k in node.keywords):
            start, end = self.span(func)
            self.edits.append(_Edit(start, end, "_compat.zip"))
            self.needs_compat = True
        if isinstance(func, ast.Attribute) and func.attr in _LATER_METHODS:
            self.refuse(node, f".{func.attr}()", _LATER_METHODS[func.attr])
        if _names_dataclass(func):
            for keyword in node.keywords:
                if keyword.arg in _LATER_DATACLASS_ARGS:
                    self.refuse(node, f"dataclass({keyword.arg}=...)", _LATER_DATACLASS_ARGS[keyword.arg])
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if (
            id(node) not in self.handled
            and isinstance(node.value, ast.Name)
            and node.value.id in _BUILTIN_GENERICS
        ):
            self.refuse(node, f"{node.value.id}[...] evaluated at run time (outside an annotation)", "3.9")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module in _LATER_MODULES:
            self.refuse(node, f"the module {module}", _LATER_MODULES[module])
        for alias in node.names:
            version = _LATER_NAMES.get(module, {}).get(alias.name)
            if version:
                self.refuse(node, f"{module}.{alias.name}", version)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in _LATER_MODULES:
                self.refuse(node, f"the module {alias.name}", _LATER_MODULES[alias.name])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name):
            version = _LATER_NAMES.get(node.value.id, {}).get(node.attr)
            if version:
                self.refuse(node, f"{node.value.id}.{node.attr}", version)
        self.generic_visit(node)


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    return [node]


def _is_type_expression(node: ast.expr) -> bool:
    """Built only of names, attributes, subscripts, None, ``...`` and ``|``, tuples of these inside a
    subscript: an alias, never arithmetic on values."""
    if isinstance(node, ast.Name | ast.Attribute):
        return True
    if isinstance(node, ast.Constant):
        return node.value is None or node.value is Ellipsis
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_type_expression(node.left) and _is_type_expression(node.right)
    if isinstance(node, ast.Subscript):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return _is_type_expression(node.value) and all(_is_type_expression(e) for e in inner)
    return False


_BUILTIN_TYPES = {"str", "int", "float", "bool", "bytes", "bytearray", "complex", "object"}


def _has_later_typing(node: ast.expr) -> bool:
    """A builtin generic subscripted (``dict[...]``), or a union one of whose members is surely a type
    (None, a builtin type, a subscript): ``re.I | re.M`` stays the flags it is."""

    def surely_a_type(member: ast.expr) -> bool:
        return (
            (isinstance(member, ast.Constant) and member.value is None)
            or isinstance(member, ast.Subscript)
            or (isinstance(member, ast.Name) and member.id in _BUILTIN_TYPES)
        )

    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in _BUILTIN_GENERICS:
            return True
        if (
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.BitOr)
            and any(map(surely_a_type, _union_members(n)))
        ):
            return True
    return False


def _as_typing(node: ast.expr) -> ast.expr:
    """``dict[str, int | None]`` -> ``_typing.Dict[str, _typing.Union[int, None]]``."""

    def typing_name(name: str) -> ast.expr:
        return ast.Attribute(value=ast.Name(id="_typing", ctx=ast.Load()), attr=name, ctx=ast.Load())

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        members = [_as_typing(m) for m in _union_members(node)]
        return ast.Subscript(
            value=typing_name("Union"), slice=ast.Tuple(elts=members, ctx=ast.Load()), ctx=ast.Load()
        )
    if isinstance(node, ast.Subscript):
        value = node.value
        if isinstance(value, ast.Name) and value.id in _BUILTIN_GENERICS:
            value = typing_name(_BUILTIN_GENERICS[value.id])
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        converted = [_as_typing(e) for e in inner]
        slice_ = (
            ast.Tuple(elts=converted, ctx=ast.Load()) if isinstance(node.slice, ast.Tuple) else converted[0]
        )
        return ast.Subscript(value=value, slice=slice_, ctx=ast.Load())
    return node


def _names_dataclass(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "dataclass") or (
        isinstance(func, ast.Attribute) and func.attr == "dataclass"
    )


def _annotations(tree: ast.Module) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            found += [a.annotation for a in every if a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
    return found


def _insertion_line(tree: ast.Module) -> int:
    """The 0-based line before which added imports go: after the ``from __future__`` imports, else
    after the module docstring, else at the top."""
    line = 0
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__" or (
            not line
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
            and statement is tree.body[0]
        ):
            line = statement.end_lineno or line
        else:
            break
    return line


def backport(source: str, name: str) -> str:
    """``source`` (the rule file ``name``, for messages) rewritten to run on Python 3.8; BackportError
    for a construct newer than 3.8 that it cannot rewrite."""
    try:
        ast.parse(source, filename=name, feature_version=TARGET)
    except SyntaxError as exc:
        raise BackportError(
            f"{name}:{exc.lineno}: {exc.msg} (Python {TARGET_TEXT} cannot parse it; the "
            "Codabench scoring program runs on 3.8 and newer)"
        ) from None
    tree = ast.parse(source, filename=name)
    future = any(
        isinstance(s, ast.ImportFrom)
        and s.module == "__future__"
        and any(a.name == "annotations" for a in s.names)
        for s in tree.body
    )
    rewriter = _Rewriter(source.encode(), name)
    if not future:  # annotations are evaluated: they must be 3.8's
        for annotation in _annotations(tree):
            rewriter.check_annotation(annotation)
    rewriter.visit(tree)
    out = rewriter.source
    for edit in sorted(rewriter.edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text.encode() + out[edit.end :]
    text = out.decode()
    added = [
        line
        for line, needed in ((COMPAT_IMPORT, rewriter.needs_compat), (TYPING_IMPORT, rewriter.needs_typing))
        if needed
    ]
    if added:
        lines = text.splitlines(keepends=True)
        at = _insertion_line(tree)
        text = "".join(
            lines[:at] + [line + "  # added by the Codabench export\n" for line in added] + lines[at:]
        )
    ast.parse(text, filename=name, feature_version=TARGET)  # what was written parses on 3.8 too
    return text
