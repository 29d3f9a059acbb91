"""The control channel of ``Broker(subprocess=True)``: the same Broker API across a process.

The child is ``python -m groupcoord.testing`` (the package's ``__main__``; never
``groupcoord serve``: production brokers have no control channel). It runs an in-process
:class:`~groupcoord.testing.Broker` on the given port and data, and a second listener on
127.0.0.1, port 0, for the test process: one JSON object a line in, one a line out. Each
request names a :class:`Broker` method of :data:`OPERATIONS` with its arguments and carries
the token the parent put in the child's environment (``GROUPCOORD_TESTING_CONTROL_TOKEN``),
so no other local process can steer it. The addresses go to the parent on the child's
stdout, as its first lines (the metrics line only when ``metrics.listen`` is set)::

    groupcoord listening on 127.0.0.1:PORT
    groupcoord metrics on http://127.0.0.1:PORT/metrics
    groupcoord control on 127.0.0.1:PORT

SIGTERM stops the broker cleanly and ends the child; the parent's hard stop is a SIGKILL. The
child also stops (cleanly) when its stdin, a pipe from the parent, reaches its end: so a test
process that dies without stopping its broker does not leave the child running.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import signal
import socket
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

__all__ = [
    "CONTROL_PREFIX",
    "LISTENING_PREFIX",
    "METRICS_PREFIX",
    "OPERATIONS",
    "TOKEN_ENV",
    "ControlClient",
    "serve_control",
    "stop_on_signal",
    "stop_when_orphaned",
]

LISTENING_PREFIX = "groupcoord listening on "
CONTROL_PREFIX = "groupcoord control on "
METRICS_PREFIX = "groupcoord metrics on "
TOKEN_ENV = "GROUPCOORD_TESTING_CONTROL_TOKEN"

#: What the parent may call: Broker methods (and two reads of its fault injector).
OPERATIONS = frozenset(
    {
        "advance",
        "fail_next",
        "delay",
        "disconnect",
        "drop_heartbeats",
        "clear_faults",
        "pending_failures",
        "pending_disconnections",
        "groups_seen",
        "forget_groups",
        # a Cluster's (groupcoord.testing.cluster)
        "stop_broker",
        "start_broker",
        "move_leader",
        "elect_preferred_leaders",
    }
)
#: Exceptions that cross the channel as themselves (anything else becomes a RuntimeError).
_EXCEPTIONS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "RuntimeError": RuntimeError,
    "AssertionError": AssertionError,
}


class ControlClient:
    """The parent's end: one short connection per call."""

    def __init__(self, host: str, port: int, token: str, timeout: float = 60.0) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.timeout = timeout

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        request = {"token": self.token, "op": op, "args": list(args), "kwargs": kwargs}
        with socket.create_connection((self.host, self.port), timeout=self.timeout) as sock:
            sock.sendall(json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as reader:
                line = reader.readline()
        if not line:
            raise RuntimeError(f"the broker process closed the control channel during {op}()")
        answer = json.loads(line)
        if answer.get("ok"):
            return answer.get("result")
        error = _EXCEPTIONS.get(str(answer.get("error")), RuntimeError)
        raise error(answer.get("message", ""))


def serve_control(broker: Any, listener: socket.socket, token: str) -> None:
    """Answer control requests, one connection at a time, until the process is told to stop."""
    while True:
        conn, _ = listener.accept()
        with conn, conn.makefile("rb") as reader:
            line = reader.readline()
            if not line:
                continue
            conn.sendall(json.dumps(_handle(broker, line, token)).encode() + b"\n")


def _handle(broker: Any, line: bytes, token: str) -> dict[str, Any]:
    try:
        request = json.loads(line)
        if not hmac.compare_digest(str(request.get("token", "")), token):
            return {"ok": False, "error": "RuntimeError", "message": "bad control token"}
        op = request["op"]
        if op not in OPERATIONS:
            return {"ok": False, "error": "ValueError", "message": f"unknown operation {op!r}"}
        args, kwargs = request.get("args", []), request.get("kwargs", {})
        if op == "pending_failures":
            result: Any = broker.faults.pending_failures()
        elif op == "pending_disconnections":
            result = broker.faults.pending_disconnections()
        elif op == "groups_seen":
            result = sorted(broker.faults.groups_seen)
        elif op == "forget_groups":
            broker.faults.groups_seen.clear()
            result = None
        else:
            result = getattr(broker, op)(*args, **kwargs)
        return {"ok": True, "result": result}
    except Exception as exc:
        log.info("control request failed: %r", exc)
        return {"ok": False, "error": type(exc).__name__, "message": str(exc)}


def stop_on_signal(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def stop_when_orphaned() -> None:
    """Read stdin to its end (the parent closed it, or died), then stop as on SIGTERM."""
    # os.read, not sys.stdin: a daemon thread blocked in a buffered read would hold its lock
    # while the interpreter shuts down
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    os.kill(os.getpid(), signal.SIGTERM)
