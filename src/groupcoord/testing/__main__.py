"""``python -m groupcoord.testing``: the child process of ``Broker(subprocess=True)``.

Started by :class:`groupcoord.testing.Broker` only (the protocol is in
:mod:`groupcoord.testing.control`): an in-process broker on the given port and data, plus the
control channel, their addresses (and the metrics endpoint's) printed on stdout.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from groupcoord.testing.broker import Broker
from groupcoord.testing.cluster import Cluster
from groupcoord.testing.control import (
    CONTROL_PREFIX,
    LISTENING_PREFIX,
    METRICS_PREFIX,
    TOKEN_ENV,
    serve_control,
    stop_on_signal,
    stop_when_orphaned,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groupcoord.testing")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log-level", type=int, default=logging.INFO)
    parser.add_argument("--security-protocol", default="PLAINTEXT")
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--node-ports", default="")
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        print(f"{TOKEN_ENV} is not set: this entry point is started by groupcoord.testing", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = dict(item.split("=", 1) for item in args.set)
    broker: Broker
    if args.brokers > 1:
        broker = Cluster(
            settings,
            brokers=args.brokers,
            data_dir=Path(args.data_dir),
            port=args.port,
            log_level=args.log_level,
            security_protocol=args.security_protocol,
        )
        if args.node_ports:
            broker.ports = [int(p) for p in args.node_ports.split(",")]
    else:
        broker = Broker(
            settings,
            data_dir=Path(args.data_dir),
            port=args.port,
            log_level=args.log_level,
            security_protocol=args.security_protocol,
        )
    signal.signal(signal.SIGTERM, stop_on_signal)
    threading.Thread(target=stop_when_orphaned, name="orphan-watch", daemon=True).start()
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        broker.start()
        print(f"{LISTENING_PREFIX}{broker.bootstrap}", flush=True)
        if broker.metrics_url is not None:
            print(f"{METRICS_PREFIX}{broker.metrics_url}", flush=True)
        print(f"{CONTROL_PREFIX}127.0.0.1:{listener.getsockname()[1]}", flush=True)
        serve_control(broker, listener, token)
    finally:
        listener.close()
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
