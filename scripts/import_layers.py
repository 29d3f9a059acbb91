"""The layers of ``src/groupcoord`` and which way their imports may point, as data, plus the check.

:data:`ALLOWED` is the rule (``design.md``, "Imports point one way"); :func:`violations` and
:func:`cycles` check a source tree against it; :func:`render` draws the table that
``docs/architecture.md`` carries between its ``layers`` markers. ``tests/test_import_layers.py``
runs all three, so the rule, the code and the page cannot drift apart.

Usage::

    python scripts/import_layers.py                              # check src/groupcoord, exit 1 on a violation
    python scripts/import_layers.py --check docs/architecture.md # the page's table is current
    python scripts/import_layers.py --write docs/architecture.md # regenerate the page's table

A *component* is a top-level module (``errors``) or a subpackage (``server``); a target in
:data:`ALLOWED` is a component, or one module of it (``coordinator.records``: a reader may take the
coordinator's record formats, not the coordinator). Every ``import`` statement counts, including those inside
functions and under ``if TYPE_CHECKING:``: a deferred import is still a dependency.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "groupcoord"
SRC = Path(__file__).resolve().parent.parent / "src" / PACKAGE

#: Leaves every layer may use: wire error codes, time, limits and internal topic names, the
#: keyed timer, Kafka's property table, the shared request types.
_BASE = ("errors", "clock", "constants", "timer", "config", "gcutil")
#: The Kafka formats a core may read: the wire protocol (and its one request codec), and the bytes
#: broker and client share - record batches, varints, compression, ConsumerProtocol.
_FORMATS = ("protocol", "formats")
#: What the member client and the admin tools must never import: the broker side (issue 24).
BROKER_SIDE = ("storage", "broker", "coordinator", "runtime", "server", "transactions")

#: component -> (what it is, the components or modules it may import besides itself).
ALLOWED: Mapping[str, tuple[str, tuple[str, ...]]] = {
    # ---- leaves
    "errors": ("wire error codes and the exceptions that carry them", ()),
    "clock": ("Clock protocol, system and manual clocks", ()),
    "constants": ("internal topic names, Java integer limits", ()),
    "gcutil": ("garbage-collector tuning", ()),
    "native": ("whether the request path runs compiled; the stale-build guard", ()),
    "timer": ("the keyed timer (pure)", ("clock",)),
    "config": (
        "broker config keyed by Kafka's property names; listeners and their security settings",
        ("constants", "errors"),
    ),
    "protocol": (
        "sans-I/O framing, headers, API keys and registry, wire primitives",
        ("constants", "errors"),
    ),
    "formats": (
        "the bytes broker and client share: record batches, varints, compression, ConsumerProtocol",
        ("errors",),
    ),
    "handling": (
        "serving a request on the event loop: RequestContext, Route, PreEncoded, FileRegion; "
        "the loop-driven keyed timer (handling.loop_timers)",
        ("clock", "timer", "protocol.api_keys"),
    ),
    "ui": ("the HTML pieces the report and the console share: badges, tables, charts, timeline", ()),
    # ---- storage
    "storage": ("segmented log in Kafka's on-disk layout", (*_BASE, "formats", "handling")),
    # ---- sans-I/O cores
    "coordinator": ("the group coordinator shard: handlers return results", (*_BASE, *_FORMATS)),
    "transactions": (
        "the transaction coordinator shard, same shape as the coordinator's; its result is the shards' one",
        (*_BASE, *_FORMATS, "coordinator.result"),
    ),
    "client": ("the member side: sans-I/O member core, assignors, consumers", (*_BASE, *_FORMATS)),
    # ---- the server knows framing, ordering and transport only
    "server": (
        "asyncio TCP server: framing, per-connection ordering, transport",
        (*_BASE, "protocol", "handling"),
    ),
    # ---- the broker's own APIs
    "broker": (
        "topics and partitions; produce, fetch, metadata and admin handlers",
        (*_BASE, *_FORMATS, "handling", "storage"),
    ),
    # ---- the coordinator runtime: drives every shard on the broker's loop and log
    "runtime": (
        "one runtime for every coordinator shard (one per internal-topic partition): append, "
        "complete on durability, timers, load and unload; the group and transaction coordinators on it",
        (
            *_BASE,
            *_FORMATS,
            "handling",
            "storage",
            "coordinator",
            "transactions",
            "broker",
        ),
    ),
    # ---- the Prometheus endpoint: hooks on the server and the runtime, state read on the loop
    "metrics": (
        "the Prometheus endpoint (metrics.listen): request and rebalance instruments, scrape-time snapshot",
        (*_BASE, *_FORMATS, "storage", "coordinator", "broker", "runtime", "server"),
    ),
    # ---- the live web console: the same hooks as metrics, state read on the loop, the report's pieces
    "console": (
        "the live web console (console.listen): group pages and live updates from group events",
        (*_BASE, "formats", "storage", "coordinator", "broker", "runtime", "metrics", "ui"),
    ),
    # ---- offline readers
    "pipeline": (
        "PySpark over the log: storage formats and coordinator records (both group types')",
        (*_BASE, "formats", "storage", "coordinator.records", "coordinator.consumer.records", "ui"),
    ),
    "admin": (
        "the CLI verbs (`groupcoord groups|topics|acls|users|quotas`) and their wire client",
        (*_BASE, *_FORMATS, "coordinator.records"),
    ),
    # ---- composition roots: they alone wire everything
    "app": ("the composition root: route table, BrokerApp, serve", ("*",)),
    "app_cluster": ("the composition root's part for several brokers in one process", ("*",)),
    "app_security": (
        "the composition root's part for security: listeners' TLS and SASL, the console's users",
        ("*",),
    ),
    "cli": ("the `groupcoord` command", ("*",)),
    "testing": ("in-process broker for tests, time control, fault injection", ("*",)),
    "__main__": ("`python -m groupcoord`", ("cli",)),
}

#: Modules allowed more than their component, and why (by design, not pending work).
MODULE_ALLOWED: Mapping[str, tuple[tuple[str, ...], str]] = {
    "pipeline.simulate": (
        ("coordinator", "runtime.group_coordinator", "runtime.in_process", "client"),
        "the simulator runs the real coordinator and member cores in virtual time (design.md, principle 1)",
    ),
}

#: Known violations waiting for a move that another part of issue 12 owns. The test fails
#: when one of them is no longer needed, so this list only shrinks.
PENDING: Mapping[str, tuple[tuple[str, ...], str]] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Import:
    importer: str  #: dotted module name without the package prefix (``server.app``)
    imported: str  #: likewise (``broker.state``)
    line: int


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def scan(root: Path = SRC) -> list[Import]:
    """Every import of the package's own modules under ``root`` (the package directory)."""
    modules = {_module_name(p, root) for p in root.rglob("*.py")}
    out: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root)
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = [PACKAGE, *name.split(".")] if name else [PACKAGE]
                    if not is_pkg:
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                # ``from pkg import sub`` imports the submodule ``pkg.sub``
                subs = [f"{module}.{a.name}" for a in node.names]
                found = [s for s in subs if s.removeprefix(PACKAGE + ".") in modules]
                targets = found or [module]
            for target in targets:
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    rel = target.removeprefix(PACKAGE).removeprefix(".")
                    if rel != name:
                        out.append(Import(importer=name, imported=rel, line=node.lineno))
    return out


