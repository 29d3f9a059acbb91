"""The optional compiled build: the broker's hot path compiled to C with mypyc.

The package's metadata lives in pyproject.toml; this file only adds extension modules, and only
when ``GROUPCOORD_COMPILE=1`` is set (the Makefile sets it for ``make run`` and ``make test``):

    GROUPCOORD_COMPILE=1 .venv/bin/python setup.py build_ext --inplace

mypyc compiles the modules below from their type annotations, into one shared library and a small
extension module beside each source file. Without the variable (a plain ``pip install``), nothing is
compiled and the same modules run as Python. A build that succeeds writes
``src/groupcoord/native-build.json``: the compiled modules and a digest of each source, which
:mod:`groupcoord.native` checks at import, so that a source edited after the build runs as written,
not as compiled (docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"

#: The request path of the coordinator, from the socket to the log and back: the modules a commit,
#: heartbeat, join or sync runs through (bench/commit_probe.py's profiles). The classic side of the
#: coordinator is compiled whole (its shard and managers call each other directly), and with it the
#: runtime that hosts its shards and the group coordinator that routes to them. Of the consumer
#: groups of KIP-848 (coordinator/consumer/), the modules a ConsumerGroupHeartbeat runs through
#: (bench/stable848_bench.py's heartbeat and form workloads): the manager, the group and member
#: model, reconciliation, the target builder and the uniform assignor, the records and their
#: replay, and kio's conversion at the edge. The rarer paths (describe, the range assignor,
#: classic members, migration, regexes' compilation) and the shard glue
#: (coordinator/consumer_groups.py) run as Python beside them.
NATIVE_MODULES = (
    "groupcoord/clock.py",
    "groupcoord/timer.py",
    "groupcoord/handling/context.py",
    "groupcoord/handling/loop_timers.py",
    "groupcoord/protocol/framing.py",
    "groupcoord/protocol/headers.py",
    "groupcoord/protocol/hot.py",
    "groupcoord/protocol/group_messages.py",
    "groupcoord/server/connection.py",
    "groupcoord/server/output.py",
    "groupcoord/server/dispatch.py",
    "groupcoord/runtime/answers.py",
    "groupcoord/runtime/coordinator_runtime.py",
    "groupcoord/runtime/group_coordinator.py",
    "groupcoord/runtime/group_handlers.py",
    "groupcoord/runtime/group_runtime.py",
    "groupcoord/runtime/loader.py",
    "groupcoord/coordinator/classic_group.py",
    "groupcoord/coordinator/classic_messages.py",
    "groupcoord/coordinator/classic_rebalance.py",
    "groupcoord/coordinator/config.py",
    "groupcoord/coordinator/consumer/api.py",
    "groupcoord/coordinator/consumer/assignment.py",
    "groupcoord/coordinator/consumer/config.py",
    "groupcoord/coordinator/consumer/group.py",
    "groupcoord/coordinator/consumer/kio_adapter.py",
    "groupcoord/coordinator/consumer/manager.py",
    "groupcoord/coordinator/consumer/member.py",
    "groupcoord/coordinator/consumer/metadata.py",
    "groupcoord/coordinator/consumer/reconcile.py",
    "groupcoord/coordinator/consumer/regexes.py",
    "groupcoord/coordinator/consumer/records.py",
    "groupcoord/coordinator/consumer/replay.py",
    "groupcoord/coordinator/consumer/target.py",
    "groupcoord/coordinator/consumer/uniform_assignor.py",
    "groupcoord/coordinator/consumer/validation.py",
    "groupcoord/coordinator/context.py",
    "groupcoord/coordinator/events.py",
    "groupcoord/coordinator/group.py",
    "groupcoord/coordinator/groups.py",
    "groupcoord/coordinator/offset_messages.py",
    "groupcoord/coordinator/offsets.py",
    "groupcoord/coordinator/records.py",
    "groupcoord/coordinator/result.py",
    "groupcoord/coordinator/shard.py",
    "groupcoord/coordinator/state.py",
    "groupcoord/coordinator/timers.py",
    "groupcoord/coordinator/txn_offsets.py",
    "groupcoord/coordinator/writes.py",
    "groupcoord/formats/batch.py",
    "groupcoord/storage/journal.py",
    "groupcoord/storage/log.py",
    "groupcoord/storage/log_producers.py",
    "groupcoord/storage/log_results.py",
    "groupcoord/storage/log_scans.py",
    "groupcoord/storage/segment.py",
    "groupcoord/broker/durability.py",
)

#: The shared library's name (``src/groupcoord_native__mypyc.*.so``).
GROUP_NAME = "groupcoord_native"
MANIFEST = SRC / "groupcoord" / "native-build.json"


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _digests() -> dict[str, str]:
    return {_module_name(p): hashlib.sha256((SRC / p).read_bytes()).hexdigest() for p in NATIVE_MODULES}


class build_native(build_ext):
    """build_ext that writes the manifest only once every extension is built (groupcoord.native)."""

    digests: dict[str, str] = {}

    def run(self) -> None:
        if not self.extensions:  # a plain (editable) install: an earlier build stays as it was
            super().run()
            return
        MANIFEST.unlink(missing_ok=True)  # a failed build leaves none: the sources run
        super().run()
        MANIFEST.write_text(json.dumps({"group": GROUP_NAME, "modules": self.digests}, indent=1) + "\n")


def _native_extensions() -> list:  # type: ignore[type-arg]
    from mypyc.build import mypycify

    # The digests of the sources as mypyc reads them, just below.
    build_native.digests = _digests()
    # opt_level 1: within noise of mypyc's default 3 on bench/commit_probe.py, and a third less
    # time in the C compiler, which every fresh `make test` pays.
    return mypycify(
        [f"src/{p}" for p in NATIVE_MODULES], opt_level="1", debug_level="0", group_name=GROUP_NAME
    )


ext_modules = _native_extensions() if os.environ.get("GROUPCOORD_COMPILE") == "1" else []

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_native})
