"""``groupcoord serve`` starts without importing what it does not need before it listens and
loads (docs/benchmarks.md, "Broker start: what is imported before loading"): the admin and
pipeline subcommands, the web console and the Prometheus endpoint when they are not configured,
and Hypothesis (which kio imports for its optional strategies). Every subcommand is still there
for any other command line."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
sys.argv = ["groupcoord", "serve", "--help"]
from groupcoord import cli
try:
    cli.main()
except SystemExit:
    pass
import groupcoord.app  # what serve imports next, before it listens
loaded = [m for m, module in sys.modules.items() if module is not None]  # None: a blocked import
print(json.dumps(sorted(m for m in loaded if m.split(".")[0] in WATCH or m in WATCH_MODULES)))
"""

WATCH = ("hypothesis", "prometheus_client")
WATCH_MODULES = (
    "groupcoord.admin.command",
    "groupcoord.admin.groups",
    "groupcoord.pipeline.cli",
    "groupcoord.console.server",
    "groupcoord.metrics.endpoint",
)


def test_serve_imports_neither_the_admin_tools_nor_the_console_metrics_or_hypothesis() -> None:
    code = f"WATCH = {WATCH!r}\nWATCH_MODULES = {WATCH_MODULES!r}\n" + _PROBE
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "groupcoord serve" in out.stdout or "usage:" in out.stdout  # serve's own --help was printed
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_every_other_command_line_still_has_every_subcommand() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "groupcoord", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    for command in ("serve", "groups", "topics", "acls", "quotas", "analyze", "simulate"):
        assert command in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "reset-offsets" in out.stdout
