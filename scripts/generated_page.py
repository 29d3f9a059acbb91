"""The command line every page generator in scripts/ shares: print, ``--write FILE`` or
``--check FILE`` (exit 1 with a regenerate hint when the committed page is stale)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


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


def transitions_section(transitions: Mapping[tuple[Any, Any], str], first: Any, preface: str) -> list[str]:
    """The "Transitions" table and its mermaid diagram, for a member state machine whose table maps
    (source, target) states (enums with a string value) to the cause of the transition."""
    out = ["## Transitions\n", preface, "| From | To | Taken when |", "|---|---|---|"]
    out += [
        f"| {source.value} | {target.value} | {cause} |" for (source, target), cause in transitions.items()
    ]
    out += ["", "## Diagram\n", "```mermaid", "stateDiagram-v2", f"    [*] --> {first.value}"]
    out += [f"    {source.value} --> {target.value}" for source, target in transitions]
    out += ["```", ""]
    return out


def error_action_section(
    table: Mapping[Any, Mapping[Any, Any]], default: Any, action_text: Callable[[Any], str], looked_up_by: str
) -> list[str]:
    """The "Error -> action" table of a member: one row per (response, error code), the codes the
    member handles first (no error first), then ``(any other)`` for ``default``."""
    out = [
        "## Error -> action\n",
        "One row per (response, error code) the member handles; `NETWORK_EXCEPTION` stands for a "
        "broken connection or a timed-out request, `(any other)` for every code not listed. "
        f"{looked_up_by}\n",
        "| Response | Error | Action | Note |",
        "|---|---|---|---|",
    ]
    for api, rows in table.items():
        listed = [(code, rule) for code, rule in rows.items() if code is not default]
        listed.sort(key=lambda cr: (cr[0] is not None and cr[0].value != 0, cr[0].name if cr[0] else ""))
        for code, rule in [*listed, (default, rows[default])]:
            name = "(any other)" if code is None else code.name
            out.append(f"| {api.value} | {name} | {action_text(rule)} | {rule.note} |")
    out.append("")
    return out
