"""Transaction APIs over the wire: kio requests in, transaction coordinator calls, kio responses out.

Each handler translates its request into the coordinator's version-independent value
(:mod:`groupcoord.transactions.api`), calls the shard through
:class:`~groupcoord.runtime.txn_runtime.TxnRuntime`, and encodes the reply for the client's
version, now or (after a write) through a future. Each handler takes the runtime first: the
composition root (:func:`groupcoord.app.routes`) binds it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode

from groupcoord.broker import init_producer_id as idempotent
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make, ms
from groupcoord.runtime.answers import response_type
from groupcoord.runtime.txn_runtime import TxnRuntime
from groupcoord.transactions import api


def _fenced_code(error: ErrorCode, version: int, first_version: int) -> KioErrorCode:
    """KIP-588: a version older than ``first_version`` does not know PRODUCER_FENCED; Kafka
    answers INVALID_PRODUCER_EPOCH there, which those clients treat as fenced
    (``KafkaApis.handleEndTxnRequest`` / ``handleInitProducerIdRequest`` /
    ``handleAddPartitionsToTxnRequest`` / ``handleAddOffsetsToTxnRequest``)."""
    if error is ErrorCode.PRODUCER_FENCED and version < first_version:
        return err(ErrorCode.INVALID_PRODUCER_EPOCH)
    return err(error)


def _error_only(broker: Broker, ctx: RequestContext) -> Callable[[Any], Any]:
    """Encodes an answer that is one error code (AddOffsetsToTxn, EndTxn; fenced from v2)."""
    resp_t, version = response_type(broker, ctx), ctx.api_version
    return lambda r: make(resp_t, throttle_time=NO_THROTTLE, error_code=_fenced_code(r.error, version, 2))


def init_producer_id(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """InitProducerId (22): idempotent producers as before; a transactional id goes to the shard."""
    if request.transactional_id is None:
        return idempotent.handle(broker, ctx, request)
    resp_t = response_type(broker, ctx)
    req = api.InitProducerIdRequest(
        transactional_id=str(request.transactional_id),
        transaction_timeout_ms=ms(request.transaction_timeout),
        producer_id=int(getattr(request, "producer_id", -1)),
        producer_epoch=int(getattr(request, "producer_epoch", -1)),
    )

    def encode(r: api.InitProducerIdResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=_fenced_code(r.error, ctx.api_version, 4),
            producer_id=r.producer_id,
            producer_epoch=r.producer_epoch,
        )

    return rt.call(lambda reply: rt.init_producer_id(req, reply), encode)


def add_partitions(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """AddPartitionsToTxn (24) v0-3 (the client form)."""
    resp_t = response_type(broker, ctx)
    topic_t = child(resp_t, "results_by_topic_v3_and_below")
    part_t = child(topic_t, "results_by_partition")
    req = api.AddPartitionsToTxnRequest(
        transactional_id=str(request.v3_and_below_transactional_id),
        producer_id=int(request.v3_and_below_producer_id),
        producer_epoch=int(request.v3_and_below_producer_epoch),
        partitions=tuple(
            (str(t.name), tuple(int(p) for p in t.partitions)) for t in request.v3_and_below_topics
        ),
    )

    def answer(
        partitions: tuple[tuple[str, tuple[int, ...]], ...], code_of: Callable[[str, int], Any]
    ) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            results_by_topic_v3_and_below=tuple(
                make(
                    topic_t,
                    name=name,
                    results_by_partition=tuple(
                        make(part_t, partition_index=p, partition_error_code=code_of(name, p)) for p in parts
                    ),
                )
                for name, parts in partitions
            ),
        )

    def encode(r: api.AddPartitionsToTxnResponse) -> Any:
        code = _fenced_code(r.error, ctx.api_version, 2)
        return answer(r.partitions, lambda _t, _p: code)

    # Kafka's KafkaApis.handleAddPartitionsToTxnRequest: partitions that do not exist get
    # UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED, and nothing is added.
    topics = broker.logs.topics_view
    unknown = {
        (t, p) for t, ps in req.partitions for p in ps if t not in topics or not 0 <= p < topics[t].partitions
    }
    if unknown:
        missing, skipped = err(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), err(ErrorCode.OPERATION_NOT_ATTEMPTED)
        return answer(req.partitions, lambda t, p: missing if (t, p) in unknown else skipped)
    return rt.call(lambda reply: rt.add_partitions_to_txn(req, reply), encode)


def add_offsets_to_txn(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    req = api.AddOffsetsToTxnRequest(
        transactional_id=str(request.transactional_id),
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        group_id=str(request.group_id),
    )
    return rt.call(lambda reply: rt.add_offsets_to_txn(req, reply), _error_only(broker, ctx))


def end_txn(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    req = api.EndTxnRequest(
        transactional_id=str(request.transactional_id),
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        committed=bool(request.committed),
    )
    return rt.call(lambda reply: rt.end_txn(req, reply), _error_only(broker, ctx))


def _datetime(ms_value: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms_value / 1000, tz=datetime.UTC)


def describe_txns(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """DescribeTransactions (65, KIP-664)."""
    resp_t = response_type(broker, ctx)
    state_t = child(resp_t, "transaction_states")
    topic_t = child(state_t, "topics")

    def encode(r: api.DescribeTransactionsResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            transaction_states=tuple(
                make(
                    state_t,
                    error_code=err(d.error),
                    transactional_id=d.transactional_id,
                    transaction_state=d.state,
                    transaction_timeout=datetime.timedelta(milliseconds=d.timeout_ms),
                    transaction_start_time=_datetime(d.start_ms),
                    producer_id=d.producer_id,
                    producer_epoch=d.producer_epoch,
                    topics=tuple(make(topic_t, topic=t, partitions=ps) for t, ps in d.topics),
                )
                for d in r.transactions
            ),
        )

    ids = [str(t) for t in request.transactional_ids]
    return rt.call(lambda reply: rt.describe_transactions(ids, reply), encode)


def list_txns(rt: TxnRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """ListTransactions (66, KIP-664) v0: filtered by state names and producer ids."""
    resp_t = response_type(broker, ctx)
    state_t = child(resp_t, "transaction_states")

    def encode(r: api.ListTransactionsResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(r.error),
            unknown_state_filters=r.unknown_state_filters,
            transaction_states=tuple(
                make(
                    state_t,
                    transactional_id=t.transactional_id,
                    producer_id=t.producer_id,
                    transaction_state=t.state,
                )
                for t in r.transactions
            ),
        )

    states = [str(s) for s in request.state_filters]
    pids = [int(p) for p in request.producer_id_filters]
    return rt.call(lambda reply: rt.list_transactions(states, pids, reply), encode)
