"""``groupcoord groups``: consumer groups seen over the wire, like kafka-consumer-groups.sh.

``groups list [--state S]`` lists groups (ListGroups); ``groups describe GROUP`` shows the
group's state, protocol, generation and leader, its members with their decoded assignments,
and per partition the committed offset, the log-end offset and the lag.

Everything comes over the Kafka protocol, through :mod:`groupcoord.admin.client` (the raw
codec of ``groupcoord.protocol``, no client library), so the tool works against any broker that
speaks these APIs:

* ApiVersions picks, for each API, the highest version both sides know;
* FindCoordinator finds the group's coordinator; DescribeGroups gives the state, protocol type,
  protocol and members (client id, host, assignment bytes, decoded with the consumer protocol);
* OffsetFetch (all topics) gives the committed offsets, ListOffsets the log-end offsets;
* the **generation and the leader** are not part of any admin API (Kafka's own tool does not
  show them). They live in the group's newest GroupMetadata record in ``__consumer_offsets``
  (partition ``partition_for(group)``), which this tool reads with Fetch, as any consumer of
  that internal topic can. That record is written when the leader's assignment is stored,
  when a static member is replaced and when the group becomes Empty, so during a rebalance
  (PreparingRebalance / CompletingRebalance) it describes the last completed generation, and
  the output says so. A group that never wrote one (offsets only) has neither.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from groupcoord import clock
from groupcoord.admin.client import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    AdminClient,
    AdminError,
    UsageError,
    check_error,
    error_name,
    list_offsets,
    read_partition,
)
from groupcoord.admin.command import connection_options, emit, guarded, table
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    RecordDecodeError,
    decode_record,
    partition_for,
)
from groupcoord.formats.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)

log = logging.getLogger(__name__)

__all__ = [
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "PartitionLag",
    "describe_group",
    "format_description",
    "format_listing",
    "list_groups",
    "register",
]


# ------------------------------------------------------------------------------ values
@dataclass(frozen=True, slots=True, kw_only=True)
class GroupListing:
    group_id: str
    state: str | None  # None when the broker's ListGroups is older than v4
    protocol_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    #: Decoded consumer-protocol assignment as ``((topic, (partitions...)), ...)``; None when
    #: the group is not Stable, not a consumer group, or the bytes do not decode.
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: nothing committed
    log_end: int | None  # None: the broker could not tell (e.g. the topic is gone)
    lag: int | None
    member_id: str | None
    client_id: str | None
    host: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    #: From the newest GroupMetadata record in __consumer_offsets (see the module docstring).
    generation: int | None
    leader: str | None
    metadata_current: bool  # False while a rebalance has not yet written the new generation
    coordinator: str
    members: tuple[MemberDescription, ...]
    partitions: tuple[PartitionLag, ...]


def _newest_group_metadata(admin: AdminClient, group_id: str) -> GroupMetadataValue | None:
    """The group's newest GroupMetadata record value in ``__consumer_offsets`` (None: none or
    a tombstone), read with Fetch from the log start to the high watermark."""
    leaders = admin.leaders([OFFSETS_TOPIC])
    count = sum(1 for t, _ in leaders if t == OFFSETS_TOPIC)
    if count == 0:
        return None
    tp = (OFFSETS_TOPIC, partition_for(group_id, count))
    conn = leaders.get(tp)
    if conn is None:
        return None
    start = list_offsets(leaders, [tp], EARLIEST_TIMESTAMP).get(tp, 0)
    end = list_offsets(leaders, [tp], LATEST_TIMESTAMP).get(tp, 0)
    found: GroupMetadataValue | None = None
    for _, rec in read_partition(conn, tp[0], tp[1], start, end):
        if rec.key is None:
            continue
        try:
            record = decode_record(bytes(rec.key), None if rec.value is None else bytes(rec.value))
        except (RecordDecodeError, ValueError):
            continue
        if record is not None and isinstance(record.key, GroupMetadataKey) and record.key.group == group_id:
            found = record.value if isinstance(record.value, GroupMetadataValue) else None
    return found


# ------------------------------------------------------------------------------ commands
def list_groups(admin: AdminClient, states: Sequence[str] = ()) -> list[GroupListing]:
    """Every broker's groups (each coordinator lists only its own), by group id."""
    out: dict[str, GroupListing] = {}
    for conn in admin.brokers():
        if states and conn.version(LIST_GROUPS) < 4:
            raise AdminError(f"{conn.address}: ListGroups is older than v4 and cannot filter by state")
        r = conn.call(LIST_GROUPS, states_filter=list(states), types_filter=[])
        check_error(r.error_code, f"ListGroups on {conn.address}")
        for g in r.groups:
            out[g.group_id] = GroupListing(
                group_id=g.group_id,
                state=getattr(g, "group_state", None),
                protocol_type=g.protocol_type,
            )
    return [out[k] for k in sorted(out)]


