"""``groupcoord topics list|describe|create|delete|alter|delete-records``: topics over the wire, like
kafka-topics.sh (and kafka-delete-records.sh).

Metadata lists and describes topics (DescribeConfigs adds the settings that differ from the
broker's defaults), CreateTopics / DeleteTopics create and delete them, CreatePartitions and
IncrementalAlterConfigs (or AlterConfigs) alter them. Everything goes through
:class:`groupcoord.admin.client.AdminClient`, so the verbs work against any Kafka-compatible broker; a verb
whose API the broker does not serve says which API it needs.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from groupcoord.admin.client import (
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    AdminClient,
    AdminError,
    UsageError,
    check_error,
    error_name,
)
from groupcoord.admin.command import connection_options, emit, guarded, table

log = logging.getLogger(__name__)

_TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
_SET = 0  # IncrementalAlterConfigs operation SET
_DELETE = 1  # ... DELETE


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDescription:
    name: str
    internal: bool
    partitions: tuple[PartitionInfo, ...]
    #: settings not at the broker's default (from DescribeConfigs; empty when it is not served)
    configs: dict[str, str | None]


def list_topics(admin: AdminClient, *, internal: bool = False) -> list[str]:
    r = admin.metadata(None)
    return sorted(t.name for t in r.topics if internal or not bool(t.is_internal))


def describe_topics(admin: AdminClient, topics: Sequence[str] | None) -> list[TopicDescription]:
    """Each topic's partitions and non-default settings (every non-internal topic when None)."""
    r = admin.metadata(topics)
    out = []
    for t in sorted(r.topics, key=lambda t: t.name):
        check_error(t.error_code, f"topic {t.name!r}")
        if topics is None and bool(t.is_internal):
            continue
        parts = tuple(
            PartitionInfo(
                partition=int(p.partition_index),
                leader=int(p.leader_id),
                replicas=tuple(int(x) for x in p.replica_nodes),
                isr=tuple(int(x) for x in p.isr_nodes),
            )
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
        )
        out.append(TopicDescription(name=t.name, internal=bool(t.is_internal), partitions=parts, configs={}))
    if out and admin.bootstrap.serves(DESCRIBE_CONFIGS):
        c = admin.bootstrap.call(
            DESCRIBE_CONFIGS,
            resources=[
                {"resource_type": _TOPIC_RESOURCE, "resource_name": d.name, "configuration_keys": None}
                for d in out
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        configs: dict[str, dict[str, str | None]] = {}
        for res in c.results:
            if int(res.error_code) != 0:
                log.info("DescribeConfigs %s: %s", res.resource_name, error_name(res.error_code))
                continue
            configs[res.resource_name] = {
                e.name: e.value
                for e in res.configs
                if not _is_default(e) and not bool(getattr(e, "is_sensitive", False))
            }
        out = [
            TopicDescription(
                name=d.name, internal=d.internal, partitions=d.partitions, configs=configs.get(d.name, {})
            )
            for d in out
        ]
    return out


def _is_default(entry: Any) -> bool:
    source = getattr(entry, "config_source", None)
    if source is not None:
        return int(source) not in (1,)  # DYNAMIC_TOPIC_CONFIG: set on the topic
    return bool(getattr(entry, "is_default", False))


def create_topic(
    admin: AdminClient, name: str, *, partitions: int, replication_factor: int, configs: dict[str, str]
) -> None:
    r = admin.bootstrap.call(
        CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in sorted(configs.items())],
            }
        ],
        timeout=30_000,
        validate_only=False,
    )
    for t in r.topics:
        if int(t.error_code) != 0:
            message = getattr(t, "error_message", None)
            raise AdminError(
                f"CreateTopics({t.name!r}): {error_name(t.error_code)}" + (f": {message}" if message else "")
            )


