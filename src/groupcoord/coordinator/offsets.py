"""The offsets manager: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, retention.

Kafka 4.x's ``OffsetMetadataManager`` (the offset half of 3.x's ``GroupMetadataManager.scala``).
:class:`OffsetManager` holds what is in flight about offsets (the writes, the pending commits, the
require_stable fetches waiting for them, the offsets pending in open transactions) and reaches
the groups only through the groups manager it is given. Each request handler returns its
:class:`~groupcoord.coordinator.result.CoordinatorResult`; the other methods add to the one they
are given (``out``).
Every write that changes a group's offsets is tracked while in flight: its partitions count as
pending commits (expiry skips them, deletions tombstone them) and a ``require_stable``
OffsetFetch waits for it (KIP-447, as Kafka 4.x).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass

from groupcoord.coordinator.context import (
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    ShardContext,
)
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.group import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    CommittedOffset,
)
from groupcoord.coordinator.groups import GroupMetadataManager
from groupcoord.coordinator.offset_messages import (
    FETCH_WRITE_ERRORS,
    commit_response,
    commit_response_all,
    committed_offset,
    map_offset_write_error,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    new_group_metadata_tombstone,
    new_offset_commit_record,
    new_offset_commit_tombstone,
)
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.txn_offsets import PendingTransactionalOffsets
from groupcoord.coordinator.writes import (
    OffsetCommitWrite,
    OffsetDeleteWrite,
    OffsetExpiryWrite,
    OffsetWrite,
    OffsetWriteKind,
    TxnOffsetCommitWrite,
)
from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.gcutil import untrack
from groupcoord.protocol.group_messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopicResponse,
    TxnOffsetCommitRequest,
)

log = logging.getLogger(__name__)

#: The shard's replay of one durable record (``GroupCoordinatorShard``), given to the manager.
ReplayRecord = Callable[[CoordinatorResult, CoordinatorRecord], None]


def java_string_length(s: str) -> int:
    """Java ``String.length()``: UTF-16 code units (astral characters count twice)."""
    if s.isascii():  # almost every metadata string: one unit per character
        return len(s)
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


@dataclass(eq=False, slots=True)
class StableFetch:
    """A require_stable OffsetFetch waiting for the offset writes in flight when it arrived."""

    request: OffsetFetchRequest
    reply: Callable[[OffsetFetchResponse], None]
    waiting: set[int]
    errors: dict[str, ErrorCode]


class OffsetManager:
    """Args:
    ctx: what the shard's parts share (config, clock, timer, partitions, events).
    groups: the groups manager; offsets are kept in their groups (``ClassicGroup.offsets``).
    replay: the shard's replay of a record, for this manager's writes once durable (offset
        commits and tombstones, and a deletion's or an expiry's group tombstone).
    """

    def __init__(self, ctx: ShardContext, groups: GroupMetadataManager, replay: ReplayRecord) -> None:
        self._ctx = ctx
        self._replay_record = replay
        self._config = ctx.config
        self._groups = groups
        self._table = groups.groups
        # Offset writes in flight (soft state): group -> write token -> write; group ->
        # partition -> commits of it being written (Kafka's pendingOffsetCommits); token ->
        # stable fetches.
        self._write_tokens = itertools.count()
        self._offset_writes: dict[str, dict[int, PendingWrite]] = {}
        self._pending_commits: dict[str, dict[tuple[str, int], int]] = {}
        self._stable_fetches: dict[int, list[StableFetch]] = {}
        #: Transactional offset commits (KIP-98/447), durable but invisible until their
        #: transaction's marker.
        self.transactional = PendingTransactionalOffsets()

    def pending_commit_keys(self, group_id: str) -> Iterable[tuple[str, int]]:
        """The partitions of ``group_id`` with a commit being written."""
        return self._pending_commits.get(group_id, {}).keys()

    def append_offset_write(
        self,
        out: CoordinatorResult,
        group_id: str,
        records: Sequence[CoordinatorRecord],
        then: OffsetWriteKind,
        commits: Sequence[tuple[str, int]] = (),
        producer: tuple[int, int] = (-1, -1),
        reply: Callable[[OffsetCommitResponse], None] | None = None,
        response: OffsetCommitResponse | None = None,
    ) -> None:
        """Append a write that changes ``group_id``'s offsets, tracked until it completes.

        Meanwhile the partitions in ``commits`` count as pending commits (Kafka's
        ``pendingOffsetCommits``): expiry skips them and deletions write a tombstone for them;
        and a require_stable OffsetFetch of the group waits for the write. ``producer`` (id,
        epoch) makes it a transactional write (TxnOffsetCommit). With ``reply``, the write
        carries its answer (``response``), which the runtime completes once it is durable (the
        shard then takes it in: :meth:`take_durable_commit`).
        """
        token = next(self._write_tokens)
        writes = self._offset_writes.get(group_id)
        if writes is None:
            writes = self._offset_writes[group_id] = {}
        if commits:
            pending = self._pending_commits.get(group_id)
            if pending is None:
                pending = self._pending_commits[group_id] = {}
            for key in commits:
                pending[key] = pending.get(key, 0) + 1
        completion = OffsetWrite(token, group_id, tuple(commits), then)
        write = writes[token] = PendingWrite(
            self._ctx.partition_for(group_id),
            tuple(records),
            completion,
            producer[0],
            producer[1],
            reply,
            response,
        )
        out.writes.append(write)

    def offset_write_finished(self, write: OffsetWrite) -> None:
        group_id = write.group_id
        writes = self._offset_writes.get(group_id)
        if writes is not None:
            writes.pop(write.token, None)
            if not writes:
                del self._offset_writes[group_id]
        pending = self._pending_commits.get(group_id)
        if write.commits and pending is not None:
            for key in write.commits:
                n = pending.get(key, 0) - 1
                if n > 0:
                    pending[key] = n
                else:
                    pending.pop(key, None)
            if not pending:
                del self._pending_commits[group_id]

    @property
    def stable_fetches_waiting(self) -> bool:
        """Whether a require_stable OffsetFetch waits for some write."""
        return bool(self._stable_fetches)

    def wake_stable_fetches(
        self, out: CoordinatorResult, token: int, group_id: str, error: ErrorCode
    ) -> None:
        for fetch in self._stable_fetches.pop(token, ()):
            fetch.waiting.discard(token)
            if error is not ErrorCode.NONE:
                fetch.errors.setdefault(group_id, FETCH_WRITE_ERRORS.get(error, error))
            if not fetch.waiting:
                out.respond(fetch.reply, self._offset_fetch_response(fetch.request, fetch.errors))

    # ================================================================== OffsetCommit
    def handle_offset_commit(
        self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()

        missing = ErrorCode.GROUP_ID_NOT_FOUND if req.version >= 9 else ErrorCode.ILLEGAL_GENERATION
        group = self._commit_target(out, req, reply, missing)
        if group is None:
            return out
        member = group.members.get(req.member_id)
        if member is not None and group.state in (STABLE, PREPARING):
            self._groups.rebalance.complete_and_schedule_next_heartbeat_expiration(group, member)

        expire: int | None = None
        if 2 <= req.version <= 4 and req.retention_time_ms != -1:
            expire = self._ctx.now() + req.retention_time_ms
        results, records, commits = self._commit_records(req, expire)
        response = commit_response(req, results)
        if not records:
            out.respond(reply, response)
            return out
        # Kafka 4.x's write operation: the records and the answer together; the runtime answers
        # once the records are durable, and the shard takes them in then (take_durable_commit).
        self.append_offset_write(
            out,
            req.group_id,
            records,
            OffsetCommitWrite(req, results),
            commits,
            reply=reply,
            response=response,
        )
        return out

    def take_durable_commit(self, write: PendingWrite, done: OffsetWrite) -> None:
        """An OffsetCommit's write is durable and was answered by the runtime (the shard's
        ``durable`` list): it is no longer in flight, and its records are replayed, in the order
        the writes became durable (a commit writes only offset records)."""
        self.offset_write_finished(done)
        for record in write.records:
            self.replay(record.key, record.value)

    def offset_commit_failed(
        self, out: CoordinatorResult, write: PendingWrite, then: OffsetCommitWrite, error: ErrorCode
    ) -> None:
        """An OffsetCommit's write failed: nothing is replayed, and the partitions that had no
        error of their own are answered the write's, mapped as Kafka maps it."""
        if write.reply is None:  # pragma: no cover - every commit's write carries its reply
            return
        mapped = map_offset_write_error(error)
        out.respond(
            write.reply,
            commit_response(
                then.request,
                {k: mapped if code is ErrorCode.NONE else code for k, code in then.results.items()},
            ),
        )

    def _commit_target(
        self,
        out: CoordinatorResult,
        req: OffsetCommitRequest | TxnOffsetCommitRequest,
        reply: Callable[[OffsetCommitResponse], None],
        missing: ErrorCode,
    ) -> ClassicGroup | None:
        """The group a commit (plain or transactional) writes to, or None once ``reply`` has
        been answered with one code for every partition: the shard's status, then ``missing``
        for a generation naming a group that is not there (no generation makes a "simple"
        group, offsets only), then the commit's own checks (:meth:`_validate_offset_commit`)."""
        status = self._ctx.status(req.group_id)
        if status is not None:
            out.respond(reply, commit_response_all(req, status))
            return None
        group = self._table.get(req.group_id)
        if req.group_id in self._groups.consumer.groups:
            # A consumer group (KIP-848): its own member-epoch checks (ConsumerGroup.
            # validateOffsetCommit: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, ...); its offsets are
            # kept in an offsets-only entry of the table.
            try:
                self._groups.consumer.manager.validate_offset_commit(
                    req.group_id,
                    req.member_id,
                    req.group_instance_id,
                    req.generation_id,
                    transactional=isinstance(req, TxnOffsetCommitRequest),
                    api_version=req.version,
                )
            except KafkaError as exc:
                out.respond(reply, commit_response_all(req, exc.code))
                return None
            return group if group is not None else self._groups.simple_group(out, req.group_id)
        if group is None:
            if req.generation_id >= 0:
                out.respond(reply, commit_response_all(req, missing))
                return None
            group = self._groups.simple_group(out, req.group_id)  # offsets only
        error = group.validate_offset_commit(
            req.member_id, req.group_instance_id, req.generation_id, isinstance(req, TxnOffsetCommitRequest)
        )
        if error is not None:
            out.respond(reply, commit_response_all(req, error))
            return None
        return group

    def _commit_records(
        self, req: OffsetCommitRequest | TxnOffsetCommitRequest, expire: int | None
    ) -> tuple[dict[tuple[str, int], ErrorCode], list[CoordinatorRecord], list[tuple[str, int]]]:
        """Each partition's code before the write, the commit records to write, and the
        (topic, partition) of each record."""
        now = self._ctx.now()
        max_md = self._config.offset_metadata_max_bytes
        results: dict[tuple[str, int], ErrorCode] = {}
        records: list[CoordinatorRecord] = []
        commits: list[tuple[str, int]] = []
        for topic in req.topics:
            for p in topic.partitions:
                metadata = p.metadata or ""
                key = (topic.name, p.partition)
                # Java counts UTF-16 units, at most two per character: short metadata needs no count.
                if 2 * len(metadata) > max_md and java_string_length(metadata) > max_md:
                    results[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                results[key] = ErrorCode.NONE
                epoch = p.leader_epoch if p.leader_epoch is not None and p.leader_epoch >= 0 else None
                records.append(
                    new_offset_commit_record(
                        req.group_id,
                        topic.name,
                        p.partition,
                        OffsetCommitValue(
                            offset=p.offset,
                            leader_epoch=epoch,
                            metadata=metadata,
                            commit_timestamp=now,
                            expire_timestamp=expire,
                        ),
                    )
                )
                commits.append(key)
        return results, records, commits

    # ================================================================== TxnOffsetCommit
    def handle_txn_offset_commit(
        self, req: TxnOffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        """Kafka 4.x ``OffsetMetadataManager.commitTransactionalOffset``: validated as a commit
        (``validateTransactionalOffsetCommit``), written as a transactional batch of the
        producer, then pending for it until its transaction's marker (:meth:`end_transaction`).

        The producer epoch is checked by the log against the partition's producer state
        (INVALID_PRODUCER_EPOCH for a fenced producer), as Kafka's append does.
        """
        out = CoordinatorResult()

        if not req.group_id:
            # GroupCoordinatorService: isGroupIdNotEmpty
            out.respond(reply, commit_response_all(req, ErrorCode.INVALID_GROUP_ID))
            return out
        if self._commit_target(out, req, reply, ErrorCode.ILLEGAL_GENERATION) is None:
            return out
        results, records, commits = self._commit_records(req, None)
        if not records:
            out.respond(reply, commit_response(req, results))
            return out
        self.append_offset_write(
            out,
            req.group_id,
            records,
            TxnOffsetCommitWrite(reply, req, results),
            commits,
            producer=(req.producer_id, req.producer_epoch),
        )
        return out

    def txn_offset_commit_written(
        self,
        out: CoordinatorResult,
        write: TxnOffsetCommitWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        producer_id = write.request.producer_id
        self._commit_written(out, write, records, error, producer_id)

    def replay_transactional(
        self, out: CoordinatorResult, record: CoordinatorRecord, producer_id: int
    ) -> None:
        """A record of a transactional batch of ``producer_id`` (Kafka 4.x
        ``OffsetMetadataManager.replay`` with a producer id): an offset commit becomes pending
        for the producer; anything else replays as usual."""
        key, value = record.key, record.value
        if not isinstance(key, OffsetCommitKey) or not isinstance(value, OffsetCommitValue):
            self._replay_record(out, record)
            return
        if key.group not in self._table:
            self._groups.replayed_group(key.group, value.commit_timestamp)
        self.transactional.add(producer_id, key.group, (key.topic, key.partition), committed_offset(value))

    def end_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` is in ``partition`` (Kafka 4.x
        ``OffsetMetadataManager.replayEndTransactionMarker``): its pending offsets of the
        partition's groups become the committed offsets (unless a later plain commit
        superseded them) or are dropped."""
        ctx = self._ctx
        ended = self.transactional.end(producer_id, commit, lambda g: ctx.partition_for(g) == partition)
        for group_id, live in ended.items():
            group = self._table.get(group_id)
            if group is None:
                group = self._groups.replayed_group(group_id, ctx.now())
            group.offsets.update(live)

    def txn_pending_keys(self, group_id: str) -> set[tuple[str, int]]:
        """The partitions of ``group_id`` with an offset pending in an open transaction."""
        return self.transactional.keys(group_id)

    def _commit_written(
        self,
        out: CoordinatorResult,
        write: TxnOffsetCommitWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
        producer_id: int,
    ) -> None:
        """A transactional commit's write finished: on success its records become pending for
        the transaction of ``producer_id`` and each partition is answered its code before the
        write; on failure the partitions that had none get the write's error, mapped as Kafka
        maps it."""
        results = write.results
        if error is ErrorCode.NONE:
            for record in records:
                self.replay_transactional(out, record, producer_id)
            out.respond(write.reply, commit_response(write.request, results))
            return
        mapped = map_offset_write_error(error)
        out.respond(
            write.reply,
            commit_response(
                write.request, {k: mapped if code is ErrorCode.NONE else code for k, code in results.items()}
            ),
        )

    # ================================================================== OffsetFetch
    def handle_offset_fetch(
        self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]
    ) -> CoordinatorResult:
        """With ``require_stable`` (KIP-447), as Kafka 4.x: wait for the group's offset writes in
        flight (those already started, not later ones), then read; a group whose awaited write
        failed answers that write's error (``GroupCoordinatorService.fetchOffsets``)."""
        out = CoordinatorResult()
        if req.require_stable:
            waiting: set[int] = set()
            for g in req.groups:
                if self._ctx.status(g.group_id) is None:
                    writes = self._offset_writes.get(g.group_id)
                    if writes:
                        waiting.update(writes)
                        for write in writes.values():
                            write.wake = True  # its success comes back to the shard too
            if waiting:
                fetch = StableFetch(request=req, reply=reply, waiting=waiting, errors={})
                for token in waiting:
                    self._stable_fetches.setdefault(token, []).append(fetch)
                return out
        out.respond(reply, self._offset_fetch_response(req, {}))
        return out

    def _offset_fetch_response(
        self, req: OffsetFetchRequest, errors: dict[str, ErrorCode]
    ) -> OffsetFetchResponse:
        return OffsetFetchResponse(
            groups=tuple(
                OffsetFetchGroupResponse(group_id=g.group_id, error=errors[g.group_id], topics=())
                if g.group_id in errors
                else self._fetch_one(g, req.require_stable)
                for g in req.groups
            )
        )

    def _fetch_one(self, req: OffsetFetchGroup, require_stable: bool = False) -> OffsetFetchGroupResponse:
        """With ``require_stable``, a partition with an offset pending in an open transaction
        answers UNSTABLE_OFFSET_COMMIT (Kafka 4.x ``OffsetMetadataManager.fetchOffsets``)."""
        status = self._ctx.status(req.group_id)
        if status is not None:
            return OffsetFetchGroupResponse(group_id=req.group_id, error=status, topics=())
        try:  # a consumer group's member epoch (OffsetFetch v9+, KIP-848)
            self._groups.consumer.manager.validate_offset_fetch(req.group_id, req.member_id, req.member_epoch)
        except KafkaError as exc:
            return OffsetFetchGroupResponse(group_id=req.group_id, error=exc.code, topics=())
        group = self._table.get(req.group_id)
        stored = group.offsets if group is not None and group.state is not DEAD else {}
        unstable: Container[tuple[str, int]] = ()
        if require_stable and req.group_id in self.transactional.open:
            unstable = self.txn_pending_keys(req.group_id)

        def part(topic: str, partition: int) -> OffsetFetchPartitionResponse:
            if (topic, partition) in unstable:
                return OffsetFetchPartitionResponse(
                    partition=partition,
                    offset=-1,
                    leader_epoch=None,
                    metadata="",
                    error=ErrorCode.UNSTABLE_OFFSET_COMMIT,
                )
            o = stored.get((topic, partition))
            if o is None:
                return OffsetFetchPartitionResponse(
                    partition=partition, offset=-1, leader_epoch=None, metadata="", error=ErrorCode.NONE
                )
            return OffsetFetchPartitionResponse(
                partition=partition,
                offset=o.offset,
                leader_epoch=o.leader_epoch,
                metadata=o.metadata,
                error=ErrorCode.NONE,
            )

        if req.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(stored):
                by_topic.setdefault(topic, []).append(partition)
            wanted = [(t, tuple(ps)) for t, ps in by_topic.items()]
        else:
            wanted = [(t.name, t.partitions) for t in req.topics]
        topics = tuple(
            OffsetFetchTopicResponse(name=name, partitions=tuple(part(name, p) for p in ps))
            for name, ps in wanted
        )
        return OffsetFetchGroupResponse(group_id=req.group_id, error=ErrorCode.NONE, topics=topics)

    def handle_offset_delete(
        self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]
    ) -> CoordinatorResult:
        out = CoordinatorResult()
        if not req.group_id:
            # Kafka's isValidGroupId: only the offset and admin APIs accept "", not OffsetDelete.
            out.respond(reply, OffsetDeleteResponse(error=ErrorCode.INVALID_GROUP_ID, topics=()))
            return out
        status = self._ctx.status(req.group_id)
        if status is not None:
            out.respond(reply, OffsetDeleteResponse(error=status, topics=()))
            return out
        group = self._table.get(req.group_id)
        if group is None or group.state is DEAD:
            out.respond(reply, OffsetDeleteResponse(error=ErrorCode.GROUP_ID_NOT_FOUND, topics=()))
            return out
        # Kafka's isSubscribedToTopic: in a non-Empty consumer group an unknown subscription
        # (None: unparsable, or no generation yet) counts every topic as subscribed.
        subscribed: frozenset[str] | None = frozenset()
        consumer_subscribed = self._groups.consumer.subscribed_topics(req.group_id)
        if consumer_subscribed is not None:  # a consumer group (KIP-848): its members' topics
            subscribed = consumer_subscribed
        elif group.state is not EMPTY:
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                out.respond(reply, OffsetDeleteResponse(error=ErrorCode.NON_EMPTY_GROUP, topics=()))
                return out
            subscribed = group.subscribed_topics

        def is_subscribed(topic: str) -> bool:
            return subscribed is None or topic in subscribed

        pending = self._pending_commits.get(req.group_id, {})
        # Kafka 4.x deleteOffsets: a pending transactional offset gets a tombstone too.
        txn_pending = (
            self.txn_pending_keys(req.group_id) if req.group_id in self.transactional.open else set()
        )
        records: list[CoordinatorRecord] = []
        for t in req.topics:
            if is_subscribed(t.name):
                continue
            for p in t.partitions:
                if (t.name, p) in group.offsets or (t.name, p) in pending or (t.name, p) in txn_pending:
                    records.append(new_offset_commit_tombstone(req.group_id, t.name, p))

        write = OffsetDeleteWrite(reply, req, subscribed)
        if not records:
            self.offset_delete_written(out, write, (), ErrorCode.NONE)
            return out
        self.append_offset_write(out, req.group_id, records, write)
        return out

    def offset_delete_written(
        self,
        out: CoordinatorResult,
        write: OffsetDeleteWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        if error is ErrorCode.NONE:
            for record in records:
                self._replay_record(out, record)
        write_error = map_offset_write_error(error)
        subscribed = write.subscribed
        topics = tuple(
            OffsetDeleteTopicResponse(
                name=t.name,
                partitions=tuple(
                    OffsetDeletePartitionResponse(
                        partition=p,
                        error=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                        if subscribed is None or t.name in subscribed
                        else write_error,
                    )
                    for p in t.partitions
                ),
            )
            for t in write.request.topics
        )
        out.respond(write.reply, OffsetDeleteResponse(error=ErrorCode.NONE, topics=topics))

    # ================================================================== offset expiry
    def expire_offsets(self, out: CoordinatorResult) -> None:
        now = self._ctx.now()
        retention = self._config.offsets_retention_ms
        for group in list(self._table.values()):
            if not self._ctx.serves(group.group_id) or group.state is DEAD:
                continue
            commits = self._pending_commits.get(group.group_id, {})
            pending: Container[tuple[str, int]] = commits
            open_txns = group.group_id in self.transactional.open
            if open_txns:
                # Kafka 4.x: an offset with a transactional commit pending does not expire.
                pending = {*commits, *self.txn_pending_keys(group.group_id)}
            expired = group.expired_offsets(now, retention, pending)
            consumer_subscribed = self._groups.consumer.subscribed_topics(group.group_id)
            if consumer_subscribed is not None:
                # A consumer group's offsets (KIP-848): those of topics its members subscribe
                # to do not expire (Kafka's cleanupExpiredOffsets: isSubscribedToTopic), and
                # its offsets' entry stays while the consumer group exists.
                expired = [k for k in expired if k[0] not in consumer_subscribed]
            records = [new_offset_commit_tombstone(group.group_id, t, part) for (t, part) in expired]
            becomes_dead = (
                consumer_subscribed is None
                and group.state is EMPTY
                and len(expired) == len(group.offsets)
                and not group.pending_members
                and not commits
                and not open_txns
            )
            if becomes_dead and group.generation > 0:
                records.append(new_group_metadata_tombstone(group.group_id))
            if not records:
                if becomes_dead:
                    self._remove_expired_group(out, group)
                continue
            if becomes_dead:
                # Dead to other requests while its tombstones are written; removed once they are
                # durable, kept (and retried next cycle) if they fail, as the log still has it.
                write = OffsetExpiryWrite(group, removes_group=True, restore=group.state_snapshot())
                group.transition_to(DEAD, now)
            else:
                write = OffsetExpiryWrite(group, removes_group=False, restore=None)
            self.append_offset_write(out, group.group_id, records, write)

    def offset_expiry_written(
        self,
        out: CoordinatorResult,
        write: OffsetExpiryWrite,
        records: Sequence[CoordinatorRecord],
        error: ErrorCode,
    ) -> None:
        group = write.group
        live = self._table.get(group.group_id) is group
        if write.restore is not None and live and group.state is DEAD:
            group.revert_state(write.restore)
        if error is not ErrorCode.NONE:
            log.warning(
                "group=%s expired offsets not deleted (%s); retried next cycle", group.group_id, error.name
            )
            return
        if write.removes_group and live:
            # Nothing reached the group meanwhile: a Dead group takes no commit and no join.
            self._remove_expired_group(out, group)
        for record in records:
            self._replay_record(out, record)

    def _remove_expired_group(self, out: CoordinatorResult, group: ClassicGroup) -> None:
        log.info("group=%s empty with no offsets left: removing", group.group_id)
        self._groups.remove_group(out, group, EventReason.OFFSETS_EXPIRED)

    # ================================================================== records and loading
    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        """Apply an offset commit record (or its tombstone): the one way offsets change.

        Used on the live path (once a write is durable) and while loading a partition.
        """
        group = self._table.get(key.group)
        if key.group in self.transactional.open:
            self.transactional.plain_replayed(key.group, (key.topic, key.partition), value is None)
        if value is None:
            if group is not None:
                group.offsets.pop((key.topic, key.partition), None)
            return
        if group is None:
            group = self._groups.replayed_group(key.group, value.commit_timestamp)
        # Numbers and a string, alive until the next commit of the partition: the cyclic
        # collector would only walk it (groupcoord.gcutil).
        group.offsets[(key.topic, key.partition)] = untrack(committed_offset(value))

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Replay a run of offset commits of ``group_id``, in log order, for a bulk loader.

        The same as replaying each commit record (:meth:`replay`): the offsets-only group a
        commit creates if there is none, then each ``(topic, partition) -> offset`` assigned in
        order. A commit replay produces no responses, writes or events.
        """
        group = self._table.get(group_id)
        if group is None:
            # As replay() of a commit: no state timestamp, not a group record's.
            group = self._groups.replayed_group(group_id, 0)
        if group_id in self.transactional.open:
            offsets = list(offsets)
            for key, _ in offsets:
                self.transactional.plain_replayed(group_id, key, False)
        group.offsets.update(offsets)

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """The live path: a marker of ``producer_id`` is durable in ``partition``. While the
        partition loads, it is applied when the load completes (the loader may or may not have
        read it from the log; applying it twice changes nothing)."""
        if partition in self._ctx.loading:
            self.transactional.defer(partition, producer_id, commit)
            return
        if partition in self._ctx.owned:
            self.end_transaction(partition, producer_id, commit)

    def complete_loading(self, partition: int) -> None:
        """The markers that came while ``partition`` loaded are applied."""
        for producer_id, commit in self.transactional.take_deferred(partition):
            self.end_transaction(partition, producer_id, commit)

    def unload(self, partition: int) -> None:
        """Leadership of ``partition`` lost: its groups' transactional offsets are forgotten."""
        ctx = self._ctx
        self.transactional.forget(partition, lambda g: ctx.partition_for(g) == partition)

    def pending_transactional_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        """Producer id -> partition -> offset pending in its open transaction (tests, describe)."""
        return self.transactional.by_producer(group_id)
