"""The compiled build (setup.py, groupcoord/native.py): the suite runs the compiled request path,
a stale or partial build never runs, and the same modules as Python serve real clients.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import groupcoord.coordinator.offsets
import groupcoord.server.connection
from groupcoord import native

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_the_suite_runs_the_compiled_request_path() -> None:
    """`make test` compiles before it runs the suite: every module the manifest lists is an
    extension module here, so the suite checks the code `make run` serves with. (A source edited
    since the build makes this fail, and only this: the others then run the edited source.)"""
    status = native.status()
    assert status.compiled, status.describe()
    manifest = json.loads((ROOT / "src" / "groupcoord" / native.MANIFEST_NAME).read_text())
    assert set(status.modules) == set(manifest["modules"])
    assert {"groupcoord.server.connection", "groupcoord.coordinator.offsets"} <= set(status.modules)
    for module in (groupcoord.server.connection, groupcoord.coordinator.offsets):
        assert module.__file__ is not None and module.__file__.endswith(SUFFIX), module.__file__
    assert status.describe() == f"compiled with mypyc ({len(manifest['modules'])} modules)"


def _fake_build(tmp_path: Path) -> tuple[dict[str, object], Path]:
    """A src tree with two modules and the files a build leaves (empty stand-ins for the .so)."""
    src = tmp_path / "src"
    pkg = src / "pkg"
    pkg.mkdir(parents=True)
    digests = {}
    for name in ("a", "b"):
        source = pkg / f"{name}.py"
        source.write_text(f"X = {name!r}\n")
        digests[f"pkg.{name}"] = hashlib.sha256(source.read_bytes()).hexdigest()
        (pkg / f"{name}{SUFFIX}").write_bytes(b"")
    (src / f"grp__mypyc{SUFFIX}").write_bytes(b"")
    return {"group": "grp", "modules": digests}, src


def test_a_complete_build_whose_sources_are_unchanged_is_used(tmp_path: Path) -> None:
    manifest, src = _fake_build(tmp_path)
    assert native.check(manifest, src) == native.NativeStatus(True, ("pkg.a", "pkg.b"), "")


def test_a_source_edited_after_the_build_sends_every_module_to_its_source(tmp_path: Path) -> None:
    manifest, src = _fake_build(tmp_path)
    (src / "pkg" / "b.py").write_text("X = 'edited'\n")
    status = native.check(manifest, src)
    assert status == native.NativeStatus(
        False, ("pkg.a", "pkg.b"), "pkg.b changed since it was compiled; `make` rebuilds it"
    )
    # All of them, not only the edited one: compiled modules call each other directly.
    finder = native.SourceFirst(status.modules, src)
    for name in ("a", "b"):
        spec = finder.find_spec(f"pkg.{name}")
        assert spec is not None and spec.origin == str(src / "pkg" / f"{name}.py")
    assert finder.find_spec("pkg.other") is None


def test_a_missing_extension_or_shared_library_is_not_used(tmp_path: Path) -> None:
    manifest, src = _fake_build(tmp_path)
    (src / "pkg" / f"a{SUFFIX}").unlink()
    assert native.check(manifest, src).reason == "pkg.a was not compiled; `make` rebuilds it"
    manifest, src = _fake_build(tmp_path / "again")
    (src / f"grp__mypyc{SUFFIX}").unlink()
    assert not native.check(manifest, src).compiled
    assert native.check({"modules": []}, src).reason == f"{native.MANIFEST_NAME} is not a build manifest"


def test_extension_files_without_a_manifest_are_found_to_be_bypassed(tmp_path: Path) -> None:
    """A build that failed, or an install that left extension files but no manifest: those
    modules are found (and :func:`native.install` routes them to their sources)."""
    _manifest, src = _fake_build(tmp_path)
    (src / "pkg" / f"orphan{SUFFIX}").write_bytes(b"")  # no orphan.py: not one of ours
    assert native._extension_modules(src / "pkg") == ("pkg.a", "pkg.b")


_PURE_CLIENT = """
import groupcoord.coordinator.offsets, groupcoord.server.connection
from confluent_kafka import Consumer, TopicPartition
from groupcoord import native
from groupcoord.testing import Broker

assert groupcoord.coordinator.offsets.__file__.endswith("offsets.py")
assert groupcoord.server.connection.__file__.endswith("connection.py")
with Broker(settings={"group.initial.rebalance.delay.ms": 0}) as broker:
    broker.create_topic("t", 2)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("t", 0, 7), TopicPartition("t", 1, 9)], asynchronous=False)
    got = c.committed([TopicPartition("t", 0), TopicPartition("t", 1)], timeout=10)
    c.close()
print(native.status().describe())
print(sorted((tp.partition, tp.offset) for tp in got))
"""


def test_the_same_modules_as_python_serve_a_real_client() -> None:
    """``GROUPCOORD_PURE=1`` (and a stale build) import the sources: a confluent-kafka consumer
    commits and reads back its offsets through them."""
    env = {**os.environ, native.PURE_ENV: "1"}
    done = subprocess.run(
        [sys.executable, "-c", _PURE_CLIENT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == [
        f"pure Python ({native.PURE_ENV}=1)",
        "[(0, 7), (1, 9)]",
    ]