def delete_topics(admin: AdminClient, names: Sequence[str]) -> dict[str, str]:
    r = admin.bootstrap.call(DELETE_TOPICS, topic_names=list(names), timeout=30_000)
    return {t.name: "ok" if int(t.error_code) == 0 else error_name(t.error_code) for t in r.responses}


def alter_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int | None,
    set_configs: dict[str, str],
    delete_configs: Sequence[str],
) -> None:
    conn = admin.bootstrap
    if partitions is not None:
        if not conn.serves(CREATE_PARTITIONS):
            raise AdminError(f"{conn.address} does not serve CreatePartitions, which --partitions needs")
        r = conn.call(
            CREATE_PARTITIONS,
            topics=[{"name": name, "count": partitions, "assignments": None}],
            timeout=30_000,
            validate_only=False,
        )
        for t in r.results:
            if int(t.error_code) != 0:
                message = getattr(t, "error_message", None)
                raise AdminError(
                    f"CreatePartitions({name!r}): {error_name(t.error_code)}"
                    + (f": {message}" if message else "")
                )
    if not set_configs and not delete_configs:
        return
    if conn.serves(INCREMENTAL_ALTER_CONFIGS):
        entries = [{"name": k, "config_operation": _SET, "value": v} for k, v in sorted(set_configs.items())]
        entries += [{"name": k, "config_operation": _DELETE, "value": None} for k in delete_configs]
        answer = conn.call(
            INCREMENTAL_ALTER_CONFIGS,
            resources=[{"resource_type": _TOPIC_RESOURCE, "resource_name": name, "configs": entries}],
            validate_only=False,
        )
    elif conn.serves(ALTER_CONFIGS):
        raise AdminError(
            f"{conn.address} serves only AlterConfigs (which replaces all of a topic's settings); "
            "groupcoord topics alter --config needs IncrementalAlterConfigs"
        )
    else:
        raise AdminError(
            f"{conn.address} serves neither IncrementalAlterConfigs nor AlterConfigs, which "
            "--config and --delete-config need"
        )
    for res in answer.responses:
        if int(res.error_code) != 0:
            message = getattr(res, "error_message", None)
            raise AdminError(
                f"IncrementalAlterConfigs({name!r}): {error_name(res.error_code)}"
                + (f": {message}" if message else "")
            )


def delete_records(
    admin: AdminClient, topic: str, offset: int, partitions: Sequence[int] | None
) -> dict[int, int | str]:
    """DeleteRecords below ``offset`` (-1: the high watermark) in the given partitions (default:
    all of them): partition -> the new low watermark, or the error's name."""
    conn = admin.bootstrap
    if not conn.serves(DELETE_RECORDS):
        raise AdminError(f"{conn.address} does not serve DeleteRecords, which delete-records needs")
    if partitions is None:
        (found,) = describe_topics(admin, [topic])
        partitions = [p.partition for p in found.partitions]
    r = conn.call(
        DELETE_RECORDS,
        topics=[
            {"name": topic, "partitions": [{"partition_index": p, "offset": offset} for p in partitions]}
        ],
        timeout=30_000,
    )
    out: dict[int, int | str] = {}
    for t in r.topics:
        for p in t.partitions:
            code = int(p.error_code)
            out[int(p.partition_index)] = int(p.low_watermark) if code == 0 else error_name(code)
    return out


