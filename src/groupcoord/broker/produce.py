"""Produce (key 0): validate, de-duplicate, append, and answer per acks.

Appends happen synchronously inside the handler, so pipelined produces on one connection are
appended in request order. acks=0 gets no response on the wire; acks=1 is answered once the
batch is in the log; acks=-1 is answered once the batch is fsynced (coalesced across
concurrent produces by :class:`~groupcoord.broker.durability.Flusher`) unless the operator
chose a flush policy (``log.flush.interval.*`` set explicitly), which then governs.
"""

from __future__ import annotations

import datetime
import logging
import struct
from collections.abc import Callable, Hashable
from typing import Any

from groupcoord.broker.acl import Op, Resource
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import CorruptBatchError, decode_records, iter_batches, parse_header
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.storage.log import RecordTooLargeError
from groupcoord.storage.message_format import MAGIC_V0, MAGIC_V1, MessageFormatError, magic_of, upconvert
from groupcoord.storage.segment import Flushable

log = logging.getLogger(__name__)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _append_time(ts: int) -> datetime.datetime | None:
    if ts < 0:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=ts)


class _PartitionResult:
    __slots__ = ("base_offset", "error", "log_append_time", "log_start_offset", "message", "record_errors")

    def __init__(
        self,
        error: ErrorCode,
        base_offset: int = -1,
        log_append_time: int = -1,
        log_start_offset: int = -1,
        message: str | None = None,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        self.error = error
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.message = message
        #: (batch_index, message) of each refused record (Kafka's RecordError)
        self.record_errors = record_errors


def _keyless_records(
    topic: str, partition: int, records: bytes, batches: list[Any]
) -> _PartitionResult | None:
    """INVALID_RECORD naming every keyless record of the first batch that has one: a compacted
    topic cannot keep them (Kafka's LogValidator.validateKey; batch_index counts records within
    their batch, the error message shows the first three)."""
    for pos, _h in batches:
        keyless = [i for i, r in enumerate(decode_records(records, pos)) if r.key is None]
        if keyless:
            text = f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
            errors = tuple((i, text) for i in keyless)
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            return _PartitionResult(
                ErrorCode.INVALID_RECORD,
                message=f"One or more records have been rejected due to {len(errors)} record errors "
                f"in total, and only showing the first three errors at most: [{shown}]",
                record_errors=errors,
            )
    return None


#: KIP-890 part 1: ``(producer_id, producer_epoch, (topic, partition))`` -> whether the
#: partition is in that producer's ongoing transaction (the transaction coordinator answers).
TxnVerifier = Callable[[int, int, tuple[str, int]], ErrorCode]


def _stamp_leader_epoch(records: bytes, batches: list[tuple[int, Any]], epoch: int) -> bytes:
    """The batches with their ``partitionLeaderEpoch`` set to the leader's epoch, as Kafka's leader
    stamps every batch it appends (``LogValidator``; the field is outside the CRC). Several
    brokers in one process only: one broker reports no leader epochs and leaves them as sent."""
    out = bytearray(records)
    for pos, _header in batches:
        _LEADER_EPOCH.pack_into(out, pos + 12, epoch)
    return bytes(out)


_LEADER_EPOCH = struct.Struct(">i")


def _produce_partition(
    broker: Broker,
    topic: str,
    partition: int,
    records: bytes | None,
    dirty: dict[Hashable, Flushable],
    version: int = 3,
    verify: TxnVerifier | None = None,
) -> _PartitionResult:
    try:
        plog = broker.logs.partition(topic, partition)
    except KeyError:
        return _PartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    meta = broker.logs.topics_view.get(topic)
    if meta is not None and meta.internal:
        # Kafka refuses client appends to internal topics; only the broker writes them.
        return _PartitionResult(
            ErrorCode.INVALID_TOPIC_EXCEPTION, message=f"Cannot append to internal topic {topic}"
        )
    if not records:
        return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message="empty record set")
    if magic_of(records) in (MAGIC_V0, MAGIC_V1):
        if version >= 3:  # ProduceRequest.validateRecords
            return _PartitionResult(
                ErrorCode.INVALID_RECORD,
                message=f"Produce requests with version {version} are only allowed to contain "
                "record batches with magic version 2",
            )
        # Produce v0-v2 carry message format v0/v1: the log keeps v2 batches (LogValidator)
        try:
            records = upconvert(records, log_append_time_topic=plog.config.log_append_time)
        except MessageFormatError as exc:
            return _PartitionResult(exc.code, message=str(exc))
    try:
        batches = list(iter_batches(records))
    except CorruptBatchError as exc:
        return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message=str(exc))
    if not batches:
        try:
            parse_header(records, 0)
        except CorruptBatchError as exc:
            return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message=str(exc))
        return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message="truncated record batch")
    end = batches[-1][0] + batches[-1][1].size
    if end != len(records):
        return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message="trailing bytes after the last batch")
    if any(h.is_control for _, h in batches):
        # Only the transaction coordinator writes markers (Kafka refuses them from clients).
        return _PartitionResult(ErrorCode.INVALID_RECORD, message="control batches are written by the broker")
    if any(h.is_transactional for _, h in batches):
        if not broker.serves_transactions:
            return _PartitionResult(
                ErrorCode.INVALID_RECORD, message="transactional batches are not supported by this broker"
            )
        # A producer fenced by a newer epoch (a marker or another batch carried it) is refused.
        fenced = plog.producer_state().check(batches[0][1])
        if fenced is not ErrorCode.NONE:
            return _PartitionResult(fenced, log_start_offset=plog.log_start_offset)
        if verify is not None:
            # KIP-890 part 1 (Kafka 3.6+ ReplicaManager): the partition must be in the producer's
            # ongoing transaction, or the batch could hang the partition's LSO forever.
            first = batches[0][1]
            error = verify(first.producer_id, first.producer_epoch, (topic, partition))
            if error is not ErrorCode.NONE:
                return _PartitionResult(error, log_start_offset=plog.log_start_offset)

    if plog.config.compact:
        refused = _keyless_records(topic, partition, records, batches)
        if refused is not None:
            return refused

    tp = (topic, partition)
    first = batches[0][1]
    idempotent = first.producer_id >= 0 and first.base_sequence >= 0
    if idempotent:
        if len(batches) != 1:
            return _PartitionResult(ErrorCode.INVALID_RECORD, message="idempotent produce needs one batch")
        table = broker.producers_for(tp)
        check = table.check(first.producer_id, first.producer_epoch, first.base_sequence, first.record_count)
        if check.error != ErrorCode.NONE:
            return _PartitionResult(check.error, log_start_offset=plog.log_start_offset)
        if check.duplicate is not None:
            dup = check.duplicate
            log.info(
                "duplicate batch from producer %d seq %d-%d on %s-%d: answered with offset %d",
                first.producer_id,
                dup.first_seq,
                dup.last_seq,
                topic,
                partition,
                dup.base_offset,
            )
            return _PartitionResult(
                ErrorCode.NONE,
                base_offset=dup.base_offset,
                log_append_time=dup.log_append_time,
                log_start_offset=plog.log_start_offset,
            )
    if broker.cluster is not None:
        records = _stamp_leader_epoch(
            records, batches, broker.cluster.partition(topic, partition).leader_epoch
        )
    try:
        info = plog.append(records)
    except RecordTooLargeError as exc:
        return _PartitionResult(ErrorCode.MESSAGE_TOO_LARGE, message=str(exc))
    except CorruptBatchError as exc:
        return _PartitionResult(ErrorCode.CORRUPT_MESSAGE, message=str(exc))
    if idempotent:
        broker.producers_for(tp).record(
            first.producer_id,
            first.producer_epoch,
            first.base_sequence,
            first.record_count,
            info.base_offset,
            info.last_offset,
            info.log_append_time,
        )
    topic_flush_policy = meta is not None and bool({"flush.messages", "flush.ms"} & set(meta.configs))
    if not topic_flush_policy:
        dirty[tp] = plog
    broker.notify_append(tp, len(records))
    return _PartitionResult(
        ErrorCode.NONE,
        base_offset=info.base_offset,
        log_append_time=info.log_append_time,
        log_start_offset=info.log_start_offset,
    )


