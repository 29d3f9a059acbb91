"""Group administration: DescribeGroups, ListGroups and DeleteGroups."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator.api import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsResponse,
)
from groupcoord.coordinator.base import (
    DEAD,
    EMPTY,
    OPERATION_WRITE_ERRORS,
    STABLE,
)
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.offsets import OffsetHandlers
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    new_group_metadata_tombstone,
    new_offset_commit_tombstone,
)
from groupcoord.coordinator.writes import (
    DeleteGroupsInFlight,
    GroupDeletionWrite,
)
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)


class AdminHandlers(OffsetHandlers):
    # ================================================================== admin
    def _handle_describe_groups(
        self, group_ids: Sequence[str], reply: Callable[[DescribeGroupsResponse], None]
    ) -> None:
        self._respond(reply, DescribeGroupsResponse(groups=tuple(self._describe_one(g) for g in group_ids)))

    def _describe_one(self, group_id: str) -> DescribedGroup:
        def dead(error: ErrorCode) -> DescribedGroup:
            return DescribedGroup(
                group_id=group_id,
                error=error,
                state=DEAD.value,
                protocol_type="",
                protocol_data="",
                members=(),
            )

        status = self._status(group_id)
        if status is not None:
            return dead(status)
        group = self._groups.get(group_id)
        if group is None:
            return dead(ErrorCode.NONE)
        stable = group.state is STABLE
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group_id=group_id,
            error=ErrorCode.NONE,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members,
        )

    def _handle_list_groups(
        self, states_filter: Sequence[str] | None, reply: Callable[[ListGroupsResponse], None]
    ) -> None:
        wanted = {s.lower() for s in states_filter} if states_filter else None
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        out = []
        for group in self._groups.values():
            p = self.partition_for(group.group_id)
            if p in self._loading or p not in self._owned or group.state is DEAD:
                continue
            if wanted is not None and group.state.value.lower() not in wanted:
                continue
            out.append(
                ListedGroup(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                )
            )
        self._respond(reply, ListGroupsResponse(error=error, groups=tuple(out)))

    def _handle_delete_groups(
        self, group_ids: Sequence[str], reply: Callable[[DeleteGroupsResponse], None]
    ) -> None:
        request = DeleteGroupsInFlight(reply=reply, order=list(dict.fromkeys(group_ids)))
        results = request.results
        for group_id in request.order:
            status = self._status(group_id)
            group = self._groups.get(group_id)
            if status is not None:
                results[group_id] = status
            elif group is None or group.state is DEAD:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                request.waiting.add(group_id)
                # Dead to other requests while the tombstones are written, but it dies (event,
                # log line) only once they are durable; if they fail, it is restored as it was,
                # as Kafka 4.x reverts to the last committed state. Offsets of commits still in
                # flight get a tombstone too, so none outlives the group in the log.
                before = group.state_snapshot()
                group.transition_to(DEAD, self._now())
                keys = list(group.offsets)
                keys.extend(k for k in self._pending_commits.get(group_id, {}) if k not in group.offsets)
                keys.extend(k for k in self._txn_pending_keys(group_id) if k not in keys)
                records = [new_offset_commit_tombstone(group_id, t, p) for (t, p) in keys]
                records.append(new_group_metadata_tombstone(group_id))
                self._append_offset_write(group_id, records, GroupDeletionWrite(group, before, request))
        self._maybe_answer_delete_groups(request)

    def _group_deletion_written(
        self, write: GroupDeletionWrite, records: Sequence[CoordinatorRecord], error: ErrorCode
    ) -> None:
        deleting = write.group
        gid = deleting.group_id
        results = write.request.results
        live = self._groups.get(gid) is deleting and deleting.state is DEAD
        if live:
            deleting.revert_state(write.restore)
        if error is ErrorCode.NONE:
            if live:
                self._transition(deleting, DEAD, EventReason.GROUP_DELETED)
            for record in records:
                self._replay(record)
            results[gid] = ErrorCode.NONE
        else:
            results[gid] = OPERATION_WRITE_ERRORS.get(error, error)
            log.warning(
                "group=%s deletion not persisted (%s): group kept, answered %s",
                gid,
                error.name,
                results[gid].name,
            )
        write.request.waiting.discard(gid)
        self._maybe_answer_delete_groups(write.request)

    def _maybe_answer_delete_groups(self, request: DeleteGroupsInFlight) -> None:
        if request.waiting or request.answered or len(request.results) != len(request.order):
            return
        request.answered = True
        self._respond(
            request.reply,
            DeleteGroupsResponse(
                results=tuple(DeleteGroupResult(group_id=g, error=request.results[g]) for g in request.order)
            ),
        )