def describe_group(admin: AdminClient, group_id: str) -> GroupDescription:
    coord = admin.coordinator(group_id)
    r = coord.call(DESCRIBE_GROUPS, groups=[group_id], include_authorized_operations=False)
    g = r.groups[0]
    check_error(g.error_code, f"DescribeGroups({group_id!r})")

    members = []
    owners: dict[tuple[str, int], MemberDescription] = {}
    for m in g.members:
        assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None
        raw = bytes(m.member_assignment)
        if g.protocol_type == CONSUMER_PROTOCOL_TYPE and raw:
            try:
                assignment = decode_assignment(raw).partitions
            except ConsumerProtocolError as exc:
                log.warning("member %s: undecodable assignment: %s", m.member_id, exc)
        member = MemberDescription(
            member_id=m.member_id,
            group_instance_id=getattr(m, "group_instance_id", None),
            client_id=m.client_id,
            host=m.client_host,
            assignment=assignment,
        )
        members.append(member)
        for topic, parts in assignment or ():
            for p in parts:
                owners[(topic, p)] = member

    f = coord.call(OFFSET_FETCH, group_id=group_id, topics=None, require_stable=False)
    check_error(f.error_code, f"OffsetFetch({group_id!r})")
    committed: dict[tuple[str, int], int] = {}
    for t in f.topics:
        for p in t.partitions:
            check_error(p.error_code, f"OffsetFetch({group_id!r}) {t.name}-{int(p.partition_index)}")
            if int(p.committed_offset) >= 0:
                committed[(t.name, int(p.partition_index))] = int(p.committed_offset)

    wanted = sorted(set(committed) | set(owners))
    leaders = admin.leaders({t for t, _ in wanted}) if wanted else {}
    ends = list_offsets(leaders, wanted, LATEST_TIMESTAMP)
    partitions = []
    for tp in wanted:
        owner = owners.get(tp)
        done = committed.get(tp)
        end = ends.get(tp)
        partitions.append(
            PartitionLag(
                topic=tp[0],
                partition=tp[1],
                committed=done,
                log_end=end,
                lag=None if done is None or end is None else max(end - done, 0),
                member_id=owner.member_id if owner else None,
                client_id=owner.client_id if owner else None,
                host=owner.host if owner else None,
            )
        )

    record = _newest_group_metadata(admin, group_id)
    return GroupDescription(
        group_id=group_id,
        state=g.group_state,
        protocol_type=g.protocol_type,
        protocol=g.protocol_data,
        generation=record.generation if record is not None else None,
        leader=record.leader if record is not None else None,
        metadata_current=g.group_state in ("Stable", "Empty", "Dead"),
        coordinator=coord.address,
        members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
        partitions=tuple(partitions),
    )


# ------------------------------------------------------------------------------ changes
#: Group states a ListGroups v4+ filter knows (Kafka's ``GroupState``; matched case-insensitively).
GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)
#: States in which a group has no active members, so its offsets may be changed by an admin
#: (Kafka's ConsumerGroupCommand resets only Empty or Dead groups).
INACTIVE_STATES = ("Empty", "Dead")


