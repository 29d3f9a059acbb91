"""A test broker in a child process: ``Broker(subprocess=True)``'s half.

:class:`~groupcoord.testing.broker.Broker` runs in one of two modes; this module is the child
process's: the command line of ``python -m groupcoord.testing`` (:func:`process_argv`), the start
that reads the child's address lines from its stdout (:meth:`BrokerProcess.start`: listening,
then metrics when ``metrics.listen`` is set, then the control channel), the stop by PID (SIGTERM,
SIGKILL for a hard stop or when SIGTERM is not enough), the control channel's calls (time control
and fault injection, :mod:`groupcoord.testing.control`) and the child's stderr log, kept beside
its data directory (:func:`log_tail`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groupcoord.testing.control import (
    CONTROL_PREFIX,
    LISTENING_PREFIX,
    METRICS_PREFIX,
    TOKEN_ENV,
    ControlClient,
)


def process_argv(
    *,
    port: int,
    data_dir: Path,
    log_level: int,
    security_protocol: str,
    settings: Mapping[str, str],
    extra: Sequence[str] = (),
) -> list[str]:
    """The command line of the child broker (``python -m groupcoord.testing``)."""
    argv = [
        sys.executable,
        "-m",
        "groupcoord.testing",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--log-level",
        str(log_level),
        "--security-protocol",
        security_protocol,
    ]
    for k, v in settings.items():
        argv += ["--set", f"{k}={v}"]
    return argv + list(extra)


def log_path(data_dir: Path) -> Path:
    """Where a child broker's stderr goes: beside its data directory, appended across restarts."""
    return data_dir.parent / f"{data_dir.name}.log"


def log_tail(path: Path | None, lines: int) -> str:
    """The newest ``lines`` of a child broker's log (``(no log)`` if there is none)."""
    if path is None:
        return "(no log)"
    try:
        return "\n".join(path.read_text().splitlines()[-lines:])
    except OSError:
        return "(no log)"


class BrokerProcess:
    """A running child broker: its process and its control channel.

    Made by :meth:`start`; :attr:`listening` is the child's ``host:port`` and
    :attr:`metrics_url` its metrics endpoint (None without ``metrics.listen``).
    """

    def __init__(
        self, proc: subprocess.Popen[str], listening: str, metrics_url: str | None, control: ControlClient
    ) -> None:
        self.proc = proc
        self.listening = listening
        self.metrics_url = metrics_url
        self._control = control

    @classmethod
    def start(cls, argv: Sequence[str], log: Path, start_timeout: float) -> BrokerProcess:
        """Start the child, its stderr appended to ``log``, and wait (up to ``start_timeout``
        seconds) for its address lines; a child that does not report them is killed and a
        RuntimeError carries what it printed and its log."""
        token = secrets.token_hex(16)
        env = {**os.environ, TOKEN_ENV: token}
        with open(log, "a") as log_file:
            log_file.write(f"---- start: {' '.join(argv)}\n")
            log_file.flush()
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True, env=env
            )
        lines: list[str] = []

        def read_addresses() -> None:
            # listening, then metrics (only with metrics.listen), then control
            for _ in range(3):
                line = proc.stdout.readline() if proc.stdout else ""
                lines.append(line)
                if not line or line.startswith(CONTROL_PREFIX):
                    return

        reader = threading.Thread(target=read_addresses, daemon=True)
        reader.start()
        reader.join(start_timeout)
        metrics = [line for line in lines[1:-1] if line.startswith(METRICS_PREFIX)]
        if (
            len(lines) < 2
            or not lines[0].startswith(LISTENING_PREFIX)
            or not lines[-1].startswith(CONTROL_PREFIX)
            or len(metrics) != len(lines) - 2
        ):
            _stop(proc, hard=True)
            raise RuntimeError(f"the broker did not start: {lines!r}; log:\n{log_tail(log, 50)}")
        control_host, control_port = lines[-1][len(CONTROL_PREFIX) :].strip().rsplit(":", 1)
        return cls(
            proc,
            lines[0][len(LISTENING_PREFIX) :].strip(),
            metrics[0][len(METRICS_PREFIX) :].strip() if metrics else None,
            ControlClient(control_host, int(control_port), token),
        )

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``op`` on the child's broker (see :mod:`groupcoord.testing.control`)."""
        return self._control.call(op, *args, **kwargs)

    def stop(self, hard: bool) -> None:
        """Stop the child by its PID: SIGTERM (SIGKILL after 30 s), or SIGKILL at once if ``hard``."""
        _stop(self.proc, hard)


def _stop(proc: subprocess.Popen[str], hard: bool) -> None:
    if hard:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    else:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
