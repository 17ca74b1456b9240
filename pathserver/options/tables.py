"""The option tables, written from :data:`pathserver.options.OPTIONS`: what ``pathserver
options`` prints (:func:`text_table`, :func:`as_json`) and the tables of
``docs/protocol.md`` and ``docs/guide.md`` (:func:`markdown_table`,
:func:`query_options_table`; a test compares them).
"""

from __future__ import annotations

from pathserver.options import OPTIONS, PER_REQUEST, QUERY_OPS, WIRE_OPTIONS, Option, spelled


def as_json() -> dict:
    """What ``pathserver options --json`` prints: ``{"options": [{"name", "kind",
    "choices" (enums and space only), "wire_default", "python_default", "min", "max"
    (points and cells only), "ops", "doc"}, ...]}`` in :data:`OPTIONS` order; ``ops``: the
    wire requests that take the option."""
    entries = []
    for option in WIRE_OPTIONS:
        entry = {"name": option.name, "kind": option.kind}
        if option.choices:
            entry["choices"] = list(option.choices)
        entry.update(wire_default=option.wire_default, python_default=option.python_default, min=option.min)
        if option.max is not None:
            entry["max"] = option.max
        entry.update(ops=list(option.ops), doc=option.doc)
        entries.append(entry)
    return {"options": entries}


def _type_text(option: Option) -> str:
    if option.choices:
        return " / ".join(f'`"{choice}"`' for choice in option.choices)
    if option.kind == "unit_size":
        return "int or `[w, h]`"
    if option.kind == "bool":
        return "bool"
    if option.kind in _SHAPES:
        return _SHAPES[option.kind].format(option=option)
    return f"{'int' if option.kind == 'int' else 'number'} >= {option.min:g}"


_SHAPES = {
    "points": "`[[x, y], ...]`, {option.min} to {option.max}",
    "rect": "`[x, y, w, h]`",
    "cells": "`{{cells, rects}}`, at most {option.max}",
    "traversal": "str or `{{tag: null | number >= 1}}`",
}


def _default_text(option: Option, value) -> str:
    return option.default_doc if value is None else f"`{spelled(value)}`"


def _ops_text(option: Option) -> str:
    return ", ".join(f"`{op}`" for op in option.ops)


def markdown_table() -> str:
    """The options table of ``docs/protocol.md`` (wire defaults, the requests taking each);
    a test compares the two."""
    rows = ["| option | type | default | requests | |", "| --- | --- | --- | --- | --- |"]
    for option in WIRE_OPTIONS:
        cells = (f"`{option.name}`", _type_text(option), _default_text(option, option.wire_default),
                 _ops_text(option), option.doc)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


def text_table() -> str:
    """What ``pathserver options`` prints: a line an option (type, defaults, flag, the
    wire requests taking it), its doc line below it."""
    width = max(len(option.name) for option in OPTIONS) + 2
    lines = []
    for option in OPTIONS:
        wire = _default_text(option, option.wire_default)
        python = _default_text(option, option.python_default)
        default = f"default {wire}" if wire == python else f"default {wire} on the wire, {python} in Python"
        flag = f"; flag {option.cli}" if option.cli else ""
        lines.append(f"{option.name:<{width}}{_type_text(option)}; {default}{flag}; {', '.join(option.ops)}"
                     .replace("`", ""))
        lines.append(" " * width + option.doc.replace("`", ""))
    return "\n".join(lines)


def query_options_table() -> str:
    """A markdown table of the options of the queries beyond one path (those some query op
    or :data:`PER_REQUEST` names), with their Python defaults, the wire requests and the
    Python functions taking each (for the README)."""
    rows = ["| option | type | default | requests | functions | |", "| --- | --- | --- | --- | --- | --- |"]
    for option in OPTIONS:
        if option.name not in PER_REQUEST and not set(option.ops) & set(QUERY_OPS):
            continue
        cells = (f"`{option.name}`", _type_text(option), _default_text(option, option.python_default),
                 _ops_text(option), ", ".join(f"`{f}`" for f in option.functions), option.doc)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
