"""The event loop ``groupcoord serve`` runs on: uvloop where it is installed, named in the start-up log."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.app import event_loop_name


def test_event_loop_name_says_asyncio_for_the_standard_loop() -> None:
    loop = asyncio.new_event_loop()
    try:
        assert event_loop_name(loop) == f"asyncio ({type(loop).__name__})"
    finally:
        loop.close()


@pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="uvloop is not installed")
def test_serve_runs_on_uvloop_and_logs_it_once_before_listening(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path / "d"), "--log-level", "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("groupcoord listening on 127.0.0.1:")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    loop_lines = [line for line in err.splitlines() if "event loop:" in line]
    assert len(loop_lines) == 1, err
    assert loop_lines[0].endswith(f"event loop: uvloop {importlib.metadata.version('uvloop')}")
    listening = next(i for i, line in enumerate(err.splitlines()) if "listening on" in line)
    assert err.splitlines().index(loop_lines[0]) < listening
