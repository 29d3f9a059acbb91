"""The broker's use of the write-ahead journal (storage/journal.py): which partitions it covers,
that an OffsetCommit is answered after the journal's sync and not a segment fsync, and that
appends no flush round waits for are synced by the periodic flush check."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from broker_harness import Env, nested, run_broker

from groupcoord.app import build_dispatcher
from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.coordinator.records import partition_for
from groupcoord.formats.batch import build_batch
from groupcoord.protocol.entities import make
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.app import KafkaServer

OFFSET_COMMIT = 8
TOPIC = "journaled-commits"


def _create(env: Env, name: str, partitions: int, *, internal: bool = False) -> None:
    env.broker.logs.create_topic(name, partitions, {}, internal=internal)


async def _until(cond: object, what: str, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.005)


def run_with_groups(data_dir: Path, scenario: Callable[[Env], Awaitable[None]]) -> None:
    """``run_broker`` with the group coordinator routed (the harness serves no group API)."""

    async def main() -> None:
        config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0"])
        clock = ManualClock()
        broker = Broker.open(config, data_dir, clock)
        groups = GroupRuntime(broker)
        server = KafkaServer(
            build_dispatcher(broker, groups), host="127.0.0.1", port=0, max_frame_bytes=1 << 20
        )
        groups.start()
        _, broker.advertised_port = await server.start()
        try:
            await asyncio.wait_for(groups.loaded.wait(), 30)
            await asyncio.wait_for(scenario(Env(broker, server, clock)), 30)
        finally:
            await server.stop(grace_s=1)
            await groups.close()
            await broker.close()

    asyncio.run(main())


def test_the_coordinators_topics_are_journaled_under_the_default_flush_policy(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        logs = env.broker.logs
        assert logs.journal is not None
        assert logs.journaled_topics == {OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC}
        _create(env, OFFSETS_TOPIC, 3, internal=True)
        _create(env, TOPIC, 1)
        assert logs.partition(OFFSETS_TOPIC, 2).journal is logs.journal
        assert logs.partition(TOPIC, 0).journal is None  # a user topic: its segments are fsynced

    run_broker(tmp_path, scenario)


def test_an_explicit_flush_policy_turns_the_journal_off(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        assert env.broker.logs.journal is None
        _create(env, OFFSETS_TOPIC, 1, internal=True)
        assert env.broker.logs.partition(OFFSETS_TOPIC, 0).journal is None

    run_broker(tmp_path, scenario, settings=("log.flush.interval.ms=1000",))


def test_an_offset_commit_is_answered_after_one_journal_sync_and_no_segment_fsync(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        _create(env, TOPIC, 1)
        journal = env.broker.logs.journal
        assert journal is not None
        c = await env.connect()
        group = "journaled-group"
        r = await c.call(
            OFFSET_COMMIT,
            8,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(
                make(
                    nested(OFFSET_COMMIT, 8, "topics"),
                    name=TOPIC,
                    partitions=(
                        make(
                            nested(OFFSET_COMMIT, 8, "topics", "partitions"),
                            partition_index=0,
                            committed_offset=42,
                            committed_metadata="m",
                        ),
                    ),
                ),
            ),
        )
        assert r.topics[0].partitions[0].error_code == 0
        assert (journal.syncs, journal.pending_bytes) == (1, 0)
        plog = env.broker.logs.partition(OFFSETS_TOPIC, partition_for(group, 50))
        assert plog.log_end_offset == 1
        assert plog.flushed_offset == 0  # the segment itself was never fsynced
        c.close()

    run_with_groups(tmp_path, scenario)


def test_appends_no_round_waits_for_are_synced_by_the_periodic_flush_check(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        _create(env, OFFSETS_TOPIC, 1, internal=True)
        journal = env.broker.logs.journal
        assert journal is not None
        env.broker.start_maintenance()
        env.broker.logs.partition(OFFSETS_TOPIC, 0).append(build_batch([(b"k", b"v", ())], timestamp_ms=0))
        assert journal.pending_bytes > 0
        env.clock.advance(env.broker.FLUSH_CHECK_MS - 1)
        env.broker.timers.run_due()
        assert journal.syncs == 0
        env.clock.advance(1)
        env.broker.timers.run_due()
        await _until(lambda: journal.syncs == 1, "the periodic check synced the journal")
        assert journal.pending_bytes == 0

    run_broker(tmp_path, scenario)
