"""One OffsetCommit and one JoinGroup through the broker, file by file (docs/architecture.md).

Plain script, not a test. Starts an in-process broker (``groupcoord.testing.Broker``), sends each
request once untraced (imports, caches) and once more while the broker's event-loop thread is
profiled, from the request's first byte to its answer, and prints, for each request:

* the ``groupcoord`` source files its Python calls went through, in order of first use;
* how many calls crossed from one layer to another (the components of
  ``scripts/import_layers.py``: ``server``, ``protocol``, ``broker``, ``runtime``,
  ``coordinator``, ``storage``, ...), and the sequence of layers those crossings make: the
  "crossings" count every change of layer between one call and the next in time, so a return
  followed by a call into another layer counts too (``server`` calls ``protocol`` twice in a row:
  ``server > protocol > server > protocol``, three crossings);
* the "layer changes": the calls made *into* another layer than their caller's (the nearest
  ``groupcoord`` frame of a layer up the stack), and the entries from the event loop (a callback
  with no layer of ours below it: the write tick, a timer, the reply's completion). This is the
  count of calls that land in a different layer; the "turns" merge a run of the same change
  (``server`` reading a frame with five calls into ``protocol`` is one turn). The leaves
  every layer uses (the clock, the keyed timers, config, ``handling``'s shared types, the gc
  helpers) and the test toolkit's own hooks (its clock and fault injector) are not layers of the
  walk: a call into one of them is neither counted as a crossing nor listed.

Run it on the sources (``GROUPCOORD_PURE=1``: a compiled module's calls are invisible to the
profiler), for this tree or another:

    GROUPCOORD_PURE=1 PYTHONPATH=src .venv/bin/python bench/request_walk.py
    GROUPCOORD_PURE=1 PYTHONPATH=/other/tree/src .venv/bin/python bench/request_walk.py
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import import_layers  # noqa: E402
from groupcoord.protocol.client import WireClient  # noqa: E402
from groupcoord.testing import Broker  # noqa: E402

OFFSET_COMMIT, JOIN_GROUP, CREATE_TOPICS = 8, 11, 19
TOPIC = "walk"


#: Components that are not a layer of the walk (see the module docstring).
TRANSPARENT = frozenset(
    {"testing", "timer", "loop_timers", "gcutil", "config", "clock", "errors", "constants", "handling"}
)


class Walk:
    """The profile of one thread: the groupcoord files called, and component crossings."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.crossings = 0
        self.path: list[str] = []
        self._last: str | None = None
        #: calls into another layer than the caller's, as "caller>callee" (or "loop>callee")
        self.changes: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        marker = "/groupcoord/"
        at = filename.rfind(marker)
        if at < 0:
            return
        rel = filename[at + len(marker) :]
        module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        comp = import_layers.component(module)
        if comp in TRANSPARENT:
            return
        if rel not in self.files:
            self.files.append(rel)
        caller = _caller_component(frame.f_back)
        if caller != comp:
            self.changes.append(f"{caller or 'loop'}>{comp}")
        if comp != self._last:
            if self._last is not None:
                self.crossings += 1
            self.path.append(comp)
            self._last = comp


def _component_of(frame: FrameType) -> str | None:
    filename = frame.f_code.co_filename
    marker = "/groupcoord/"
    at = filename.rfind(marker)
    if at < 0:
        return None
    rel = filename[at + len(marker) :]
    return import_layers.component(rel.removesuffix(".py").removesuffix("/__init__").replace("/", "."))


def _caller_component(frame: FrameType | None) -> str | None:
    """The layer of the nearest caller up the stack that is a layer of the walk (None: the loop)."""
    while frame is not None:
        comp = _component_of(frame)
        if comp is not None and comp not in TRANSPARENT:
            return comp
        frame = frame.f_back
    return None


def traced(broker: Broker, send: Callable[[], Any]) -> tuple[Walk, Any]:
    loop = broker._loop  # the broker's own event loop (groupcoord.testing runs it on a thread)
    assert loop is not None
    walk = Walk()
    ready = threading.Event()

    def on() -> None:
        sys.setprofile(walk)
        ready.set()

    loop.call_soon_threadsafe(on)
    ready.wait(10)
    answer = send()
    done = threading.Event()

    def off() -> None:
        sys.setprofile(None)
        done.set()

    loop.call_soon_threadsafe(off)
    done.wait(10)
    return walk, answer


def commit(c: WireClient, offset: int) -> Any:
    return c.call(
        OFFSET_COMMIT,
        9,
        group_id="walk-commit",
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": TOPIC,
                "partitions": [{"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}],
            }
        ],
    )


def join(c: WireClient, group: str, member_id: str) -> Any:
    return c.call(
        JOIN_GROUP,
        9,
        group_id=group,
        session_timeout=10_000,
        rebalance_timeout=10_000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"}],
        reason=None,
    )


def _turns(changes: list[str]) -> list[str]:
    """The layer changes with runs of the same one merged (``server>protocol`` five times in a row,
    the frame read and its header decoded, is one turn)."""
    return [c for i, c in enumerate(changes) if i == 0 or changes[i - 1] != c]


def report(name: str, walk: Walk) -> dict[str, Any]:
    turns = _turns(walk.changes)
    print(
        f"{name}: {len(walk.files)} files, {walk.crossings} layer crossings, "
        f"{len(walk.changes)} layer changes ({len(turns)} turns)"
    )
    print("  files: " + ", ".join(walk.files))
    print("  components: " + " > ".join(walk.path))
    print("  turns: " + ", ".join(turns))
    return {
        "files": walk.files,
        "crossings": walk.crossings,
        "components": walk.path,
        "changes": walk.changes,
    }


def main() -> None:
    out: dict[str, Any] = {}
    with Broker({"group.initial.rebalance.delay.ms": 0}) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        with WireClient(host, int(port)) as c:
            c.call(
                CREATE_TOPICS,
                4,
                topics=[
                    {
                        "name": TOPIC,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                timeout_ms=10_000,
                validate_only=False,
            )
            commit(c, 1)
            walk, _ = traced(broker, lambda: commit(c, 2))
            out["offset_commit"] = report("OffsetCommit (v9, one partition, generation -1)", walk)
            # JoinGroup: warm up with one group, then trace a new group's second join (the member
            # id given), parked until the join phase ends (initial delay 0: at once, by timer).
            first = join(c, "walk-warm", "")
            join(c, "walk-warm", str(first.member_id))
            first = join(c, "walk-join", "")
            time.sleep(0.1)
            walk, _ = traced(broker, lambda: join(c, "walk-join", str(first.member_id)))
            out["join_group"] = report("JoinGroup (v9, known member id, new group)", walk)
    print(
        json.dumps(
            {
                k: {
                    "files": len(v["files"]),
                    "crossings": v["crossings"],
                    "layer_changes": len(v["changes"]),
                    "turns": len(_turns(v["changes"])),
                }
                for k, v in out.items()
            }
        )
    )


if __name__ == "__main__":
    main()
