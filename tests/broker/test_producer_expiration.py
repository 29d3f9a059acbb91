"""producer.id.expiration.ms over the wire: an idle idempotent producer is forgotten, and its next
batch is then accepted at whatever sequence it carries.

Against an in-process broker (``broker_harness``) on a manual clock; the broker's periodic check
(Kafka's ``PeriodicProducerExpirationCheck``, every producer.id.expiration.check.interval.ms) fires
when the test moves the clock. Kafka: ``ProducerStateManager.removeExpiredProducers`` drops a
producer whose last batch is producer.id.expiration.ms old; ``ProducerAppendInfo.checkSequence``
then has no epoch for it and accepts any sequence (``ProducerStateManagerTest
.testPidExpirationTimeout``: the append at ``sequence + 1`` after the expiration succeeds and the
producer is active again). Before the expiration the same batch is OUT_OF_ORDER_SEQUENCE_NUMBER.
"""

from __future__ import annotations

from pathlib import Path

from broker_harness import Env, produce_all, run_broker

from groupcoord.clock import ManualClock
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch

T0 = 1_700_000_000_000
PID = 42
EXPIRATION_MS = 60_000
CHECK_MS = 10_000
SETTINGS = (
    f"producer.id.expiration.ms={EXPIRATION_MS}",
    f"producer.id.expiration.check.interval.ms={CHECK_MS}",
)


def idem(seq: int, n: int = 1, ts: int = T0) -> bytes:
    return build_batch(
        [(f"k{i}".encode(), b"v", ()) for i in range(seq, seq + n)],
        timestamp_ms=ts,
        producer_id=PID,
        producer_epoch=0,
        base_sequence=seq,
    )


async def produce(env: Env, records: bytes) -> tuple[ErrorCode, int]:
    p = await produce_all(env, records)
    return ErrorCode(p.error_code), p.base_offset


def _known(env: Env) -> bool:
    return env.broker.logs.partition("t", 0).producer_state().producer(PID) is not None


def test_an_idle_producer_expires_and_its_next_batch_is_accepted_at_any_sequence(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        env.broker.start_maintenance()
        assert await produce(env, idem(0, 3)) == (ErrorCode.NONE, 0)
        assert await produce(env, idem(9)) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)

        # A check one millisecond short of the expiration: still known. (The exact boundary is
        # tests/storage/test_producer_expiration.py's.)
        env.clock.advance(EXPIRATION_MS - 1)
        env.broker.timers.run_due()
        assert _known(env)
        assert await produce(env, idem(9)) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)

        # The next check, one interval later: forgotten.
        env.clock.advance(CHECK_MS - 1)
        env.broker.timers.run_due()
        assert _known(env)
        env.clock.advance(1)
        env.broker.timers.run_due()
        assert not _known(env)
        assert await produce(env, idem(9)) == (ErrorCode.NONE, 3)

        # Known again from that batch on: its sequence is the one to follow.
        assert _known(env)
        assert await produce(env, idem(20)) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        assert await produce(env, idem(10)) == (ErrorCode.NONE, 4)
        assert env.broker.logs.partition("t", 0).log_end_offset == 5

    run_broker(tmp_path, scenario, SETTINGS, ManualClock(T0))


def test_a_producer_that_expired_while_the_broker_was_down_is_forgotten_at_start(tmp_path: Path) -> None:
    """Kafka leaves expired producers out when it loads a partition's producer snapshot."""

    async def before(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        env.broker.start_maintenance()
        assert await produce(env, idem(0, 2)) == (ErrorCode.NONE, 0)

    async def after(env: Env) -> None:
        assert _known(env)  # loaded from the snapshot written at the clean close
        env.broker.start_maintenance()
        assert not _known(env)
        assert await produce(env, idem(7, ts=T0 + EXPIRATION_MS)) == (ErrorCode.NONE, 2)

    async def same_day(env: Env) -> None:
        env.broker.start_maintenance()
        assert _known(env)
        assert await produce(env, idem(12)) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)

    run_broker(tmp_path, before, SETTINGS, ManualClock(T0))
    run_broker(tmp_path, after, SETTINGS, ManualClock(T0 + EXPIRATION_MS))
    run_broker(tmp_path, same_day, SETTINGS, ManualClock(T0 + EXPIRATION_MS + 1))
