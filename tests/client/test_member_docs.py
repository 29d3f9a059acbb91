"""docs/client.md stays true: its seed-name map points at real code, its key table lists every key."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import ConsumerCoordinator

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
SEED_NAMES = (
    "HeartbeatThread",
    "enabled",
    "sendHeartbeatRequest",
    "maybeLeaveGroup",
    "ensureCoordinatorReady",
    "joinGroupIfNeeded",
    "onJoinComplete",
    "performAssignment",
)


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_seed_name_map_points_at_existing_code() -> None:
    section = _section("From the seeds' names to the code")
    rows = re.findall(r"^\| `([^`]+)`[^|]*\| `([a-z_]+)\.([A-Za-z_.]+)`", section, re.M)
    mapped = {seed for seed, _, _ in rows}
    assert set(SEED_NAMES) <= mapped
    instance = ConsumerCoordinator(ConsumerConfig.from_dict({"group.id": "g"}))
    for _, module, path in rows:
        obj: object = importlib.import_module(f"groupcoord.client.{module}")
        for part in path.split("."):
            if isinstance(obj, type) and not hasattr(obj, part):
                # an instance attribute (``enabled``): a ConsumerCoordinator is every member class
                assert isinstance(instance, obj), (module, path)
                obj = getattr(instance, part)
            else:
                obj = getattr(obj, part)


def test_every_config_key_is_documented() -> None:
    section = _section("Configuration keys")
    documented = set(re.findall(r"^\| `([a-z.]+)` \|", section, re.M))
    assert documented == set(ConsumerConfig.keys())
