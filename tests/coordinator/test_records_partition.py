"""``partition_for``: which ``__consumer_offsets`` partition owns a group.

Kafka computes ``Utils.abs(groupId.hashCode()) % numPartitions``. ``hashCode`` is Java's
``String.hashCode`` (``h = 31*h + c`` over UTF-16 code units, wrapping at 32 bits), and
``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 instead of leaving it negative. The expected
values were worked out by hand below and cross-checked once against a JVM's
``String.hashCode``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.records import java_string_hash, partition_for

INT_MIN = -(2**31)


@pytest.mark.parametrize(
    ("group", "expected_hash", "p50", "p7"),
    [
        # "" -> 0: the empty sum.
        ("", 0, 0, 0),
        # "a" -> 97; 97 % 50 = 47; 97 % 7 = 6.
        ("a", 97, 47, 6),
        # "Aa" -> 65*31 + 97 = 2112 and "BB" -> 66*31 + 66 = 2112: the classic collision.
        # 2112 % 50 = 12; 2112 % 7 = 5.
        ("Aa", 2112, 12, 5),
        ("BB", 2112, 12, 5),
        # "é" is one UTF-16 unit, U+00E9 = 233 (its UTF-8 bytes c3 a9 would give 6214):
        # 233 % 50 = 33; 233 % 7 = 2.
        ("é", 233, 33, 2),
        # "😀" U+1F600 is outside the BMP: two surrogate units d83d de00.
        # 0xd83d*31 + 0xde00 = 55357*31 + 56832 = 1716067 + 56832 = 1772899.
        # 1772899 % 50 = 49; 1772899 % 7 = 2.
        ("😀", 1772899, 49, 2),
        # Negative hashes (the sum wrapped past 2**31): abs first, then modulo.
        # "my-group" -> -1906497762; 1906497762 % 50 = 12; % 7 = 1.
        ("my-group", -1906497762, 12, 1),
        # "zzzzzzzz" -> -1910022912; 1910022912 % 50 = 12; % 7 = 0.
        ("zzzzzzzz", -1910022912, 12, 0),
        ("spark-kafka-source-1", -1638101322, 22, 4),
        # Non-ASCII BMP text and a mix with an astral character.
        ("日本語グループ", -305235731, 31, 3),
        ("grüße-😀-x", -1164142076, 26, 6),
        ("console-consumer-1", 35782224, 24, 2),
        ("group-é", 293427483, 33, 6),
        # Strings whose hashCode is exactly Integer.MIN_VALUE: Utils.abs gives 0, so
        # partition 0 (Math.abs would stay negative and Java's % would give -48 for 50).
        ("polygenelubricants", INT_MIN, 0, 0),
        ("GydZG_", INT_MIN, 0, 0),
        ("DESIGNING WORKHOUSES", INT_MIN, 0, 0),
    ],
)
def test_partition_for_matches_kafka(group: str, expected_hash: int, p50: int, p7: int) -> None:
    assert java_string_hash(group) == expected_hash
    assert partition_for(group, 50) == p50
    assert partition_for(group, 7) == p7
    assert partition_for(group, 1) == 0


def test_min_value_hash_is_not_negative_partition_for_any_count() -> None:
    for n in (1, 2, 3, 50, 64, 1000):
        assert partition_for("polygenelubricants", n) == 0


def test_single_partition_always_owns_every_group() -> None:
    assert {partition_for(g, 1) for g in ("a", "my-group", "😀", "")} == {0}


@pytest.mark.parametrize("n", [0, -1])
def test_non_positive_partition_count_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        partition_for("g", n)


def _reference_hash(s: str) -> int:
    """An independent formulation: exact big-integer sum, reduced to int32 once at the end."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    n = len(units)
    total = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@given(st.text(max_size=40), st.integers(min_value=1, max_value=10_000))
@settings(deadline=None)
def test_hash_and_partition_agree_with_reference(group: str, n: int) -> None:
    h = java_string_hash(group)
    assert h == _reference_hash(group)
    assert -(2**31) <= h < 2**31
    expected = 0 if h == INT_MIN else abs(h) % n
    assert partition_for(group, n) == expected
    assert 0 <= partition_for(group, n) < n
