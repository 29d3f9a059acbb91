"""Imports point one way (design.md): no cycle inside ``src/``, no layer importing above itself.

The rule is data (``scripts/import_layers.py``: ``ALLOWED``); ``docs/architecture.md`` carries
the same table, generated from it. The synthetic trees show that the check can fail.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_layers", ROOT / "scripts" / "import_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


layers = _load_checker()


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A throwaway ``groupcoord`` package with the given modules (path -> source)."""
    pkg = tmp_path / "groupcoord"
    for rel, source in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != pkg and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(source)
    return pkg


def test_src_has_no_import_cycle() -> None:
    assert layers.cycles(layers.scan()) == []


def test_src_imports_only_downward() -> None:
    assert layers.violations(layers.scan()) == []


def test_every_pending_exception_is_still_needed() -> None:
    assert layers.stale_pending(layers.scan()) == []


def test_every_component_of_src_is_in_the_layer_table() -> None:
    components = {layers.component(imp.importer) for imp in layers.scan()}
    assert components - set(layers.ALLOWED) - {"__init__"} == set()


def test_architecture_page_carries_the_current_layer_table() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layers.current_block(text) == layers.render()


def test_server_importing_the_broker_is_reported(tmp_path: Path) -> None:
    pkg = _tree(
        tmp_path,
        {
            "broker/state.py": "class Broker: ...\n",
            "server/app.py": "from groupcoord.broker.state import Broker\n",
        },
    )
    assert layers.violations(layers.scan(pkg)) == [
        "server.app:1 imports broker.state (server may not import broker)"
    ]


def test_a_deferred_upward_import_is_reported_too(tmp_path: Path) -> None:
    pkg = _tree(
        tmp_path,
        {
            "runtime/host.py": "X = 1\n",
            "coordinator/shard.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from groupcoord.runtime import host\n"
                "def f() -> None:\n"
                "    from ..runtime.host import X\n"
            ),
        },
    )
    assert layers.violations(layers.scan(pkg)) == [
        "coordinator.shard:3 imports runtime.host (coordinator may not import runtime)",
        "coordinator.shard:5 imports runtime.host (coordinator may not import runtime)",
    ]


def test_a_core_may_read_the_batch_format_but_not_the_log(tmp_path: Path) -> None:
    pkg = _tree(
        tmp_path,
        {
            "formats/batch.py": "",
            "storage/log.py": "",
            "coordinator/replay.py": (
                "from groupcoord.formats import batch\nfrom groupcoord.storage import log\n"
            ),
        },
    )
    assert layers.violations(layers.scan(pkg)) == [
        "coordinator.replay:2 imports storage.log (coordinator may not import storage)"
    ]


def test_the_client_imports_nothing_of_the_broker_side(tmp_path: Path) -> None:
    """The member client stands alone (issue 24): the formats it shares with the broker live in
    ``formats``; every broker-side component is out of its reach."""
    broker_side = ("storage", "broker", "coordinator", "runtime", "server", "transactions")
    files = {f"{c}/x.py": "" for c in broker_side}
    files["formats/batch.py"] = ""
    files["protocol/codec.py"] = ""
    files["client/fetcher.py"] = "".join(
        f"from groupcoord.{c} import x\n" for c in ("formats", "protocol", *broker_side)
    )
    pkg = _tree(tmp_path, files)
    assert layers.violations(layers.scan(pkg)) == [
        f"client.fetcher:{line} imports {c}.x (client may not import {c})"
        for line, c in enumerate(broker_side, start=3)
    ]


def test_the_client_row_of_the_table_reaches_nothing_of_the_broker_side() -> None:
    allowed = layers.ALLOWED["client"][1]
    assert [c for c in layers.BROKER_SIDE if layers._matches(f"{c}.x", allowed)] == []


def test_the_real_client_package_imports_only_leaves_formats_and_protocol() -> None:
    allowed = ("errors", "clock", "constants", "timer", "config", "gcutil", "formats", "protocol", "client")
    found = {
        layers.component(imp.imported) for imp in layers.scan() if layers.component(imp.importer) == "client"
    }
    assert found <= set(allowed), sorted(found - set(allowed))


def test_an_import_cycle_is_reported(tmp_path: Path) -> None:
    pkg = _tree(
        tmp_path,
        {
            "pipeline/a.py": "from groupcoord.pipeline import b\n",
            "pipeline/b.py": "from groupcoord.pipeline.c import x\n",
            "pipeline/c.py": "from . import a\nx = 1\n",
        },
    )
    assert layers.violations(layers.scan(pkg)) == []
    assert layers.cycles(layers.scan(pkg)) == [["pipeline.a", "pipeline.b", "pipeline.c"]]


def test_a_component_missing_from_the_table_is_reported(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {"gadgets/x.py": "from groupcoord import errors\n", "errors.py": ""})
    assert layers.violations(layers.scan(pkg)) == ["gadgets.x: component 'gadgets' is not in the layer table"]


@pytest.mark.parametrize("importer", ["app", "cli"])
def test_the_composition_roots_may_import_everything(tmp_path: Path, importer: str) -> None:
    pkg = _tree(
        tmp_path,
        {
            "runtime/host.py": "",
            "server/app.py": "",
            f"{importer}.py": "from groupcoord.runtime import host\nfrom groupcoord.server import app\n",
        },
    )
    assert layers.violations(layers.scan(pkg)) == []
