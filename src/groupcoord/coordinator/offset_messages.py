"""What the offsets manager answers with, as values: the OffsetCommit answers (a one-partition
answer made once and reused), the offset a commit record stands for, and the maps from a
failed write's storage error to the code each request answers."""

from __future__ import annotations

from groupcoord.coordinator.group import CommittedOffset
from groupcoord.coordinator.records import OffsetCommitValue
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopicResponse,
    TxnOffsetCommitRequest,
)


def committed_offset(value: OffsetCommitValue) -> CommittedOffset:
    """The offset a commit record's value stands for (plain or pending a transaction)."""
    return CommittedOffset(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp=value.commit_timestamp,
        expire_timestamp=value.expire_timestamp,
    )


# Write-error translation, reference §2.12 (offsets).
OFFSET_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


# Kafka 4.x, for writes whose failure 3.x never reported (DeleteGroups):
# CoordinatorOperationExceptionHelper.handleOperationException.
OPERATION_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}
# Kafka 4.x, for a require_stable OffsetFetch whose awaited write failed:
# GroupCoordinatorService.handleOffsetFetchException (then handleOperationException).
FETCH_WRITE_ERRORS = {
    **OPERATION_WRITE_ERRORS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.NOT_COORDINATOR,
}


def map_offset_write_error(code: ErrorCode) -> ErrorCode:
    return OFFSET_WRITE_ERRORS.get(code, code)


#: (topic, partition, code) -> the answer of a one-partition commit (see commit_response).
_ONE_PARTITION_ANSWERS: dict[tuple[str, int, ErrorCode], OffsetCommitResponse] = {}
#: Entries kept before that cache starts over (bounds it when many partitions commit).
_ANSWER_CACHE_SIZE = 10_000


def commit_response(
    req: OffsetCommitRequest | TxnOffsetCommitRequest, results: dict[tuple[str, int], ErrorCode]
) -> OffsetCommitResponse:
    """Each partition of the request answered with its code in ``results``."""
    if len(req.topics) == 1 and len(req.topics[0].partitions) == 1:
        # One partition of one topic: the answer depends on its name, index and code only,
        # and answers are immutable, so each is made once.
        t = req.topics[0]
        partition = t.partitions[0].partition
        key = (t.name, partition, results[(t.name, partition)])
        answer = _ONE_PARTITION_ANSWERS.get(key)
        if answer is None:
            if len(_ONE_PARTITION_ANSWERS) >= _ANSWER_CACHE_SIZE:
                _ONE_PARTITION_ANSWERS.clear()
            answer = _ONE_PARTITION_ANSWERS[key] = OffsetCommitResponse(
                topics=(
                    OffsetCommitTopicResponse(
                        name=key[0],
                        partitions=(OffsetCommitPartitionResponse(partition=partition, error=key[2]),),
                    ),
                )
            )
        return answer
    topics = []
    for t in req.topics:
        name = t.name
        partitions = [
            OffsetCommitPartitionResponse(partition=p.partition, error=results[(name, p.partition)])
            for p in t.partitions
        ]
        topics.append(OffsetCommitTopicResponse(name=name, partitions=tuple(partitions)))
    return OffsetCommitResponse(topics=tuple(topics))


def commit_response_all(
    req: OffsetCommitRequest | TxnOffsetCommitRequest, error: ErrorCode
) -> OffsetCommitResponse:
    """Every partition of the request answered ``error``."""
    return OffsetCommitResponse(
        topics=tuple(
            OffsetCommitTopicResponse(
                name=t.name,
                partitions=tuple(
                    [OffsetCommitPartitionResponse(partition=p.partition, error=error) for p in t.partitions]
                ),
            )
            for t in req.topics
        )
    )
