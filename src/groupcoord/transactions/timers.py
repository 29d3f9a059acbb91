"""The transaction coordinator's timer keys (one :class:`~groupcoord.timer.KeyedTimer`).

=====================  =============================================  ========================
key                    Kafka                                          on expiry
=====================  =============================================  ========================
``TxnTimeout``         ``abortTimedOutTransactions`` (a periodic      fence the producer and
                       scan every                                     abort the transaction
                       ``transaction.abort.timed.out.transaction.
                       cleanup.interval.ms``)
``MarkerRetry``        the marker channel's retry queue               write the markers again
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


TxnTimerKey = TxnTimeout | MarkerRetry
