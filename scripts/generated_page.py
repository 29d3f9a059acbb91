"""The command line every page generator in scripts/ shares: print, ``--write FILE`` or
``--check FILE`` (exit 1 with a regenerate hint when the committed page is stale)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def page_main(render: Callable[[], str], script: str, doc: str | None, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", metavar="FILE", help="fail when FILE differs from the generated page")
    group.add_argument("--write", metavar="FILE", help="write the generated page to FILE")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        path = Path(args.check)
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != page:
            sys.stderr.write(f"{path} is out of date; regenerate with: python {script} --write {path}\n")
            return 1
        return 0
    if args.write:
        Path(args.write).write_text(page, encoding="utf-8")
        return 0
    sys.stdout.write(page)
    return 0
