"""groupcoord.testing: a real Kafka-compatible broker for tests, with time control and faults.

``Broker`` runs a groupcoord broker in the test process (its own thread and event loop) or
as a subprocess; ``Cluster`` runs several brokers in one process (coordinators and leaders that
move, brokers that stop and start); clients reach it at ``broker.bootstrap`` over TCP. ``broker.advance(s)``
moves its protocol clock and fires what falls due, ``fail_next``/``delay``/``disconnect``/
``drop_heartbeats`` inject faults, ``describe_group``/``committed``/``events``/
``wait_for_group`` observe. The pytest plugin (:mod:`groupcoord.testing.plugin`, registered
through the ``pytest11`` entry point) provides the ``kafka_broker`` fixtures. This package
imports pytest nowhere but in the plugin module. See docs/testing.md.
"""

from __future__ import annotations

from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.testing.broker import DEFAULT_ENTITY, DEFAULT_SETTINGS, AdvancingClock, Broker
from groupcoord.testing.cluster import Cluster
from groupcoord.testing.faults import API_NAMES
from groupcoord.testing.wire import GroupView, MemberView, Record, TopicPartition

__all__ = [
    "API_NAMES",
    "DEFAULT_ENTITY",
    "DEFAULT_SETTINGS",
    "AdvancingClock",
    "Broker",
    "Cluster",
    "EventReason",
    "GroupEvent",
    "GroupView",
    "MemberView",
    "Record",
    "TopicPartition",
]