def component(module: str) -> str:
    return module.split(".")[0] if module else "__init__"


def _matches(imported: str, targets: Iterable[str]) -> bool:
    for t in targets:
        if (
            t == "*"
            or imported == t
            or imported.startswith(t + ".")
            or ("." not in t and component(imported) == t)
        ):
            return True
    return False


def violations(imports: Iterable[Import]) -> list[str]:
    """Each import that points where :data:`ALLOWED` does not allow, as one line."""
    out: list[str] = []
    for imp in imports:
        src, dst = component(imp.importer), component(imp.imported)
        if src == dst or src == "__init__" or dst == "__init__":  # the package root: its version
            continue
        if src not in ALLOWED:
            out.append(f"{imp.importer}: component {src!r} is not in the layer table")
            continue
        allowed = ALLOWED[src][1]
        extra = MODULE_ALLOWED.get(imp.importer, ((), ""))[0] + PENDING.get(imp.importer, ((), ""))[0]
        if _matches(imp.imported, allowed) or _matches(imp.imported, extra):
            continue
        out.append(f"{imp.importer}:{imp.line} imports {imp.imported} ({src} may not import {dst})")
    return out


def stale_pending(imports: Iterable[Import]) -> list[str]:
    """Entries of :data:`PENDING` that no import needs any more."""
    used: set[tuple[str, str]] = set()
    for imp in imports:
        entry = PENDING.get(imp.importer)
        if entry is None or _matches(imp.imported, ALLOWED[component(imp.importer)][1]):
            continue
        for t in entry[0]:
            if _matches(imp.imported, [t]):
                used.add((imp.importer, t))
    return [f"{m} -> {t}" for m, (ts, _) in PENDING.items() for t in ts if (m, t) not in used]


