"""What the console's tests share: consumers in threads of their own, groups made by the
thousand over the wire, and a page's table read back as text."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from groupcoord.protocol.client import WireClient


class PolledConsumer:
    """A confluent-kafka consumer polled by a thread of its own (as an application would run
    it), so that it heartbeats and rejoins while the test does other things. :meth:`leave`
    closes it from that thread: a LeaveGroup."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        client_id: str,
        topics: Sequence[str],
        *,
        consumer_protocol: bool = False,
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if consumer_protocol:
            # KIP-848: the broker sets the session and heartbeat times (librdkafka refuses them)
            config["group.protocol"] = "consumer"
        else:
            config.update({"session.timeout.ms": 10_000, "heartbeat.interval.ms": 500})
        self.consumer = Consumer(config)
        self.consumer.subscribe(list(topics))
        self.assigned = threading.Event()
        self._stop = threading.Event()
        self._commits: list[list[TopicPartition]] = []
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=f"consumer-{client_id}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.consumer.poll(0.1)
                if self.consumer.assignment():
                    self.assigned.set()
                with self._lock:
                    commits, self._commits = self._commits, []
                for offsets in commits:
                    self.consumer.commit(offsets=offsets, asynchronous=False)
        finally:
            self.consumer.close()

    def commit(self, offsets: Iterable[tuple[str, int, int]]) -> None:
        with self._lock:
            self._commits.append([TopicPartition(t, p, o) for t, p, o in offsets])

    def leave(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the consumer did not close"


def commit_simple(bootstrap: str, groups: Sequence[str], topic: str, partition: int, offset: int) -> None:
    """Commit ``offset`` for each group, as a simple group (generation -1, no member): OffsetCommit
    v8 pipelined on one connection, 500 in flight. Every answer must be NONE."""
    host, port = bootstrap.rsplit(":", 1)
    with WireClient(host, int(port), client_id="console-test", timeout_s=60) as wire:
        for start in range(0, len(groups), 500):
            batch = groups[start : start + 500]
            for group in batch:
                wire.send(
                    8,
                    8,
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    member_id="",
                    group_instance_id=None,
                    topics=[
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partition_index": partition,
                                    "committed_offset": offset,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": "",
                                }
                            ],
                        }
                    ],
                )
            for group in batch:
                answer = wire.recv()
                codes = [p.error_code for t in answer.topics for p in t.partitions]
                assert codes and all(int(c) == 0 for c in codes), (group, codes)


#: JavaScript: the text of each cell of each body row of the table with this id
TABLE_JS = """(function(id){var t=document.getElementById(id);if(!t)return null;
  return Array.prototype.map.call(t.tBodies[0].rows,function(r){
    return Array.prototype.map.call(r.cells,function(c){return c.textContent})})})(%s)"""


def table_rows(page: Any, table_id: str) -> list[list[str]] | None:
    rows: list[list[str]] | None = page.eval(TABLE_JS % json.dumps(table_id))
    return rows


def wait_until(check: Any, timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll ``check()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        time.sleep(0.1)
