"""partition.assignment.strategy: names as librdkafka spells them, Java class names, custom assignors."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from groupcoord.client.assignors import (
    DEFAULT_STRATEGY,
    Assignment,
    BaseAssignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    get_assignor,
    parse_strategies,
    select_rebalance_protocol,
)
from groupcoord.client.errors import ConfigError


def test_default_is_the_java_clients_range_then_cooperative_sticky_and_runs_eager() -> None:
    """ConsumerConfig's default partition.assignment.strategy [RangeAssignor, CooperativeStickyAssignor];
    ConsumerCoordinatorTest.testSelectRebalanceProtocol: that pair runs EAGER."""
    assignors = parse_strategies()
    assert DEFAULT_STRATEGY == "range,cooperative-sticky"
    assert [type(a) for a in assignors] == [RangeAssignor, CooperativeStickyAssignor]
    assert select_rebalance_protocol(assignors) is RebalanceProtocol.EAGER
    assert select_rebalance_protocol(parse_strategies("cooperative-sticky")) is RebalanceProtocol.COOPERATIVE


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("range", RangeAssignor),
        ("roundrobin", RoundRobinAssignor),
        ("sticky", StickyAssignor),
        ("cooperative-sticky", CooperativeStickyAssignor),
        ("org.apache.kafka.clients.consumer.RangeAssignor", RangeAssignor),
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", RoundRobinAssignor),
        ("org.apache.kafka.clients.consumer.StickyAssignor", StickyAssignor),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", CooperativeStickyAssignor),
    ],
)
def test_get_assignor_knows_librdkafka_names_and_java_class_names(name: str, cls: type) -> None:
    assignor = get_assignor(name)
    assert type(assignor) is cls
    assert (
        assignor.name
        == {
            RangeAssignor: "range",
            RoundRobinAssignor: "roundrobin",
            StickyAssignor: "sticky",
            CooperativeStickyAssignor: "cooperative-sticky",
        }[cls]
    )
    assert get_assignor(name) is not assignor, "each consumer gets its own (stateful) instance"


def test_unknown_assignor_name_is_a_config_error_naming_it() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("partition.assignment.strategy: unknown assignor 'rnage'")
    ):
        parse_strategies("range,rnage")
    with pytest.raises(ConfigError, match=re.escape("'org.example.Mine'")):
        get_assignor("org.example.Mine")


def test_spaces_and_order_are_kept_and_empty_or_duplicate_lists_refused() -> None:
    assert [a.name for a in parse_strategies(" roundrobin , range ")] == ["roundrobin", "range"]
    with pytest.raises(ConfigError, match="no assignor"):
        parse_strategies(" , ")
    with pytest.raises(ConfigError, match="'range' listed more than once"):
        parse_strategies("range,org.apache.kafka.clients.consumer.RangeAssignor")


class _Everything(BaseAssignor):
    name = "everything-to-first"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        return {m: Assignment() for m in subscriptions}


def test_custom_assignor_objects_are_accepted_alongside_names() -> None:
    custom = _Everything()
    assignors = parse_strategies([custom, "range"])
    assert assignors[0] is custom
    assert [a.name for a in assignors] == ["everything-to-first", "range"]
    with pytest.raises(ConfigError, match="neither an assignor name"):
        parse_strategies([object()])  # type: ignore[list-item]