def cycles(imports: Iterable[Import]) -> list[list[str]]:
    """The import cycles between modules (strongly connected components of more than one)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan; the graph is a few hundred modules deep at most
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


BEGIN = "<!-- layers:begin (generated by scripts/import_layers.py --write) -->"
END = "<!-- layers:end -->"


def render() -> str:
    """The layer table as Markdown (what ``docs/architecture.md`` carries between the markers)."""
    lines = [
        BEGIN,
        "| Component | What it is | May import (besides itself) |",
        "|---|---|---|",
    ]
    for name, (what, targets) in ALLOWED.items():
        shown = "everything" if targets == ("*",) else ", ".join(f"`{t}`" for t in targets) or "nothing"
        lines.append(f"| `{name}` | {what} | {shown} |")
    lines.append("")
    lines.append("By design, beyond their component:")
    lines.append("")
    for module, (targets, why) in MODULE_ALLOWED.items():
        lines.append(f"- `{module}` also imports {', '.join(f'`{t}`' for t in targets)}: {why}.")
    lines.append("")
    lines.append("Known violations, pending a move (the check fails once one is no longer needed):")
    lines.append("")
    for module, (targets, why) in PENDING.items():
        lines.append(f"- `{module}` imports {', '.join(f'`{t}`' for t in targets)}: {why}.")
    if not PENDING:
        lines.append("- none")
    lines.append(END)
    return "\n".join(lines) + "\n"


def current_block(text: str) -> str | None:
    start = text.find(BEGIN)
    end = text.find(END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(END)] + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", metavar="DOC", type=Path, help="fail if DOC's layer table is not current")
    group.add_argument("--write", metavar="DOC", type=Path, help="replace DOC's layer table")
    args = parser.parse_args(argv)
    if args.write is not None:
        text = args.write.read_text(encoding="utf-8")
        old = current_block(text)
        if old is None:
            print(f"{args.write}: no layers markers", file=sys.stderr)
            return 1
        args.write.write_text(text.replace(old, render()), encoding="utf-8")
        return 0
    if args.check is not None:
        if current_block(args.check.read_text(encoding="utf-8")) != render():
            print(
                f"{args.check}: layer table is stale; run scripts/import_layers.py --write", file=sys.stderr
            )
            return 1
        return 0
    imports = scan()
    problems = violations(imports) + [f"stale PENDING entry: {s}" for s in stale_pending(imports)]
    problems += ["import cycle: " + " -> ".join(c) for c in cycles(imports)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
