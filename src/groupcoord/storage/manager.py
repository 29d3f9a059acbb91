"""Every topic's partitions under one data directory.

Layout::

    <data_dir>/__topics.json              topic name -> id, partition count, configs, internal flag
    <data_dir>/<topic>-<partition>/       one PartitionLog each (see groupcoord.storage.log)
    <data_dir>/<topic>-<partition>/partition.metadata   Kafka's file: format version and topic id

``__topics.json`` also keeps the dynamic broker configs AlterConfigs set (``broker_configs``: the
cluster-wide defaults and this node's own), which override the ``log.*`` properties of the config
file for every topic without its own override, and the dynamic group configs
(``group_configs``: group id -> ``consumer.session.timeout.ms`` ...).

``__topics.json`` is the source of truth; it is replaced atomically (write, fsync, rename, fsync the
directory) on every change. If it is missing, topics are rebuilt from the ``partition.metadata``
files (configs are then lost and the broker defaults apply), and the event is logged.

Topic deletion first removes the topic from ``__topics.json``, then renames each partition
directory to ``<topic>-<partition>.<id>-delete`` and removes it; leftovers of a crash in between are
removed at the next open.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from groupcoord.clock import Clock
from groupcoord.constants import MAX_TOPIC_NAME_LENGTH
from groupcoord.errors import DataDirError, ErrorCode, KafkaError

from .journal import JOURNAL_FILE, Journal, ReplayReport
from .log import PartitionLog
from .log_config import DynamicDefault, LogConfig, dynamic_topic_defaults
from .recovery import RecoveryReport
from .segment import fsync_dir

log = logging.getLogger(__name__)

TOPICS_FILE = "__topics.json"
PARTITION_METADATA_FILE = "partition.metadata"
DELETE_SUFFIX = "-delete"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class TopicExistsError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.TOPIC_ALREADY_EXISTS, message)


class InvalidTopicError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_TOPIC_EXCEPTION, message)


class InvalidPartitionsError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_PARTITIONS, message)


class PartitionFilesError(KafkaError):
    """The operating system refused a new partition's files (too many open files, a full disk):
    nothing of the new partitions is kept, and the request gets KAFKA_STORAGE_ERROR."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.KAFKA_STORAGE_ERROR, message)


class UnknownTopicOrPartitionError(KafkaError, KeyError):
    """An unknown topic or partition; also a KeyError so lookups read naturally."""

    def __init__(self, message: str) -> None:
        KafkaError.__init__(self, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message)

    def __str__(self) -> str:
        return self.message or self.code.name


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMeta:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "topic_id": str(self.topic_id),
            "partitions": self.partitions,
            "configs": dict(self.configs),
            "internal": self.internal,
        }


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``orders-3`` -> ("orders", 3); topic names may themselves contain dashes."""
    m = _PARTITION_DIR.match(name)
    if m is None:
        return None
    return m.group("topic"), int(m.group("partition"))


def _topic_id_text(topic_id: uuid.UUID) -> str:
    """Kafka prints topic ids as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def partition_metadata_text(topic_id: uuid.UUID) -> str:
    """Kafka's ``partition.metadata`` file of a partition directory: format version and topic id."""
    return f"version: 0\ntopic_id: {_topic_id_text(topic_id)}\n"


def _parse_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


#: Partitions opened at once (recovery is mostly waiting on fsync, which releases the GIL).
_OPEN_THREADS = 16


