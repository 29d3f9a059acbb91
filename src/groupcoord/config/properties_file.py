"""Java ``.properties`` syntax (``java.util.Properties.load``): logical lines, escapes, the
first unescaped ``=``, ``:`` or white space between key and value."""

from __future__ import annotations

import re
from collections.abc import Iterable

_KEY_END = re.compile(r"(?<!\\)[=:\s]")


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``#``/``!`` comments, ``=``, ``:`` or whitespace separators,
    backslash line continuations and escapes. Later keys win."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        m = _KEY_END.search(line)
        if m is None:
            key, value = line, ""
        else:
            key = line[: m.start()]
            rest = line[m.start() :].lstrip(" \t\f")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t\f")
            value = rest
        props[_unescape(key)] = _unescape(value)
    return props
