"""Offsets committed inside transactions, pending until each transaction's marker.

Kafka 4.x's ``OffsetMetadataManager`` keeps them apart from the committed offsets
(``pendingTransactionalOffsets``, ``openTransactionsByGroup``): a TxnOffsetCommit's records are
durable but invisible until the producer's COMMIT marker puts them in place, or its ABORT marker
drops them. :class:`PendingTransactionalOffsets` is that state; the offsets manager
(:mod:`groupcoord.coordinator.offsets`) owns one and applies what a marker ends to the groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.coordinator.group import CommittedOffset

#: (topic, partition)
Key = tuple[str, int]


@dataclass(eq=False, slots=True)
class PendingTxnOffset:
    """An offset committed inside a transaction (TxnOffsetCommit), durable but not yet ended.

    ``superseded``: a plain commit of the same partition was written after it, so a COMMIT
    marker must not put it in place (Kafka compares the records' log offsets:
    ``OffsetMetadataManager.replayEndTransactionMarker``; replay runs in log order, so a flag
    set when the later commit replays says the same).
    """

    offset: CommittedOffset
    superseded: bool = False


class PendingTransactionalOffsets:
    def __init__(self) -> None:
        #: producer id -> group -> partition -> offset
        self._by_producer: dict[int, dict[str, dict[Key, PendingTxnOffset]]] = {}
        #: group -> producer ids with offsets pending for it (read on every commit replay: a
        #: group in here has an open transaction)
        self.open: dict[str, set[int]] = {}
        #: ``__consumer_offsets`` partition -> markers (producer id, commit) that came while it loaded
        self._deferred: dict[int, list[tuple[int, bool]]] = {}

    def add(self, producer_id: int, group_id: str, key: Key, offset: CommittedOffset) -> None:
        """A transactional commit of ``producer_id`` is durable (or replayed)."""
        pending = self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {})
        pending[key] = PendingTxnOffset(offset)
        self.open.setdefault(group_id, set()).add(producer_id)

    def plain_replayed(self, group_id: str, key: Key, tombstone: bool) -> None:
        """A plain commit or a tombstone of ``key`` replayed while transactions of the group
        are open: a tombstone drops their pending offsets of it (Kafka 4.x ``replay``), a
        commit supersedes them (it is later in the log than they are)."""
        for producer_id in self.open.get(group_id, ()):
            pending = self._by_producer.get(producer_id, {}).get(group_id)
            if pending is None or key not in pending:
                continue
            if tombstone:
                del pending[key]
            else:
                pending[key].superseded = True

    def end(
        self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]
    ) -> dict[str, dict[Key, CommittedOffset]]:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` for the groups for which
        ``in_partition`` holds: their pending offsets are forgotten; for a COMMIT, those no
        later plain commit superseded are returned (group -> partition -> offset) to be put
        in place."""
        ended: dict[str, dict[Key, CommittedOffset]] = {}
        by_group = self._by_producer.get(producer_id)
        if not by_group:
            return ended
        for group_id in [g for g in by_group if in_partition(g)]:
            pending = by_group.pop(group_id)
            producers = self.open.get(group_id)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del self.open[group_id]
            live = {key: p.offset for key, p in pending.items() if not p.superseded}
            if commit and live:
                ended[group_id] = live
        if not by_group:
            del self._by_producer[producer_id]
        return ended

    def keys(self, group_id: str) -> set[Key]:
        """The partitions of ``group_id`` with an offset pending in an open transaction."""
        keys: set[Key] = set()
        for producer_id in self.open.get(group_id, ()):
            keys.update(self._by_producer.get(producer_id, {}).get(group_id, ()))
        return keys

    def defer(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker that came while ``partition`` loads: applied when the load completes."""
        self._deferred.setdefault(partition, []).append((producer_id, commit))

    def take_deferred(self, partition: int) -> list[tuple[int, bool]]:
        return self._deferred.pop(partition, [])

    def forget(self, partition: int, in_partition: Callable[[str], bool]) -> None:
        """Leadership of ``partition`` lost: its groups' pending offsets and markers go."""
        self._deferred.pop(partition, None)
        for by_group in self._by_producer.values():
            for group_id in [g for g in by_group if in_partition(g)]:
                del by_group[group_id]
                self.open.pop(group_id, None)
        for producer_id in [pid for pid, by_group in self._by_producer.items() if not by_group]:
            del self._by_producer[producer_id]

    def by_producer(self, group_id: str) -> dict[int, dict[Key, int]]:
        """Producer id -> partition -> offset pending in its open transaction (tests, describe)."""
        out: dict[int, dict[Key, int]] = {}
        for producer_id in sorted(self.open.get(group_id, ())):
            pending = self._by_producer.get(producer_id, {}).get(group_id, {})
            out[producer_id] = {k: p.offset.offset for k, p in pending.items()}
        return out
