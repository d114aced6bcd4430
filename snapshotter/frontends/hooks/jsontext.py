"""Edit a JSON document's text in place: one member or element added, replaced or
taken out, and every other byte of the file kept as it was.

Re-serialising a person's settings file rewrites what JSON leaves free (spacing,
number spellings such as ``1.50`` or ``1e5``, ``\\u`` escapes, a one-line
layout), so an install and an uninstall would not give the file back. Here the
text is read for where each value lies (:class:`Value`, :class:`Item`) and
changed by splicing: what ``add`` puts in, ``remove`` takes out exactly, so
adding then removing an item is the identity on the bytes.

What is added is laid out on lines of its own, indented like its neighbours
(the file's own unit, two spaces where it has none), with the file's line end.
Inside an empty container it goes right after the opening bracket, so that
what stood between the brackets (nothing, in ``{}``) stays where it was:
taking the item out again leaves ``{}`` as ``{}``, and :func:`made_empty` tells
such a container from one that :func:`add` wrote whole (its closing bracket on
a line of its own).

The text must already be valid JSON (``json.loads`` said so): the scanner here
only finds where values begin and end, and a value nested too deep for
``json``'s own scanner is skipped by a loop that does not recurse.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_SPACE = re.compile(r"[ \t\r\n]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_DECODER = json.JSONDecoder()
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]')
"""A whole string (skipped by the regex engine: brackets inside it are text) or a bracket."""


@dataclass(frozen=True)
class Value:
    """Where a value lies: ``text[start:end]``, and what it is."""

    start: int
    end: int
    kind: str
    """``object``, ``array``, ``string`` or ``scalar``."""


@dataclass(frozen=True)
class Item:
    """An object's member (``key`` set, ``start`` at its key) or an array's element."""

    key: str | None
    start: int
    value: Value


def root(text: str) -> Value:
    """The document's value: all of the text but its surrounding spacing (it is
    valid JSON), found without scanning it."""
    start, end = _skip_space(text, 0), len(text.rstrip(" \t\r\n"))
    first = text[start]
    kind = "object" if first == "{" else "array" if first == "[" else "string" if first == '"' else "scalar"
    return Value(start, end, kind)


def value_at(text: str, position: int) -> Value:
    """The value that begins at ``position``."""
    first = text[position]
    if first == '"':
        return Value(position, scanstring(text, position + 1)[1], "string")
    if first in "{[":
        return Value(position, _close_of(text, position), "object" if first == "{" else "array")
    found = _SCALAR.match(text, position)
    if found is None or found.end() == position:
        raise ValueError(f"no JSON value at offset {position}")
    return Value(position, found.end(), "scalar")


def items(text: str, container: Value) -> list[Item]:
    """The members of an object, or the elements of an array, in order."""
    found: list[Item] = []
    position = _skip_space(text, container.start + 1)
    if text[position] in "}]":
        return found
    while True:
        key, start = None, position
        if container.kind == "object":
            key, position = scanstring(text, position + 1)
            position = _skip_space(text, _skip_space(text, position) + 1)  # past the colon
        value = value_at(text, position)
        found.append(Item(key, start, value))
        position = _skip_space(text, value.end)
        if text[position] in "}]":
            return found
        position = _skip_space(text, position + 1)  # past the comma


def member(text: str, container: Value, key: str) -> Item | None:
    """The object's member named ``key`` (the last, as ``json.loads`` takes it)."""
    named = [item for item in items(text, container) if item.key == key]
    return named[-1] if named else None


def decoded(text: str, value: Value) -> Any:
    return json.loads(text[value.start : value.end])


def add(text: str, container: Value, value: Any, key: str | None = None) -> str:
    """``text`` with ``value`` added last in ``container`` (as member ``key`` of an object)."""
    present = items(text, container)
    newline = "\r\n" if "\r\n" in text else "\n"
    indent = _child_indent(text, container, present)
    rendered = _render(value, _unit(text), indent, newline)
    if key is not None:
        rendered = f"{json.dumps(key, ensure_ascii=False)}: {rendered}"
    if present:
        at, inserted = present[-1].value.end, f",{newline}{indent}{rendered}"
    else:
        at, inserted = container.start + 1, f"{newline}{indent}{rendered}"
    return text[:at] + inserted + text[at:]


def replace(text: str, item: Item, value: Any) -> str:
    """``text`` with ``item``'s value replaced, laid out from the line it is on."""
    newline = "\r\n" if "\r\n" in text else "\n"
    rendered = _render(value, _unit(text), _line_indent(text, item.start), newline)
    return text[: item.value.start] + rendered + text[item.value.end :]


def remove(text: str, container: Value, index: int) -> str:
    """``text`` without item ``index`` of ``container``: with the comma and the
    spacing that :func:`add` put before it, so that removing what was added gives
    the bytes back."""
    present = items(text, container)
    if index > 0:
        start, end = present[index - 1].value.end, present[index].value.end
    elif len(present) > 1:
        start, end = present[0].start, present[1].start
    else:
        start, end = container.start + 1, present[0].value.end
    return text[:start] + text[end:]


def made_empty(text: str, container: Value) -> bool:
    """Whether an empty container spans lines (``[`` newline ``]``): what is left
    of one that :func:`add` wrote whole, once its items are out. A container
    written empty on one line (``[]``, ``{ }``), as people and agents write
    one, was there before."""
    return "\n" in text[container.start : container.end] and not items(text, container)


def _skip_space(text: str, position: int) -> int:
    found = _SPACE.match(text, position)
    return found.end() if found else position


def _close_of(text: str, position: int) -> int:
    """The offset just past the bracket that closes the one at ``position``: by
    ``json``'s C scanner, or where the nesting is too deep for it, by a loop
    that does not recurse."""
    try:
        return int(_DECODER.raw_decode(text, position)[1])
    except RecursionError:
        pass
    depth = 0
    for found in _TOKEN.finditer(text, position):
        mark = found.group()
        if mark[0] == '"':
            continue
        depth += 1 if mark in "{[" else -1
        if depth == 0:
            return found.end()
    raise ValueError("an unclosed JSON object or array")


def _line_indent(text: str, position: int) -> str:
    """The spacing that begins the line ``position`` is on."""
    line_start = text.rfind("\n", 0, position) + 1
    found = re.match(r"[ \t]*", text[line_start:position])
    return found.group() if found else ""


def _child_indent(text: str, container: Value, present: list[Item]) -> str:
    """How an item of ``container`` is indented: like the first one, where it
    begins a line; else one unit more than the line the container opens on."""
    if present:
        first = present[0].start
        line_start = text.rfind("\n", 0, first) + 1
        if line_start > container.start and not text[line_start:first].strip(" \t"):
            return text[line_start:first]
    return _line_indent(text, container.start) + _unit(text)


def _unit(text: str) -> str:
    """The file's indentation step: that of its first indented line (two spaces if none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _render(value: Any, unit: str, indent: str, newline: str) -> str:
    """``value`` as JSON on lines of its own, each after the first indented by ``indent``."""
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", newline + indent)