def canonical_state(text: str) -> str:
    """``text`` as a known group state name (any case), or AdminError naming the known ones."""
    import difflib

    for state in GROUP_STATES:
        if state.lower() == text.strip().lower():
            return state
    close = difflib.get_close_matches(text, GROUP_STATES, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise AdminError(f"unknown group state {text!r}{hint}; known states: {', '.join(GROUP_STATES)}")


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it names a zone)."""
    try:
        return clock.parse_time_ms(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetMode:
    """Where to move committed offsets (exactly one of Kafka's ``--to-*``/``--shift-by`` options)."""

    kind: str  # earliest | latest | offset | datetime | shift
    value: int = 0  # the offset, the timestamp (epoch ms) or the shift


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetReset:
    group_id: str
    topic: str
    partition: int
    current: int | None
    new_offset: int


def group_state(admin: AdminClient, group_id: str) -> str:
    coord = admin.coordinator(group_id)
    r = coord.call(DESCRIBE_GROUPS, groups=[group_id], include_authorized_operations=False)
    g = r.groups[0]
    check_error(g.error_code, f"DescribeGroups({group_id!r})")
    return str(g.group_state)


def committed_offsets(admin: AdminClient, group_id: str) -> dict[tuple[str, int], int]:
    f = admin.coordinator(group_id).call(OFFSET_FETCH, group_id=group_id, topics=None, require_stable=False)
    check_error(f.error_code, f"OffsetFetch({group_id!r})")
    out: dict[tuple[str, int], int] = {}
    for t in f.topics:
        for p in t.partitions:
            if int(p.error_code) == 0 and int(p.committed_offset) >= 0:
                out[(t.name, int(p.partition_index))] = int(p.committed_offset)
    return out


def topic_partitions(admin: AdminClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """Each named topic's partitions, from Metadata; AdminError for a topic the broker lacks."""
    r = admin.metadata(sorted(set(topics)))
    out: dict[str, list[int]] = {}
    for t in r.topics:
        check_error(t.error_code, f"topic {t.name!r}")
        out[t.name] = sorted(int(p.partition_index) for p in t.partitions)
    return out


def plan_reset(
    admin: AdminClient,
    group_id: str,
    scope: Sequence[tuple[str, tuple[int, ...]]] | None,
    mode: ResetMode,
) -> list[OffsetReset]:
    """The new committed offset of each partition in ``scope`` (None: every partition the group has
    committed), as Kafka's ConsumerGroupCommand computes it: ``--to-offset`` and ``--shift-by`` are
    kept within [log start, log end]; ``--to-datetime`` takes the first offset whose timestamp is at
    or after the time (the log end when there is none). Only an inactive group may be reset."""
    state = group_state(admin, group_id)
    if state not in INACTIVE_STATES:
        raise AdminError(
            f"offsets of group {group_id!r} can only be reset while it is inactive (Empty), "
            f"but it is {state}; stop its consumers first"
        )
    current = committed_offsets(admin, group_id)
    if scope is None:
        wanted = sorted(current)
    else:
        whole = [t for t, parts in scope if not parts]
        known = topic_partitions(admin, whole) if whole else {}
        wanted = sorted({(t, p) for t, parts in scope for p in (parts or tuple(known.get(t, ())))})
    if not wanted:
        return []
    leaders = admin.leaders({t for t, _ in wanted})
    missing = [f"{t}-{p}" for t, p in wanted if (t, p) not in leaders]
    if missing:
        raise AdminError(f"no such partition: {', '.join(missing)}")
    earliest = list_offsets(leaders, wanted, EARLIEST_TIMESTAMP)
    latest = list_offsets(leaders, wanted, LATEST_TIMESTAMP)
    at_time = list_offsets(leaders, wanted, mode.value) if mode.kind == "datetime" else {}
    plan = []
    for tp in wanted:
        lo, hi = earliest[tp], latest[tp]
        now = current.get(tp)
        if mode.kind == "earliest":
            new = lo
        elif mode.kind == "latest":
            new = hi
        elif mode.kind == "offset":
            new = min(max(mode.value, lo), hi)
        elif mode.kind == "shift":
            if now is None:
                raise AdminError(f"cannot shift {tp[0]}-{tp[1]}: group {group_id!r} has no committed offset")
            new = min(max(now + mode.value, lo), hi)
        elif mode.kind == "datetime":
            found = at_time.get(tp, -1)
            new = hi if found < 0 else found
        else:
            raise AdminError(f"unknown reset mode {mode.kind!r}")
        plan.append(OffsetReset(group_id=group_id, topic=tp[0], partition=tp[1], current=now, new_offset=new))
    return plan


def commit_offsets(admin: AdminClient, group_id: str, plan: Sequence[OffsetReset]) -> None:
    """Commit ``plan`` as an admin (generation -1, no member id), which the coordinator accepts
    only for a group with no active members."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for r in plan:
        topics.setdefault(r.topic, []).append(
            {
                "partition_index": r.partition,
                "committed_offset": r.new_offset,
                "committed_leader_epoch": -1,
                "commit_timestamp": -1,
                "committed_metadata": "",
            }
        )
    answer = admin.coordinator(group_id).call(
        OFFSET_COMMIT,
        group_id=group_id,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
    )
    for t in answer.topics:
        for p in t.partitions:
            check_error(p.error_code, f"OffsetCommit({group_id!r}) {t.name}-{int(p.partition_index)}")


def delete_groups(admin: AdminClient, group_ids: Sequence[str]) -> dict[str, str]:
    """DeleteGroups at each group's coordinator: group id -> "ok" or the error's name."""
    out: dict[str, str] = {}
    for group_id in group_ids:
        r = admin.coordinator(group_id).call(DELETE_GROUPS, groups_names=[group_id])
        for result in r.results:
            code = int(result.error_code)
            out[result.group_id] = "ok" if code == 0 else error_name(code)
    return out


def delete_offsets(
    admin: AdminClient, group_id: str, scope: Sequence[tuple[str, tuple[int, ...]]]
) -> dict[tuple[str, int], str]:
    """OffsetDelete of the group's committed offsets in ``scope`` (a topic without partitions: all
    of them): (topic, partition) -> "ok" or the error's name."""
    whole = [t for t, parts in scope if not parts]
    known = topic_partitions(admin, whole) if whole else {}
    wanted = sorted({(t, p) for t, parts in scope for p in (parts or tuple(known.get(t, ())))})
    topics: dict[str, list[dict[str, Any]]] = {}
    for t, p in wanted:
        topics.setdefault(t, []).append({"partition_index": p})
    r = admin.coordinator(group_id).call(
        OFFSET_DELETE, group_id=group_id, topics=[{"name": t, "partitions": ps} for t, ps in topics.items()]
    )
    check_error(r.error_code, f"OffsetDelete({group_id!r})")
    out: dict[tuple[str, int], str] = {}
    for t in r.topics:
        for p in t.partitions:
            code = int(p.error_code)
            out[(t.name, int(p.partition_index))] = "ok" if code == 0 else error_name(code)
    return out


def parse_topic_scope(items: Sequence[str]) -> list[tuple[str, tuple[int, ...]]]:
    """``TOPIC`` or ``TOPIC:0,1,2`` (kafka-consumer-groups.sh's --topic syntax)."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for item in items:
        topic, sep, parts = item.partition(":")
        if not topic:
            raise AdminError(f"bad --topic {item!r}: expected TOPIC or TOPIC:P,P,...")
        try:
            partitions = tuple(sorted({int(x) for x in parts.split(",") if x.strip()})) if sep else ()
        except ValueError:
            raise AdminError(f"bad --topic {item!r}: partitions must be numbers") from None
        out.append((topic, partitions))
    return out


# ------------------------------------------------------------------------------ output
def _dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _assignment_text(assignment: tuple[tuple[str, tuple[int, ...]], ...] | None) -> str:
    if assignment is None:
        return "-"
    if not assignment:
        return "(none)"
    return " ".join(f"{topic}:{','.join(str(p) for p in parts)}" for topic, parts in assignment)


def format_listing(groups: Sequence[GroupListing]) -> str:
    rows = [(g.group_id, _dash(g.state), _dash(g.protocol_type)) for g in groups]
    return "\n".join(table(("GROUP", "STATE", "PROTOCOL-TYPE"), rows)) + "\n"


def format_description(d: GroupDescription) -> str:
    note = "" if d.metadata_current else " (last completed generation; a rebalance is in progress)"
    head = [
        ("Group", d.group_id),
        ("Coordinator", d.coordinator),
        ("State", d.state),
        ("Protocol type", _dash(d.protocol_type)),
        ("Protocol", _dash(d.protocol)),
        ("Generation", _dash(d.generation) + (note if d.generation is not None else "")),
        ("Leader", _dash(d.leader)),
        ("Members", str(len(d.members))),
    ]
    width = max(len(k) for k, _ in head) + 1
    out = [f"{(k + ':').ljust(width)} {v}" for k, v in head]
    if d.state == "Dead" and not d.members and not d.partitions:
        out += ["", f"Group {d.group_id!r} does not exist (or was deleted)."]
    if d.members:
        out.append("")
        out += table(
            ("MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"),
            [
                (m.member_id, _dash(m.group_instance_id), m.client_id, m.host, _assignment_text(m.assignment))
                for m in d.members
            ],
        )
    if d.partitions:
        out.append("")
        out += table(
            (
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
            ),
            [
                (
                    p.topic,
                    str(p.partition),
                    _dash(p.committed),
                    _dash(p.log_end),
                    _dash(p.lag),
                    _dash(p.member_id),
                    _dash(p.host),
                    _dash(p.client_id),
                )
                for p in d.partitions
            ],
        )
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ CLI
def _run_list(args: argparse.Namespace) -> int:
    try:
        states = [canonical_state(s) for item in args.state or () for s in item.split(",") if s]
    except AdminError as exc:
        raise UsageError(str(exc)) from None
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        groups = list_groups(admin, states)
    emit(args, [asdict(g) for g in groups], format_listing(groups))
    return 0


def _target_groups(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in list_groups(admin)]
    if not args.group:
        raise UsageError("name a group (--group GROUP, repeatable) or give --all-groups")
    return list(dict.fromkeys(args.group))


def _run_describe(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        if args.all_groups:
            names = [g.group_id for g in list_groups(admin)]
        elif args.group:
            names = [args.group]
        else:
            raise UsageError("name a GROUP or give --all-groups")
        descriptions = [describe_group(admin, name) for name in names]
    unknown = [d.group_id for d in descriptions if d.state == "Dead" and not d.members and not d.partitions]
    if args.json:
        data: Any = [asdict(d) for d in descriptions] if args.all_groups else asdict(descriptions[0])
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(format_description(d) for d in descriptions))
    if unknown and not args.all_groups:
        sys.stderr.write(f"groupcoord groups: group {unknown[0]!r} does not exist\n")
        return 1
    return 0


def _reset_mode(args: argparse.Namespace) -> ResetMode:
    if args.to_earliest:
        return ResetMode(kind="earliest")
    if args.to_latest:
        return ResetMode(kind="latest")
    if args.to_offset is not None:
        return ResetMode(kind="offset", value=args.to_offset)
    if args.shift_by is not None:
        return ResetMode(kind="shift", value=args.shift_by)
    if args.to_datetime is not None:
        return ResetMode(kind="datetime", value=parse_time_ms(args.to_datetime))
    raise UsageError(
        "say where to: --to-earliest, --to-latest, --to-offset N, --to-datetime TIME or --shift-by N"
    )


def _run_reset(args: argparse.Namespace) -> int:
    mode = _reset_mode(args)
    if not args.all_topics and not args.topic:
        raise UsageError("name the partitions: --topic TOPIC[:P,P...] (repeatable) or --all-topics")
    scope = None if args.all_topics else parse_topic_scope(args.topic)
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        plans = {g: plan_reset(admin, g, scope, mode) for g in _target_groups(admin, args)}
        if args.execute:
            for g, plan in plans.items():
                if plan:
                    commit_offsets(admin, g, plan)
    rows = [r for plan in plans.values() for r in plan]
    text = "\n".join(
        table(
            ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"),
            [(r.group_id, r.topic, str(r.partition), _dash(r.current), str(r.new_offset)) for r in rows],
        )
    )
    emit(args, {"executed": bool(args.execute), "offsets": [asdict(r) for r in rows]}, text + "\n")
    if not args.execute:
        sys.stderr.write("dry run: nothing was changed; add --execute to commit these offsets\n")
    return 0


def _run_delete(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        results = delete_groups(admin, _target_groups(admin, args))
    text = "\n".join(table(("GROUP", "RESULT"), sorted(results.items()))) + "\n"
    emit(args, results, text)
    return 0 if all(v == "ok" for v in results.values()) else 1


def _run_delete_offsets(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        results = delete_offsets(admin, args.group, parse_topic_scope(args.topic))
    rows = [(t, str(p), r) for (t, p), r in sorted(results.items())]
    emit(
        args,
        [{"topic": t, "partition": p, "result": r} for (t, p), r in sorted(results.items())],
        "\n".join(table(("TOPIC", "PARTITION", "RESULT"), rows)) + "\n",
    )
    return 0 if all(r == "ok" for r in results.values()) else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``groups list`` and ``groups describe`` to the ``groupcoord`` command line."""
    groups = subparsers.add_parser("groups", help="list and describe consumer groups over the wire")
    sub = groups.add_subparsers(dest="groups_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        connection_options(p)
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p_list = sub.add_parser("list", help="list groups (ListGroups)")
    common(p_list)
    p_list.add_argument(
        "--state",
        action="append",
        metavar="STATE",
        help="only groups in this state, e.g. Stable or Empty (repeatable, or comma separated)",
    )
    p_list.set_defaults(func=guarded(_run_list))

    p_describe = sub.add_parser(
        "describe",
        help="members, assignments, offsets and lag of one group",
        description="State, protocol, members and per-partition lag of GROUP. No admin API carries "
        "the generation or the leader: they are read (with Fetch) from the group's newest "
        "GroupMetadata record in __consumer_offsets, so during a rebalance they describe the "
        "last completed generation, and the output says so.",
    )
    common(p_describe)
    p_describe.add_argument("group", metavar="GROUP", nargs="?")
    p_describe.add_argument("--all-groups", action="store_true", help="describe every group")
    p_describe.set_defaults(func=guarded(_run_describe))

    def targets(p: argparse.ArgumentParser) -> None:
        p.add_argument("--group", action="append", metavar="GROUP", help="a group (repeatable)")
        p.add_argument("--all-groups", action="store_true", help="every group the brokers know")

    p_reset = sub.add_parser(
        "reset-offsets",
        help="move an inactive group's committed offsets (dry run unless --execute)",
        description="Like kafka-consumer-groups.sh --reset-offsets: prints the new offsets and "
        "changes nothing unless --execute is given. Only groups without active members (Empty) "
        "can be reset. --to-offset and --shift-by stay within the log's start and end.",
    )
    common(p_reset)
    targets(p_reset)
    scope = p_reset.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]", help="partitions to reset")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group committed")
    to = p_reset.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="the log start offset")
    to.add_argument("--to-latest", action="store_true", help="the log end offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    to.add_argument("--to-datetime", metavar="TIME", help="first offset at/after TIME (ISO-8601 or ms)")
    to.add_argument("--shift-by", type=int, metavar="N", help="current offset plus N (may be negative)")
    p_reset.add_argument("--execute", action="store_true", help="commit the new offsets")
    p_reset.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    p_reset.set_defaults(func=guarded(_run_reset))

    p_delete = sub.add_parser("delete", help="delete groups that have no members (DeleteGroups)")
    common(p_delete)
    targets(p_delete)
    p_delete.set_defaults(func=guarded(_run_delete))

    p_delete_offsets = sub.add_parser(
        "delete-offsets", help="delete a group's committed offsets of topics it no longer consumes"
    )
    common(p_delete_offsets)
    p_delete_offsets.add_argument("--group", required=True, metavar="GROUP")
    p_delete_offsets.add_argument(
        "--topic", action="append", required=True, metavar="TOPIC[:P,P...]", help="repeatable"
    )
    p_delete_offsets.set_defaults(func=guarded(_run_delete_offsets))
