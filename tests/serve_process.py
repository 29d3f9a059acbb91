"""``groupcoord serve`` as a child process, for the tests that need the real command (its
configuration, its signals, its sockets) rather than ``groupcoord.testing``'s Broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from groupcoord.testing.control import LISTENING_PREFIX


def serve_argv(data_dir: Path, *args: str) -> list[str]:
    """``python -m groupcoord serve --listen 127.0.0.1:0 --data-dir DATA_DIR ARGS...``"""
    return [
        sys.executable,
        "-m",
        "groupcoord",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(data_dir),
        *args,
    ]


def start_serve(
    data_dir: Path, *args: str, stderr: int = subprocess.PIPE
) -> tuple[subprocess.Popen[str], int]:
    """Start :func:`serve_argv` with its stdout piped and wait for its first line,
    ``groupcoord listening on 127.0.0.1:PORT``; the process (the caller stops it by PID) and the
    port. ``stderr``: a pipe the caller reads (``communicate``) or ``subprocess.DEVNULL``."""
    proc = subprocess.Popen(serve_argv(data_dir, *args), stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    prefix = f"{LISTENING_PREFIX}127.0.0.1:"
    assert line.startswith(prefix), line
    return proc, int(line[len(prefix) :])
