"""Whether the broker's hot path runs compiled, and the guard that keeps a stale build from running.

``make run`` and ``make test`` compile the modules of the request path with mypyc (setup.py): each
gets an extension module beside its source, which Python imports in preference to the source. The
build writes ``native-build.json`` beside this file: the compiled modules and a digest of each
source as compiled. :func:`install`, run when the package is imported, checks that every listed
source still has that digest and every extension file is there. If one does not, all of the listed
modules are imported from their sources instead: compiled modules call each other directly, so
they run all compiled or all as Python, never mixed. ``GROUPCOORD_PURE=1`` asks for Python too.

Nothing here changes behaviour: the compiled modules are the same source, checked by the same suite
(docs/architecture.md, "The compiled build").
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

MANIFEST_NAME = "native-build.json"
PURE_ENV = "GROUPCOORD_PURE"

_PACKAGE_DIR = Path(__file__).resolve().parent
_SRC_DIR = _PACKAGE_DIR.parent


@dataclass(frozen=True)
class NativeStatus:
    """What :func:`install` found: whether the listed modules run compiled, and why not if not."""

    compiled: bool
    modules: tuple[str, ...]
    reason: str

    def describe(self) -> str:
        if self.compiled:
            return f"compiled with mypyc ({len(self.modules)} modules)"
        return f"pure Python ({self.reason})"


def _extension_file(src_dir: Path, module: str) -> Path | None:
    base = src_dir.joinpath(*module.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.is_file():
            return candidate
    return None


def _source_file(src_dir: Path, module: str) -> Path:
    return src_dir.joinpath(*module.split(".")).with_suffix(".py")


def check(manifest: Mapping[str, object], src_dir: Path) -> NativeStatus:
    """Whether the build described by ``manifest`` (``native-build.json``'s content) is usable.

    Usable means: the group's shared library and every module's extension file exist, and every
    module's source has the digest it was compiled from.
    """
    raw_modules = manifest.get("modules")
    group = manifest.get("group")
    if not isinstance(raw_modules, dict) or not isinstance(group, str):
        return NativeStatus(False, (), f"{MANIFEST_NAME} is not a build manifest")
    modules = tuple(sorted(raw_modules))
    if _extension_file(src_dir, f"{group}__mypyc") is None:
        return NativeStatus(False, modules, "the build's shared library is missing; `make` rebuilds it")
    for module in modules:
        source = _source_file(src_dir, module)
        try:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
        except OSError:
            return NativeStatus(False, modules, f"{source.name} of {module} is missing")
        if digest != raw_modules[module]:
            return NativeStatus(
                False, modules, f"{module} changed since it was compiled; `make` rebuilds it"
            )
        if _extension_file(src_dir, module) is None:
            return NativeStatus(False, modules, f"{module} was not compiled; `make` rebuilds it")
    return NativeStatus(True, modules, "")


def _extension_modules(package_dir: Path) -> tuple[str, ...]:
    """The modules of the package that have an extension file beside their source."""
    found = set()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for path in package_dir.rglob(f"*{suffix}"):
            source = path.with_name(path.name.removesuffix(suffix) + ".py")
            if source.is_file():
                relative = source.relative_to(package_dir.parent).with_suffix("")
                found.add(".".join(relative.parts))
    return tuple(sorted(found))


class SourceFirst:
    """A meta path finder that imports the given modules from their ``.py`` files."""

    def __init__(self, modules: Sequence[str], src_dir: Path) -> None:
        self._sources = {m: _source_file(src_dir, m) for m in modules}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self._sources.get(fullname)
        if source is None or not source.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, source)


_status = NativeStatus(False, (), "not checked")


def install() -> NativeStatus:
    """Check the build once, before any listed module is imported; route to the sources if unusable."""
    global _status
    manifest_path = _PACKAGE_DIR / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        _status = NativeStatus(False, (), "not compiled; `make run` and `make test` compile it")
    except (OSError, ValueError) as exc:
        _status = NativeStatus(False, (), f"{MANIFEST_NAME} unreadable: {exc}")
    else:
        _status = check(manifest if isinstance(manifest, dict) else {}, _SRC_DIR)
    if not _status.compiled and not _status.modules:
        # No build, a failed one, or no usable manifest: any extension files there are of
        # unknown age, so none of them runs.
        leftovers = _extension_modules(_PACKAGE_DIR)
        reason = _status.reason
        if leftovers and not manifest_path.exists():
            reason = "the last build did not finish, and its extension files are ignored; `make` rebuilds it"
        _status = NativeStatus(False, leftovers, reason)
    if _status.compiled and os.environ.get(PURE_ENV) == "1":
        _status = NativeStatus(False, _status.modules, f"{PURE_ENV}=1")
    if not _status.compiled and _status.modules:
        sys.meta_path.insert(0, SourceFirst(_status.modules, _SRC_DIR))
    return _status


def status() -> NativeStatus:
    """What :func:`install` found when the package was imported."""
    return _status
