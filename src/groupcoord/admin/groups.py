"""``groupcoord groups``: groups seen over the wire, like kafka-consumer-groups.sh.

``groups list [--state S] [--type T]`` lists groups with their type (ListGroups v5: ``classic``
or ``consumer``); ``groups describe GROUP`` describes one group of either type
(:mod:`groupcoord.admin.describe`: ConsumerGroupDescribe for a KIP-848 consumer group, else
DescribeGroups), with Kafka's ``--state``, ``--members`` and ``--offsets`` tables;
``reset-offsets``, ``delete`` and ``delete-offsets`` change groups of both types with Kafka's
rules and answers.

Everything comes over the Kafka protocol, through :mod:`groupcoord.admin.client` (the raw
codec of ``groupcoord.protocol``, no client library), so the tool works against any broker that
speaks these APIs: ApiVersions picks, for each API, the highest version both sides know;
FindCoordinator finds a group's coordinator; OffsetFetch gives committed offsets, ListOffsets the
log's start and end.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from groupcoord import clock
from groupcoord.admin.client import (
    DELETE_GROUPS,
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
)
from groupcoord.admin.command import connection_options, emit, guarded, table
from groupcoord.admin.describe import (
    GroupDescription,
    MemberDescription,
    PartitionLag,
    describe_group,
    format_description,
    format_members,
    format_offsets,
    format_state,
    group_state,
    state_note,
)

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

#: The group types a ListGroups v5 filter knows (Kafka's ``GroupType``, as ``--type`` takes them).
GROUP_TYPES = ("classic", "consumer")


# ------------------------------------------------------------------------------ values
@dataclass(frozen=True, slots=True, kw_only=True)
class GroupListing:
    group_id: str
    state: str | None  # None when the broker's ListGroups is older than v4
    protocol_type: str
    #: ``classic`` or ``consumer``; None when the broker's ListGroups is older than v5
    group_type: str | None = None


# ------------------------------------------------------------------------------ commands
def list_groups(
    admin: AdminClient, states: Sequence[str] = (), types: Sequence[str] = ()
) -> list[GroupListing]:
    """Every broker's groups (each coordinator lists only its own), by group id; only those in
    ``states`` (ListGroups v4+) and of ``types`` (v5+) when given."""
    out: dict[str, GroupListing] = {}
    for conn in admin.brokers():
        if states and conn.version(LIST_GROUPS) < 4:
            raise AdminError(f"{conn.address}: ListGroups is older than v4 and cannot filter by state")
        if types and conn.version(LIST_GROUPS) < 5:
            raise AdminError(f"{conn.address}: ListGroups is older than v5 and cannot filter by type")
        r = conn.call(LIST_GROUPS, states_filter=list(states), types_filter=list(types))
        check_error(r.error_code, f"ListGroups on {conn.address}")
        for g in r.groups:
            out[g.group_id] = GroupListing(
                group_id=g.group_id,
                state=getattr(g, "group_state", None),
                protocol_type=g.protocol_type,
                group_type=getattr(g, "group_type", None),
            )
    return [out[k] for k in sorted(out)]


def canonical_types(items: Iterable[str]) -> list[str]:
    """``--type`` values (comma separated, any case) as ListGroups names them; UsageError for
    another (Kafka's ``consumerGroupTypesFromString`` refuses unknown types)."""
    out: list[str] = []
    for item in items:
        for text in item.split(","):
            name = text.strip().lower()
            if not name:
                continue
            if name not in GROUP_TYPES:
                raise UsageError(f"unknown group type {text!r}; known types: {', '.join(GROUP_TYPES)}")
            out.append(name)
    return list(dict.fromkeys(out))


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
    # Kafka's ConsumerGroupCommand.resetOffsets: the state as describeConsumerGroups gives it
    # (a KIP-848 group's own state), and its message for an active group
    state = group_state(admin, group_id)
    if state not in INACTIVE_STATES:
        raise AdminError(
            f"Assignments can only be reset if the group '{group_id}' is inactive, "
            f"but the current state is {state}."
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


def format_listing(groups: Sequence[GroupListing]) -> str:
    rows = [(g.group_id, _dash(g.group_type), _dash(g.state), _dash(g.protocol_type)) for g in groups]
    return "\n".join(table(("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"), rows)) + "\n"


# ------------------------------------------------------------------------------ CLI
def _run_list(args: argparse.Namespace) -> int:
    try:
        states = [canonical_state(s) for item in args.state or () for s in item.split(",") if s]
    except AdminError as exc:
        raise UsageError(str(exc)) from None
    types = canonical_types(args.type or ())
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        groups = list_groups(admin, states, types)
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
    unknown = [d.group_id for d in descriptions if not d.exists]
    views = [v for v in ("state", "members", "offsets") if getattr(args, f"{v}_view")]
    if len(views) > 1:
        raise UsageError("give at most one of --state, --members and --offsets")
    if args.json:
        data: Any = [asdict(d) for d in descriptions] if args.all_groups else asdict(descriptions[0])
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif views:
        # kafka-consumer-groups.sh --describe --state|--members|--offsets: a note on stderr for a
        # missing, empty or rebalancing group; no table for a missing one
        for d in sorted(descriptions, key=lambda d: d.group_id):
            note = state_note(d)
            if note:
                sys.stderr.write(note + "\n")
            if not d.exists:
                continue
            if views[0] == "state":
                sys.stdout.write(format_state(d, verbose=args.verbose))
            elif views[0] == "members":
                sys.stdout.write(format_members(d, verbose=args.verbose))
            else:
                sys.stdout.write(format_offsets(d))
    else:
        sys.stdout.write("\n".join(format_description(d) for d in descriptions))
    if unknown and not args.all_groups:
        if not views or args.json:
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
    p_list.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="only groups of this type: classic or consumer (repeatable, or comma separated)",
    )
    p_list.set_defaults(func=guarded(_run_list))

    p_describe = sub.add_parser(
        "describe",
        help="members, assignments, offsets and lag of one group",
        description="Type, state, members and per-partition lag of GROUP. A consumer group "
        "(KIP-848) shows its group epoch, target assignment epoch and assignor, and each member's "
        "epoch with its current and target assignment. A classic group shows its protocol and the "
        "generation and leader, which no admin API carries: they are read (with Fetch) from the "
        "group's newest GroupMetadata record in __consumer_offsets, so during a rebalance they "
        "describe the last completed generation, and the output says so. --state, --members and "
        "--offsets print kafka-consumer-groups.sh's tables instead.",
    )
    common(p_describe)
    p_describe.add_argument("group", metavar="GROUP", nargs="?")
    p_describe.add_argument("--all-groups", action="store_true", help="describe every group")
    p_describe.add_argument(
        "--state", dest="state_view", action="store_true", help="only the state table (Kafka's --state)"
    )
    p_describe.add_argument(
        "--members", dest="members_view", action="store_true", help="only the members (Kafka's --members)"
    )
    p_describe.add_argument(
        "--offsets", dest="offsets_view", action="store_true", help="only the offsets (Kafka's --offsets)"
    )
    p_describe.add_argument(
        "--verbose", action="store_true", help="with --state/--members: epochs and assignments too"
    )
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