class LogManager:
    """Creates, opens, finds and deletes partition logs; keeps the topic metadata.

    Called from one owner thread; :meth:`flush_all` may run in a worker thread.
    """

    def __init__(
        self,
        data_dir: Path,
        default_config: LogConfig,
        clock: Clock,
        *,
        journaled_topics: Collection[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir)
        self.default_config = default_config
        self._clock = clock
        self._topics: dict[str, TopicMeta] = {}
        #: Every topic by name, read-only: a snapshot replaced (never changed) on each topic
        #: change, so a reader may keep and iterate it while topics are created. A plain
        #: attribute, read without a call (an OffsetCommit checks its topics here).
        self.topics_view: Mapping[str, TopicMeta] = MappingProxyType({})
        self._by_id: dict[uuid.UUID, str] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        #: the broker's static log defaults (config file); ``default_config`` adds the dynamic ones
        self._static_default = default_config
        #: dynamic broker configs by level: "default" (cluster-wide, resource name "") and "node"
        self._broker_configs: dict[str, dict[str, str]] = {"default": {}, "node": {}}
        #: dynamic group configs (IncrementalAlterConfigs on GROUP resources): group id -> configs
        self._group_configs: dict[str, dict[str, str]] = {}
        #: called with the group id after its configs change (the group coordinator applies them)
        self.group_config_listeners: list[Callable[[str], None]] = []
        self.recovery_reports: dict[tuple[str, int], RecoveryReport] = {}
        #: topics whose partitions are made durable through :attr:`journal`
        self.journaled_topics = frozenset(journaled_topics)
        self.journal: Journal | None = None
        self.journal_report: ReplayReport | None = None
        #: bumped on every topic creation, deletion and partition increase (what the consumer
        #: groups' topics image is versioned by, as Kafka's by the metadata offset)
        self.topics_version = 0
        #: called after each such change (the group coordinator rebuilds its topics image)
        self.topic_listeners: list[Callable[[], None]] = []
        self._closed = False

    @classmethod
    def open(
        cls,
        data_dir: Path,
        default_config: LogConfig,
        clock: Clock,
        *,
        journaled_topics: Collection[str] = (),
    ) -> LogManager:
        """Load every topic from ``data_dir`` (created if absent) and recover its partitions.

        The recovery reports are logged and kept in :attr:`recovery_reports`. With
        ``journaled_topics``, those topics' partitions are made durable through the shared
        write-ahead journal (:mod:`groupcoord.storage.journal`), which is replayed here, after
        the partitions' own recovery."""
        manager = cls(data_dir, default_config, clock, journaled_topics=journaled_topics)
        manager._load()
        return manager

    # -- loading -------------------------------------------------------------------------------

    def _load(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.journaled_topics:
            self.journal = Journal(self.data_dir / JOURNAL_FILE)
        for leftover in self.data_dir.glob("*" + DELETE_SUFFIX):
            shutil.rmtree(leftover, ignore_errors=True)
        path = self.data_dir / TOPICS_FILE
        if path.exists():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                stored = raw.get("broker_configs", {})
                for level in self._broker_configs:
                    self._broker_configs[level] = {str(k): str(v) for k, v in stored.get(level, {}).items()}
                self._group_configs = {
                    str(g): {str(k): str(v) for k, v in c.items()}
                    for g, c in raw.get("group_configs", {}).items()
                }
                for name, entry in raw.get("topics", {}).items():
                    meta = TopicMeta(
                        name=name,
                        topic_id=uuid.UUID(entry["topic_id"]),
                        partitions=int(entry["partitions"]),
                        configs=dict(entry.get("configs", {})),
                        internal=bool(entry.get("internal", False)),
                    )
                    self._topics[name] = meta
            except (ValueError, KeyError, TypeError, AttributeError) as exc:  # damaged: stop, naming it
                raise DataDirError(f"{path} is damaged ({type(exc).__name__}: {exc})") from None
        else:
            self._topics = self._topics_from_partition_dirs()
            if self._topics:
                log.warning(
                    "%s missing: rebuilt %d topics from partition.metadata files (configs reset)",
                    path,
                    len(self._topics),
                )
                self._save()
        self._by_id = {m.topic_id: m.name for m in self._topics.values()}
        self.default_config = self._effective_default(self._broker_configs)
        self.topics_view = MappingProxyType(dict(self._topics))
        known = {partition_dir_name(m.name, p) for m in self._topics.values() for p in range(m.partitions)}
        for child in self.data_dir.iterdir():
            if child.is_dir() and parse_partition_dir(child.name) and child.name not in known:
                log.warning("ignoring partition directory %s: its topic is not in %s", child, TOPICS_FILE)
        self._open_partitions(
            [
                (meta, p, self.log_config_for(meta.name))
                for meta in self._topics.values()
                for p in range(meta.partitions)
            ]
        )
        if self.journal is not None:
            self.journal_report = self.journal.replay(self._journaled_log, _append_keeping_offsets)
        elif (self.data_dir / JOURNAL_FILE).exists():
            self._replay_without_journaling()
        reports = self.recovery_reports.values()
        log.info(
            "opened %d partitions of %d topics in %s: %d after an unclean shutdown, %d truncated "
            "(%d bytes), %d with rebuilt indexes, %d with offset gaps left by damage",
            len(self._logs),
            len(self._topics),
            self.data_dir,
            sum(1 for r in reports if not r.clean_shutdown),
            sum(1 for r in reports if r.truncated_bytes),
            sum(r.truncated_bytes for r in reports),
            sum(1 for r in reports if r.indexes_rebuilt),
            sum(1 for r in reports if r.gaps),
        )

    def _journaled_log(self, key: bytes) -> PartitionLog | None:
        """The partition an entry of the journal names, if its topic still exists."""
        topic_id, partition = uuid.UUID(bytes=key[:16]), int.from_bytes(key[16:20], "big", signed=True)
        name = self._by_id.get(topic_id)
        return None if name is None else self._logs.get((name, partition))

    def _replay_without_journaling(self) -> None:
        """A journal left by a run that journaled (this one does not, e.g. under an explicit
        ``log.flush.*`` policy): replay it once, then remove it."""
        journal = Journal(self.data_dir / JOURNAL_FILE)
        try:
            self.journal_report = journal.replay(self._journaled_log, _append_keeping_offsets)
        finally:
            journal.close()
        (self.data_dir / JOURNAL_FILE).unlink()
        fsync_dir(self.data_dir)

    def _topics_from_partition_dirs(self) -> dict[str, TopicMeta]:
        found: dict[str, tuple[uuid.UUID, int]] = {}
        for child in self.data_dir.iterdir():
            parsed = parse_partition_dir(child.name)
            meta_file = child / PARTITION_METADATA_FILE
            if not (child.is_dir() and parsed and meta_file.exists()):
                continue
            try:
                fields = dict(
                    line.split(":", 1) for line in meta_file.read_text().splitlines() if ":" in line
                )
                topic_id = _parse_topic_id(fields["topic_id"].strip())
            except (KeyError, ValueError) as exc:
                log.warning("ignoring %s: unreadable partition.metadata (%s)", child, exc)
                continue
            topic, partition = parsed
            _, count = found.get(topic, (topic_id, 0))
            found[topic] = (topic_id, max(count, partition + 1))
        return {
            name: TopicMeta(name=name, topic_id=tid, partitions=n, configs={}, internal=name.startswith("__"))
            for name, (tid, n) in found.items()
        }

    def _open_partitions(self, jobs: Sequence[tuple[TopicMeta, int, LogConfig]]) -> list[PartitionLog]:
        """Open (recover) many partitions. Each open is file work that mostly waits on fsync, so
        several run at once in worker threads; the manager's own maps are updated here, in the
        calling thread, once all are open."""
        results: list[tuple[PartitionLog, RecoveryReport] | BaseException] = []
        if len(jobs) > 1:
            with ThreadPoolExecutor(max_workers=min(_OPEN_THREADS, len(jobs))) as pool:
                futures = [pool.submit(self._open_files, *job) for job in jobs]
            for f in futures:
                exc = f.exception()
                results.append(f.result() if exc is None else exc)
        else:
            for job in jobs:
                try:
                    results.append(self._open_files(*job))
                except OSError as exc:
                    results.append(exc)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            # all or nothing: close what did open, so a refused topic holds no descriptor
            for r in results:
                if not isinstance(r, BaseException):
                    r[0].close()
            first = failures[0]
            if not isinstance(first, OSError):
                raise first
            reason = first.strerror or str(first)
            raise PartitionFilesError(
                f"could not open the files of {len(failures)} of {len(jobs)} partitions: {reason}"
            ) from first
        opened = [r for r in results if not isinstance(r, BaseException)]
        out = []
        for (meta, partition, _), (plog, report) in zip(jobs, opened, strict=True):
            if self.journal is not None and meta.name in self.journaled_topics:
                plog.attach_journal(self.journal, Journal.key(meta.topic_id, partition))
            self._logs[(meta.name, partition)] = plog
            self.recovery_reports[(meta.name, partition)] = report
            out.append(plog)
        return out

    def _open_files(
        self, meta: TopicMeta, partition: int, config: LogConfig
    ) -> tuple[PartitionLog, RecoveryReport]:
        pdir = self.data_dir / partition_dir_name(meta.name, partition)
        plog, report = PartitionLog.open(pdir, config, self._clock)
        meta_file = pdir / PARTITION_METADATA_FILE
        try:
            if not meta_file.exists():
                _atomic_write(meta_file, partition_metadata_text(meta.topic_id))
        except BaseException:  # a partition that could not be opened holds no descriptor
            with contextlib.suppress(OSError):
                plog.close()
            raise
        return plog, report

    def _save(self) -> None:
        self.topics_view = MappingProxyType(dict(self._topics))
        doc: dict[str, object] = {
            "version": 1,
            "topics": {name: m.to_json() for name, m in sorted(self._topics.items())},
        }
        if any(self._broker_configs.values()):
            doc["broker_configs"] = {level: dict(c) for level, c in self._broker_configs.items()}
        if self._group_configs:
            doc["group_configs"] = {g: dict(c) for g, c in sorted(self._group_configs.items())}
        _atomic_write(self.data_dir / TOPICS_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    # -- queries -------------------------------------------------------------------------------

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMeta | None:
        name = self._by_id.get(topic_id)
        return None if name is None else self._topics[name]

    def partition(self, topic: str, partition: int) -> PartitionLog:
        try:
            return self._logs[(topic, partition)]
        except KeyError:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}") from None

    def partitions(self) -> Mapping[tuple[str, int], PartitionLog]:
        return MappingProxyType(self._logs)

    def log_config_for(self, topic: str) -> LogConfig:
        """Broker defaults overridden by the topic's own configs (Kafka names)."""
        meta = self._topics.get(topic)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"unknown topic {topic}")
        return self.default_config.with_overrides(meta.configs)

    # -- changes -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("log manager is closed")

    def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str], internal: bool = False
    ) -> TopicMeta:
        """Create a topic with ``partitions`` empty partitions.

        Raises InvalidTopicError, TopicExistsError, InvalidPartitionsError, InvalidConfigError."""
        self._check_open()
        validate_topic_name(name)
        if name in self._topics:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if partitions < 1:
            raise InvalidPartitionsError(f"Number of partitions must be larger than 0, got {partitions}")
        config = self.default_config.with_overrides(configs)
        topic_id = uuid.uuid4()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = uuid.uuid4()
        meta = TopicMeta(
            name=name, topic_id=topic_id, partitions=partitions, configs=dict(configs), internal=internal
        )
        for p in range(partitions):
            stale = self.data_dir / partition_dir_name(name, p)
            if stale.exists():
                shutil.rmtree(stale)
        self._topics[name] = meta
        self._by_id[topic_id] = name
        try:
            self._open_partitions([(meta, p, config) for p in range(partitions)])
        except PartitionFilesError:
            del self._topics[name], self._by_id[topic_id]
            for p in range(partitions):
                shutil.rmtree(self.data_dir / partition_dir_name(name, p), ignore_errors=True)
            raise
        self._save()
        log.info("created topic %s id=%s partitions=%d internal=%s", name, topic_id, partitions, internal)
        self._topics_changed()
        return meta

    def create_partitions(self, name: str, new_total: int) -> TopicMeta:
        self._check_open()
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"unknown topic {name}")
        if new_total <= meta.partitions:
            raise InvalidPartitionsError(
                f"Topic currently has {meta.partitions} partitions, which is higher than or equal "
                f"to the requested {new_total}."
            )
        grown = TopicMeta(
            name=name,
            topic_id=meta.topic_id,
            partitions=new_total,
            configs=meta.configs,
            internal=meta.internal,
        )
        config = self.log_config_for(name)
        for p in range(meta.partitions, new_total):
            stale = self.data_dir / partition_dir_name(name, p)
            if stale.exists():
                shutil.rmtree(stale)
        self._open_partitions([(grown, p, config) for p in range(meta.partitions, new_total)])
        self._topics[name] = grown
        self._save()
        log.info("topic %s grew from %d to %d partitions", name, meta.partitions, new_total)
        self._topics_changed()
        return grown

    def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMeta:
        """Replace a topic's config overrides; open partitions use the new settings at once."""
        self._check_open()
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"unknown topic {name}")
        config = self.default_config.with_overrides(configs)
        changed = TopicMeta(
            name=name,
            topic_id=meta.topic_id,
            partitions=meta.partitions,
            configs=dict(configs),
            internal=meta.internal,
        )
        self._topics[name] = changed
        for p in range(meta.partitions):
            self._logs[(name, p)].config = config
        self._save()
        return changed

    def broker_configs(self, *, per_broker: bool) -> Mapping[str, str]:
        """The dynamic broker configs of one level: this node's own, or the cluster-wide defaults."""
        return MappingProxyType(dict(self._broker_configs["node" if per_broker else "default"]))

    def group_configs(self) -> Mapping[str, Mapping[str, str]]:
        """Every group's dynamic configs (group id -> name -> value), a snapshot."""
        return MappingProxyType({g: MappingProxyType(dict(c)) for g, c in self._group_configs.items()})

    def alter_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replace one group's dynamic configs (validated by the caller); kept in ``__topics.json``
        as Kafka keeps them in its metadata log, then the listeners hear of it."""
        self._check_open()
        if configs:
            self._group_configs[group_id] = dict(configs)
        else:
            self._group_configs.pop(group_id, None)
        self._save()
        for listener in list(self.group_config_listeners):
            listener(group_id)

    def dynamic_topic_defaults(self) -> dict[str, DynamicDefault]:
        """Topic config -> its default set by dynamic broker configs."""
        return dynamic_topic_defaults(self._broker_configs["node"], self._broker_configs["default"])

    def _effective_default(self, levels: Mapping[str, Mapping[str, str]]) -> LogConfig:
        dynamic = dynamic_topic_defaults(levels["node"], levels["default"])
        return self._static_default.with_overrides({name: d.value for name, d in dynamic.items()})

    def alter_broker_configs(self, configs: Mapping[str, str], *, per_broker: bool) -> None:
        """Replace one level's dynamic broker configs (broker synonyms of topic configs, e.g.
        ``log.retention.ms``); every partition without its own override follows at once.

        Raises InvalidConfigError (nothing changed) when the result is not a valid log config."""
        self._check_open()
        levels = {level: dict(c) for level, c in self._broker_configs.items()}
        levels["node" if per_broker else "default"] = dict(configs)
        new_default = self._effective_default(levels)
        for meta in self._topics.values():  # every topic must still be valid with its overrides
            new_default.with_overrides(meta.configs)
        self._broker_configs = levels
        self.default_config = new_default
        for (topic, _p), plog in self._logs.items():
            plog.config = self.log_config_for(topic)
        self._save()
        log.info("dynamic broker configs (%s) now %s", "node" if per_broker else "default", dict(configs))

    def delete_topic(self, name: str) -> TopicMeta:
        """Forget the topic and remove its directories. Raises UnknownTopicOrPartitionError."""
        self._check_open()
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"unknown topic {name}")
        del self._topics[name]
        self._by_id.pop(meta.topic_id, None)
        self._save()
        for p in range(meta.partitions):
            plog = self._logs.pop((name, p), None)
            self.recovery_reports.pop((name, p), None)
            pdir = self.data_dir / partition_dir_name(name, p)
            if plog is not None:
                plog.delete()
            if pdir.exists():
                doomed = pdir.with_name(f"{pdir.name}.{meta.topic_id.hex}{DELETE_SUFFIX}")
                os.replace(pdir, doomed)
                shutil.rmtree(doomed, ignore_errors=True)
        with contextlib.suppress(OSError):
            fsync_dir(self.data_dir)
        log.info("deleted topic %s id=%s", name, meta.topic_id)
        self._topics_changed()
        return meta

    def _topics_changed(self) -> None:
        self.topics_version += 1
        for listener in list(self.topic_listeners):
            listener()

    # -- maintenance -----------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Retention over every partition; returns the bytes deleted."""
        self._check_open()
        return sum(plog.apply_retention(now_ms) for plog in list(self._logs.values()))

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> dict[tuple[str, int], list[int]]:
        """Expire idle producers in every partition: (topic, partition) -> the ids forgotten there."""
        self._check_open()
        out: dict[tuple[str, int], list[int]] = {}
        for tp, plog in list(self._logs.items()):
            ids = plog.remove_expired_producers(now_ms, expiration_ms)
            if ids:
                out[tp] = ids
        return out

    def flush_all(self) -> None:
        """fsync every partition (safe from a worker thread)."""
        for plog in list(self._logs.values()):
            plog.flush()

    def close(self) -> None:
        """Close every partition, leaving clean-shutdown markers."""
        if self._closed:
            return
        for plog in self._logs.values():
            plog.close()
        if self.journal is not None:
            self.journal.close()  # every partition is fsynced: nothing left to replay
        self._closed = True


def _append_keeping_offsets(plog: PartitionLog, batch: bytes) -> None:
    plog.append(batch, assign_offsets=False)
