"""Command line: ``groupcoord serve`` (and, later, more subcommands registered the same way).

Each subcommand module offers ``register(subparsers)``, which adds its parser and sets
``func`` to the callable that runs it and returns the exit status.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError


def _serve(args: argparse.Namespace) -> int:
    overrides = list(args.set or [])
    if args.listen:
        overrides.append(f"listeners=PLAINTEXT://{args.listen}")
    logging.basicConfig(  # before loading: the Kafka keys ignored are logged while loading
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = BrokerConfig.load(args.config, overrides)
    except ConfigError as exc:
        print(f"groupcoord: configuration error: {exc}", file=sys.stderr, flush=True)
        return 2
    data_dir = Path(args.data_dir) if args.data_dir else Path(config.log_dirs.split(",")[0])

    def announce(host: str, port: int) -> None:
        print(f"groupcoord listening on {host}:{port}", flush=True)

    from groupcoord.app import StartupError, run_blocking

    try:
        run_blocking(config, data_dir, on_listening=announce, brokers=args.brokers)
    except StartupError as exc:
        print(f"groupcoord: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def register_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("serve", help="run the broker")
    p.add_argument("--listen", metavar="HOST:PORT", help="address to listen on (port 0 picks a free port)")
    p.add_argument("--data-dir", metavar="DIR", help="data directory (default: log.dirs, ./data)")
    p.add_argument("--config", metavar="FILE", help="server.properties file (Kafka property names)")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", help="override one property (repeatable)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--brokers",
        type=int,
        default=1,
        metavar="N",
        help="serve N brokers (node ids 0..N-1) in this process, each listener of node i on its port + i or "
        "on node.<i>.listeners (docs/cluster.md)",
    )
    p.set_defaults(func=_serve)


#: Subcommand registrars; others add theirs here (``groups``, ``analyze``, ``simulate``).
REGISTRARS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [register_serve]


def _register_tools(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The admin and pipeline subcommands. Imported here, not at the top: their modules pull in the
    admin client (and its wire protocol), about half a second that ``groupcoord serve`` does not
    need before it listens (docs/benchmarks.md, "Broker start")."""
    from groupcoord.admin import acls as admin_acls
    from groupcoord.admin import groups as admin_groups
    from groupcoord.admin import quotas as admin_quotas
    from groupcoord.admin import topics as admin_topics
    from groupcoord.pipeline import cli as pipeline_cli

    admin_groups.register(subparsers)  # groupcoord groups list|describe|reset-offsets|delete|delete-offsets
    admin_topics.register(subparsers)  # groupcoord topics list|describe|create|delete|alter
    admin_acls.register(subparsers)  # groupcoord acls list|add|remove, users list|add|remove
    admin_quotas.register(subparsers)  # groupcoord quotas list|alter
    pipeline_cli.register(subparsers)  # groupcoord analyze|simulate


def build_parser(*, tools: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``tools=False`` leaves out the admin and pipeline subcommands."""
    parser = argparse.ArgumentParser(prog="groupcoord", description="A Kafka-compatible broker")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in REGISTRARS:
        register(subparsers)
    if tools:
        _register_tools(subparsers)
    return parser


def _without_hypothesis() -> None:
    """Make ``import hypothesis`` fail in this process (``sys.modules[name] = None`` is Python's
    documented way to block an import).

    kio (the message schemas) registers a Hypothesis strategy for each of its primitive types when
    ``hypothesis`` is importable, which imports Hypothesis: 0.1 to 0.2 s of CPU at every broker start
    in an environment that has it (a development one), for strategies a broker never draws from.
    Called only for ``groupcoord serve`` run as its own process (``main()`` without ``argv``), never
    when a test calls :func:`main` in its own interpreter."""
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]


def main(argv: Sequence[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else list(argv)
    serving = bool(args_list) and args_list[0] == "serve"
    if serving and argv is None:
        _without_hypothesis()
    # ``serve`` parses with a parser of the registered commands only, so starting a broker does not
    # import the admin tools; any other command line (``--help`` included) gets every subcommand.
    parser = build_parser(tools=not serving)
    args = parser.parse_args(args_list)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