# ------------------------------------------------------------------------------ CLI
def _configs(items: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config wants KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def _run_list(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        names = list_topics(admin, internal=args.internal)
    emit(args, names, "".join(f"{n}\n" for n in names))
    return 0


def _format(d: TopicDescription) -> str:
    settings = ",".join(f"{k}={v}" for k, v in sorted(d.configs.items())) or "-"
    head = f"Topic: {d.name}  Partitions: {len(d.partitions)}  Configs: {settings}"
    rows = [
        (
            str(p.partition),
            str(p.leader),
            ",".join(map(str, p.replicas)) or "-",
            ",".join(map(str, p.isr)) or "-",
        )
        for p in d.partitions
    ]
    return "\n".join([head, *table(("PARTITION", "LEADER", "REPLICAS", "ISR"), rows)]) + "\n"


def _run_describe(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        found = describe_topics(admin, args.topics or None)
    emit(args, [asdict(d) for d in found], "\n".join(_format(d) for d in found))
    return 0


def _run_create(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        create_topic(
            admin,
            args.topic,
            partitions=args.partitions,
            replication_factor=args.replication_factor,
            configs=_configs(args.config),
        )
    emit(args, {"topic": args.topic, "created": True}, f"Created topic {args.topic}.\n")
    return 0


def _run_delete(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        results = delete_topics(admin, args.topics)
    emit(args, results, "\n".join(table(("TOPIC", "RESULT"), sorted(results.items()))) + "\n")
    return 0 if all(v == "ok" for v in results.values()) else 1


def _run_alter(args: argparse.Namespace) -> int:
    if args.partitions is None and not args.config and not args.delete_config:
        raise UsageError("say what to change: --partitions N, --config KEY=VALUE or --delete-config KEY")
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        alter_topic(
            admin,
            args.topic,
            partitions=args.partitions,
            set_configs=_configs(args.config),
            delete_configs=args.delete_config or [],
        )
    emit(args, {"topic": args.topic, "altered": True}, f"Altered topic {args.topic}.\n")
    return 0


def _run_delete_records(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        results = delete_records(admin, args.topic, args.offset, args.partition)
    rows = [(str(p), str(v)) for p, v in sorted(results.items())]
    emit(
        args,
        {str(p): v for p, v in sorted(results.items())},
        "\n".join(table(("PARTITION", "LOW_WATERMARK"), rows)) + "\n",
    )
    return 0 if all(isinstance(v, int) for v in results.values()) else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``groupcoord topics list|describe|create|delete|alter``."""
    topics = subparsers.add_parser("topics", help="list, describe, create, delete and alter topics")
    sub = topics.add_subparsers(dest="topics_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        connection_options(p)
        p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("list", help="topic names (Metadata)")
    common(p)
    p.add_argument("--internal", action="store_true", help="include internal topics")
    p.set_defaults(func=guarded(_run_list))

    p = sub.add_parser("describe", help="partitions, leaders and non-default settings")
    common(p)
    p.add_argument("topics", nargs="*", metavar="TOPIC", help="default: every non-internal topic")
    p.set_defaults(func=guarded(_run_describe))

    p = sub.add_parser("create", help="create a topic (CreateTopics)")
    common(p)
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--partitions", type=int, default=-1, help="default: the broker's num.partitions")
    p.add_argument("--replication-factor", type=int, default=-1, help="default: the broker's")
    p.add_argument("--config", action="append", metavar="KEY=VALUE", help="a topic setting (repeatable)")
    p.set_defaults(func=guarded(_run_create))

    p = sub.add_parser("delete", help="delete topics (DeleteTopics)")
    common(p)
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    p.set_defaults(func=guarded(_run_delete))

    p = sub.add_parser(
        "alter",
        help="add partitions (CreatePartitions) or change settings (IncrementalAlterConfigs)",
    )
    common(p)
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--partitions", type=int, default=None, help="the new partition count")
    p.add_argument("--config", action="append", metavar="KEY=VALUE", help="set a setting (repeatable)")
    p.add_argument("--delete-config", action="append", metavar="KEY", help="back to the default")
    p.set_defaults(func=guarded(_run_alter))

    p = sub.add_parser(
        "delete-records",
        help="delete the records below an offset (DeleteRecords), like kafka-delete-records.sh",
    )
    common(p)
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--offset", type=int, required=True, help="the new first offset; -1: the high watermark")
    p.add_argument("--partition", type=int, action="append", help="a partition (repeatable; default: all)")
    p.set_defaults(func=guarded(_run_delete_records))
