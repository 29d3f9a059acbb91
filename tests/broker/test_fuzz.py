"""Random request bodies for every advertised (api, version): the broker closes or answers, never dies,
and never logs an error or a traceback (a malformed frame costs its connection and one warning line)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from broker_harness import Env, run_broker
from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_field_tag, is_optional

from groupcoord.app import GROUP_APIS, TXN_APIS, routes
from groupcoord.protocol.registry import load_messages
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.runtime.txn_runtime import TxnRuntime

METADATA = 3


_FIXED = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "timedelta_i32": 4, "uint32": 4,
          "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16}  # fmt: skip


def _count(n: int, flexible: bool, wide: bool) -> bytes:
    if flexible:
        return bytes([n + 1])  # n < 127: a one-byte uvarint; -1 (null) is 0
    return n.to_bytes(4 if wide else 2, "big", signed=True)


def schema_body(rng: random.Random, cls: type[Any], null_rate: float = 0.15) -> bytes:
    """A body that follows ``cls``'s layout but puts null in any count or length, allowed or not."""
    flexible = bool(getattr(cls, "__flexible__", False))
    out = bytearray()
    for f in dataclasses.fields(cls):
        if get_field_tag(f) is not None:
            continue
        kind = classify_field(f)
        entity = isinstance(kind, (EntityField, EntityTupleField))
        n = -1 if rng.random() < null_rate else rng.randint(0, 2)
        if kind.is_array:
            out += _count(n, flexible, wide=True)
        elif entity and is_optional(f):
            out += b"\xff" if n < 0 else b"\x01"
        for _ in range(max(n, 0) if kind.is_array else 1):
            if entity:
                out += schema_body(rng, kind.type_, null_rate)
                continue
            ktype = f.metadata["kafka_type"]
            if ktype == "bool":
                out += b"\x01"
            elif ktype in _FIXED:
                out += b"\xff" * _FIXED[ktype]  # -1: acks=all, no partition, no epoch, ...
            else:
                length = -1 if rng.random() < null_rate else rng.randint(0, 3)
                out += _count(length, flexible, wide=ktype != "string") + b"g" * max(length, 0)
    if flexible:
        out += b"\x00"
    return bytes(out)


def frame(rng: random.Random, key: int, version: int) -> bytes:
    header = struct.pack(">hhi", key, version, rng.randrange(1 << 31)) + b"\x00\x01c"
    if version >= 9 or (key == 18 and version >= 3) or rng.random() < 0.5:
        header += b"\x00"  # an empty tagged-field section, right for flexible versions
    kind = rng.random()
    if kind < 0.3:
        body = schema_body(rng, load_messages(key, version).request_type)
    elif kind < 0.45:
        body = rng.randbytes(rng.randrange(0, 64))
    elif kind < 0.7:
        # huge array and string lengths
        body = rng.choice(
            [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff\x0f"]
        ) * rng.randrange(1, 6)
    else:
        body = bytes(rng.choice([0, 1, 0xFF, 0x7F, 0x80]) for _ in range(rng.randrange(0, 200)))
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def test_random_bodies_never_take_the_broker_down_nor_log_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(1234)
    caplog.set_level(logging.WARNING)

    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 2, {})
        # The group and transaction APIs too, wired as ``serve`` wires them.
        groups = GroupRuntime(env.broker)
        transactions = TxnRuntime(env.broker)
        table = list(routes(groups, transactions).values())
        for route in table:
            if route.api_key in GROUP_APIS | TXN_APIS:
                env.server.dispatcher.add_route(route)
        groups.start()
        await groups.loaded.wait()
        transactions.start()
        outcomes = {"answered": 0, "closed": 0}
        for _ in range(500):
            route = rng.choice(table)
            version = rng.randint(route.min_version, route.max_version)
            c = await env.connect()
            c.writer.write(frame(rng, route.api_key, version))
            await c.writer.drain()
            try:
                data = await asyncio.wait_for(c.reader.read(4), timeout=5)
            except TimeoutError:
                data = b"?"  # parked (e.g. a fetch waiting for data): the broker is alive
            outcomes["closed" if data == b"" else "answered"] += 1
            c.close()
        assert outcomes["closed"] > 0
        ok = await env.connect()
        resp = await ok.call(
            METADATA,
            12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert "t" in [t.name for t in resp.topics]  # the well-formed bodies may have created others
        ok.close()
        await groups.close()

    run_broker(tmp_path, scenario)
    # the broker's own lines: a client thread left by an earlier test on this worker may log too
    bad = [
        r
        for r in caplog.records
        if r.name.startswith("groupcoord") and (r.levelno >= logging.ERROR or r.exc_info)
    ]
    assert bad == [], bad[0].getMessage()
