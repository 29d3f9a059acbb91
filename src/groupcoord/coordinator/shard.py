"""The classic group coordinator as a shard: handlers, timers and replay, returning results.

Sans-I/O and single-threaded, as Kafka 4.x's ``GroupCoordinatorShard``. Every entry point (a
request handler, :meth:`poll` for due timers, :meth:`complete_write` for a finished write,
:meth:`replay` and the load steps) returns a
:class:`~groupcoord.coordinator.result.CoordinatorResult`: the responses to complete now, the
records to write (each with what to do once it is durable), the events to publish. The shard
never calls a caller back; :mod:`groupcoord.runtime.coordinator_runtime` applies the results.
A request handler takes the caller's ``reply`` handle and puts it in a result, at once or when
a later call completes the request (a parked JoinGroup or SyncGroup, an OffsetCommit waiting
for its write). Time comes from the injected clock; timers are keyed
(:mod:`groupcoord.coordinator.timers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator.api import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
)
from groupcoord.coordinator.records import (
    CoordinatorRecord,
)
from groupcoord.coordinator.replay import ReplayHandlers
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.coordinator.timers import (
    DelayedHeartbeat,
    DelayedJoin,
    OffsetExpiry,
    PendingMemberExpiry,
    PendingSync,
)
from groupcoord.coordinator.writes import (
    AssignmentWrite,
    EmptyGroupWrite,
    OffsetCommitWrite,
    OffsetDeleteWrite,
    OffsetExpiryWrite,
    OffsetWrite,
    StaticMemberReplacementWrite,
    TxnOffsetCommitWrite,
)
from groupcoord.errors import ErrorCode, IllegalStateError

log = logging.getLogger(__name__)


class GroupCoordinatorShard(ReplayHandlers):
    def _poll(self) -> None:
        now = self._now()
        for key, payload in self._timer.expire(now):
            if type(key) is DelayedHeartbeat:
                self.on_expire_heartbeat(key.group_id, key.member_id)
            elif type(key) is PendingMemberExpiry:
                self.on_expire_pending_member(key.group_id, key.member_id)
            elif type(key) is DelayedJoin:
                self.on_delayed_join(key.group_id, payload)
            elif type(key) is PendingSync:
                assert isinstance(payload, int)
                self.on_expire_pending_sync(key.group_id, payload)
            elif type(key) is OffsetExpiry:
                self._timer.schedule(key, now + self._config.offsets_retention_check_interval_ms, None)
                self._expire_offsets()
            else:  # pragma: no cover - keys are all created in this package
                raise IllegalStateError(f"unknown timer key {key!r}")

    # ================================================================== entry points
    # Each runs one handler against a fresh result and returns it; see coordinator/result.py.
    def join_group(
        self, req: JoinGroupRequest, reply: Callable[[JoinGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self.handle_join_group(req, reply)
        return out

    def sync_group(
        self, req: SyncGroupRequest, reply: Callable[[SyncGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self.handle_sync_group(req, reply)
        return out

    def heartbeat(
        self, req: HeartbeatRequest, reply: Callable[[HeartbeatResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self.handle_heartbeat(req, reply)
        return out

    def leave_group(
        self, req: LeaveGroupRequest, reply: Callable[[LeaveGroupResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self.handle_leave_group(req, reply)
        return out

    def offset_commit(
        self, req: OffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_offset_commit(req, reply)
        return out

    def txn_offset_commit(
        self, req: TxnOffsetCommitRequest, reply: Callable[[OffsetCommitResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_txn_offset_commit(req, reply)
        return out

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> CoordinatorResult:
        """The live path: a COMMIT (``commit``) or ABORT marker of ``producer_id`` is durable in
        ``__consumer_offsets`` partition ``partition``; its pending offsets there are put in
        place or dropped (deferred to the end of the partition's load if it is loading)."""
        out = self._out = CoordinatorResult()
        self._complete_transaction(partition, producer_id, commit)
        return out

    def replay_transactional(self, record: CoordinatorRecord, producer_id: int) -> CoordinatorResult:
        """Replay a record of a transactional batch of ``producer_id`` (loading)."""
        out = self._out = CoordinatorResult()
        self._replay_transactional(record, producer_id)
        return out

    def replay_end_transaction(self, partition: int, producer_id: int, commit: bool) -> CoordinatorResult:
        """Replay a marker of ``producer_id`` read from ``partition`` (loading)."""
        out = self._out = CoordinatorResult()
        self._end_transaction(partition, producer_id, commit)
        return out

    def pending_transactional_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        """Producer id -> partition -> offset pending in its open transaction (tests, describe)."""
        out: dict[int, dict[tuple[str, int], int]] = {}
        for producer_id in sorted(self._open_txns.get(group_id, ())):
            pending = self._txn_offsets.get(producer_id, {}).get(group_id, {})
            out[producer_id] = {k: p.offset.offset for k, p in pending.items()}
        return out

    def offset_fetch(
        self, req: OffsetFetchRequest, reply: Callable[[OffsetFetchResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_offset_fetch(req, reply)
        return out

    def offset_delete(
        self, req: OffsetDeleteRequest, reply: Callable[[OffsetDeleteResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_offset_delete(req, reply)
        return out

    def describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_describe_groups(group_ids, reply)
        return out

    def list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_list_groups(states_filter, reply)
        return out

    def delete_groups(
        self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]
    ) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._handle_delete_groups(group_ids, reply)
        return out

    def poll(self) -> CoordinatorResult:
        """Run every timer due at the clock's current time."""
        out = self._out = CoordinatorResult()
        self._poll()
        return out

    def complete_write(self, write: PendingWrite, error: ErrorCode) -> CoordinatorResult:
        """The runtime's report that ``write`` is durable (``NONE``) or failed with ``error``."""
        out = self._out = CoordinatorResult()
        self._complete_write(write, error)
        return out

    def replay(self, record: CoordinatorRecord) -> CoordinatorResult:
        """Apply one record to the state: the one way durable state changes.

        Used while loading a partition (between :meth:`begin_loading` and
        :meth:`complete_loading`) and by tests; on the live path the shard replays a write's
        records itself when the write completes.
        """
        out = self._out = CoordinatorResult()
        self._replay(record)
        return out

    def begin_loading(self, partition: int) -> CoordinatorResult:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        out = self._out = CoordinatorResult()
        self._begin_loading(partition)
        return out

    def complete_loading(self, partition: int) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        self._complete_loading(partition)
        return out

    def unload_partition(self, partition: int) -> CoordinatorResult:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        out = self._out = CoordinatorResult()
        self._unload_partition(partition)
        return out

    def _complete_write(self, write: PendingWrite, error: ErrorCode) -> None:
        done = write.completion
        if isinstance(done, OffsetWrite):
            self._offset_write_finished(done)
            then = done.then
            if isinstance(then, OffsetCommitWrite):
                self._offset_commit_written(then, write.records, error)
            elif isinstance(then, TxnOffsetCommitWrite):
                self._txn_offset_commit_written(then, write.records, error)
            elif isinstance(then, OffsetDeleteWrite):
                self._offset_delete_written(then, write.records, error)
            elif isinstance(then, OffsetExpiryWrite):
                self._offset_expiry_written(then, write.records, error)
            else:
                self._group_deletion_written(then, write.records, error)
            if self._stable_fetches:  # a require_stable OffsetFetch waits for some write
                self._wake_stable_fetches(done.token, done.group_id, error)
        elif isinstance(done, AssignmentWrite):
            self._assignment_written(done, write.records, error)
        elif isinstance(done, EmptyGroupWrite):
            self._empty_group_written(done, write.records, error)
        elif isinstance(done, StaticMemberReplacementWrite):
            self._static_replacement_written(done, write.records, error)
        else:  # pragma: no cover - completions are all created in this package
            raise IllegalStateError(f"unknown write completion {done!r}")
