"""What every ``groupcoord`` admin verb's command line shares: the options that reach a broker,
the exit statuses of its errors, and its output as a table or as JSON.

A verb's ``run(args)`` wrapped by :func:`guarded` exits 2 on a :class:`UsageError` (a mistake in
the command line) and 1 on any other :class:`AdminError` (the broker refused, or could not be
reached), with one line ``groupcoord <command>: <message>`` on stderr: never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from groupcoord.admin.client import DEFAULT_BOOTSTRAP, AdminError, UsageError

Run = Callable[[argparse.Namespace], int]


def connection_options(p: argparse.ArgumentParser) -> None:
    """``--bootstrap HOST:PORT`` and ``--timeout SECONDS`` (the socket timeout)."""
    p.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        default=DEFAULT_BOOTSTRAP,
        help=f"a broker to ask (default {DEFAULT_BOOTSTRAP})",
    )
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="socket timeout")


def guarded(run: Run) -> Run:
    """``run`` with its errors turned into one line on stderr and the exit status (2: usage,
    1: any other admin error)."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except UsageError as exc:
            sys.stderr.write(f"groupcoord {args.command}: {exc}\n")
            return 2
        except AdminError as exc:
            sys.stderr.write(f"groupcoord {args.command}: {exc}\n")
            return 1

    return wrapper


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a plain-text table: left-aligned columns two spaces apart, no trailing blanks."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """``data`` as indented JSON when ``--json`` was given, else ``text``, on stdout."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.json else text)


__all__ = ["connection_options", "emit", "guarded", "table"]
