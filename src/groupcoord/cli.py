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

from groupcoord.admin import acls as admin_acls
from groupcoord.admin import groups as admin_groups
from groupcoord.admin import quotas as admin_quotas
from groupcoord.admin import topics as admin_topics
from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.pipeline import cli as pipeline_cli


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
        help="serve N brokers (node ids 0..N-1) in this process, each listener of node i on its port + i "
        "(docs/cluster.md)",
    )
    p.set_defaults(func=_serve)


#: Subcommand registrars; others add theirs here (``groups``, ``analyze``, ``simulate``).
REGISTRARS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [register_serve]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="A Kafka-compatible broker")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in REGISTRARS:
        register(subparsers)
    admin_groups.register(subparsers)  # groupcoord groups list|describe|reset-offsets|delete|delete-offsets
    admin_topics.register(subparsers)  # groupcoord topics list|describe|create|delete|alter
    admin_acls.register(subparsers)  # groupcoord acls list|add|remove, users list|add|remove
    admin_quotas.register(subparsers)  # groupcoord quotas list|alter
    pipeline_cli.register(subparsers)  # groupcoord analyze|simulate
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
