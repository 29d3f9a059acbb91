"""The transaction coordinator's timer keys (one :class:`~groupcoord.timer.KeyedTimer`).

=====================  =============================================  ========================
key                    Kafka                                          on expiry
=====================  =============================================  ========================
``TxnTimeout``         ``abortTimedOutTransactions`` (a periodic      fence the producer and
                       scan every                                     abort the transaction
                       ``transaction.abort.timed.out.transaction.
                       cleanup.interval.ms``)
``MarkerRetry``        the marker channel's retry queue               write the markers again
``TxnIdExpiry``        ``removeExpiredTransactionalIds`` (every       tombstone idle ids
                       ``transaction.remove.expired.transaction.      (Empty, CompleteCommit,
                       cleanup.interval.ms``)                         CompleteAbort) unused for
                                                                      ``transactional.id.
                                                                      expiration.ms``
=====================  =============================================  ========================

Kafka scans all transactions periodically; we arm one deadline per Ongoing transaction at
``start + transaction.timeout.ms`` instead, so an expired transaction is aborted at its deadline
rather than up to one scan interval later (an abort Kafka would also make, only later).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TxnTimeout:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class MarkerRetry:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TxnIdExpiry:
    """The periodic scan for expired transactional ids (one key for the whole shard)."""


TXN_ID_EXPIRY = TxnIdExpiry()

TxnTimerKey = TxnTimeout | MarkerRetry | TxnIdExpiry
