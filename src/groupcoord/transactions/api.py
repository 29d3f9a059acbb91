"""The transaction coordinator's requests and responses, independent of any wire library.

The broker translates the wire messages (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, DescribeTransactions, ListTransactions) to and from these values.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.errors import ErrorCode

#: ``RecordBatch.NO_PRODUCER_ID`` / ``NO_PRODUCER_EPOCH``.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdRequest:
    transactional_id: str
    transaction_timeout_ms: int
    #: KIP-360: the id and epoch the producer has (-1 when it has none).
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdResponse:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: TopicPartitions


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnResponse:
    """One code for the whole request (every partition of it gets this code)."""

    error: ErrorCode
    partitions: TopicPartitions


@dataclass(frozen=True, slots=True, kw_only=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AddOffsetsToTxnResponse:
    error: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnResponse:
    error: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionDescription:
    """One id's description; an error entry keeps the schema's zero defaults (as Kafka's does)."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    topics: TopicPartitions = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    transactions: tuple[TransactionDescription, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTransactionsResponse:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...]
    transactions: tuple[ListedTransaction, ...]