def handle(
    broker: Broker,
    ctx: RequestContext,
    request: Any,
    *,
    verify_txn: Callable[[str, int, int, tuple[str, int]], ErrorCode] | None = None,
) -> Any:
    """``verify_txn``: the transaction coordinator's ``(transactional_id, producer id, epoch,
    partition)`` check (KIP-890 part 1) that transactional batches are verified with."""
    acks = int(request.acks)
    tid = getattr(request, "transactional_id", None)
    verify: TxnVerifier | None = None
    if verify_txn is not None and tid is not None:
        check_txn = verify_txn

        def verify(pid: int, epoch: int, tp: tuple[str, int]) -> ErrorCode:
            return check_txn(str(tid), pid, epoch, tp)

    results: list[tuple[str, list[tuple[int, _PartitionResult]]]] = []
    dirty: dict[Hashable, Flushable] = {}
    # KafkaApis.handleProduceRequest: WRITE on the transactional id, else every partition fails
    # with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic (TOPIC_AUTHORIZATION_FAILED).
    denied_tid = tid is not None and not broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(tid))
    if denied_tid or (
        getattr(request, "transactional_id", None) is not None and not broker.serves_transactions
    ):
        for topic in request.topic_data:
            results.append(
                (
                    topic.name,
                    [
                        (int(p.index), _PartitionResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                        for p in topic.partition_data
                    ],
                )
            )
    elif acks not in (0, 1, -1):
        for topic in request.topic_data:
            results.append(
                (
                    topic.name,
                    [
                        (int(p.index), _PartitionResult(ErrorCode.INVALID_REQUIRED_ACKS))
                        for p in topic.partition_data
                    ],
                )
            )
    else:
        for topic in request.topic_data:
            parts = []
            if not broker.allowed(ctx, Op.WRITE, Resource.TOPIC, topic.name):
                denied = _PartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                results.append((topic.name, [(int(p.index), denied) for p in topic.partition_data]))
                continue
            for p in topic.partition_data:
                # several brokers in one process: only the leader appends (ReplicaManager
                # .appendToLocalLog: NOT_LEADER_OR_FOLLOWER elsewhere)
                led = broker.leadership(ctx.node_id, topic.name, int(p.index))
                parts.append(
                    (
                        int(p.index),
                        _produce_partition(
                            broker, topic.name, int(p.index), p.records, dirty, ctx.api_version, verify
                        )
                        if led is ErrorCode.NONE
                        else _PartitionResult(led),
                    )
                )
            results.append((topic.name, parts))

    if acks == 0:
        return None

    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type

    hinted: set[int] = set()
    cluster = broker.cluster
    leader_t = None
    if cluster is not None and ctx.api_version >= 10:
        leader_t = child(child(child(resp_t, "responses"), "partition_responses"), "current_leader")

    def hint(topic: str, index: int, error: ErrorCode) -> dict[str, Any]:
        """KIP-951 (v10): NOT_LEADER_OR_FOLLOWER names the partition's leader and epoch, and the
        response carries that leader's endpoint, so the producer need not ask Metadata
        (KafkaApis.handleProduceRequest)."""
        if leader_t is None or cluster is None or error is not ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return {}
        state = cluster.partition(topic, index)
        if state.leader >= 0:
            hinted.add(state.leader)
        return {"current_leader": make(leader_t, leader_id=state.leader, leader_epoch=state.leader_epoch)}

    def endpoints() -> dict[str, Any]:
        if not hinted or cluster is None:
            return {}
        node_t = child(resp_t, "node_endpoints")
        out = []
        for node in sorted(hinted):
            host, port = broker.node_endpoint(node, ctx.listener)
            out.append(make(node_t, node_id=node, host=host, port=port, rack=cluster.racks.get(node)))
        return {"node_endpoints": tuple(out)}

    def build() -> Any:
        topic_t = child(resp_t, "responses")
        part_t = child(topic_t, "partition_responses")
        rec_t = child(part_t, "record_errors") if has_field(part_t, "record_errors") else None
        return make(
            resp_t,
            responses=tuple(
                make(
                    topic_t,
                    name=name,
                    partition_responses=tuple(
                        make(
                            part_t,
                            index=index,
                            error_code=err(r.error),
                            base_offset=r.base_offset,
                            log_append_time=_append_time(r.log_append_time),
                            log_start_offset=r.log_start_offset,
                            record_errors=tuple(
                                make(rec_t, batch_index=i, batch_index_error_message=m)
                                for i, m in r.record_errors
                            )
                            if rec_t is not None
                            else (),
                            error_message=r.message,
                            **hint(name, index, r.error),
                        )
                        for index, r in parts
                    ),
                )
                for name, parts in results
            ),
            throttle_time=NO_THROTTLE,
            **endpoints(),
        )

    if acks == -1 and dirty and not broker.config.flush_policy_explicit:
        return _after_flush(broker, dirty, results, build)
    return build()


async def _after_flush(
    broker: Broker,
    dirty: dict[Hashable, Flushable],
    results: list[tuple[str, list[tuple[int, _PartitionResult]]]],
    build: Any,
) -> Any:
    try:
        await broker.flusher.flush(dirty)
    except OSError as exc:
        log.error("fsync failed, answering KAFKA_STORAGE_ERROR: %r", exc)
        for name, parts in results:
            for index, r in parts:
                if (name, index) in dirty:
                    r.error = ErrorCode.KAFKA_STORAGE_ERROR
                    r.message = str(exc)
    return build()
