"""confluent-kafka helpers shared by the groupcoord.testing tests: a consumer's settings and
a consumer polled on its own thread."""

from __future__ import annotations

import threading

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from groupcoord.testing import Broker


def confluent_config(broker: Broker, group: str, client_id: str, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **extra,
    }


class Polling:
    """A confluent-kafka consumer polled on its own thread (poll drives its group protocol),
    recording what it consumed and what its rebalance callbacks saw."""

    def __init__(self, config: dict[str, object], topics: list[str]) -> None:
        self.consumer = Consumer(config)
        self.assigned: set[tuple[str, int]] = set()
        self.values: list[bytes] = []
        self.lock = threading.Lock()
        self.paused = threading.Event()
        self._stop = threading.Event()

        def on_assign(_c: Consumer, parts: list[CTopicPartition]) -> None:
            with self.lock:
                self.assigned |= {(p.topic, p.partition) for p in parts}

        def on_revoke(_c: Consumer, parts: list[CTopicPartition]) -> None:
            with self.lock:
                self.assigned -= {(p.topic, p.partition) for p in parts}

        self.consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self.consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                with self.lock:
                    self.values.append(msg.value())

    def owned(self) -> set[tuple[str, int]]:
        with self.lock:
            return set(self.assigned)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(30)
        self.consumer.close()
