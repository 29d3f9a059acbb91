"""Keeping long-lived objects that cannot form reference cycles away from the cyclic collector.

CPython frees almost everything by reference counting; its cyclic garbage collector exists for
the rest, and a full collection walks every object it tracks, following each one's references.
The coordinator keeps one object per member and per committed offset for as long as the group
lives: at 100,000 members a full collection of the broker took 120-350 ms, one stall of the
event loop each, with every heartbeat arriving meanwhile waiting behind it (measured in
``bench/scale_bench.py``, see docs/benchmarks.md).

An object whose references can never lead back to itself (it refers only to strings, numbers,
bytes, ``None`` and tuples or frozensets of those) can never be part of a cycle, so reference
counting alone frees it and the collector has nothing to find there. :func:`untrack` takes such
an object off the collector's lists; :func:`track` puts it back, for an object that is about to
hold a reference that could close a cycle (a reply callback, say). Both are CPython's own
``PyObject_GC_UnTrack`` / ``PyObject_GC_Track``, the calls C extension types use for exactly this;
on another Python implementation they do nothing.

The rule for callers: untrack only an object all of whose references are acyclic values, and
track it again before storing anything else in it. Breaking the rule cannot free anything too
early (an untracked referrer only makes its referents look reachable); it could only keep a
cycle through the object alive.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import TypeVar

Obj = TypeVar("Obj")

_ENABLED = sys.implementation.name == "cpython"

if _ENABLED:
    _gc_untrack = ctypes.pythonapi.PyObject_GC_UnTrack
    _gc_untrack.argtypes = [ctypes.py_object]
    _gc_untrack.restype = None
    _gc_track = ctypes.pythonapi.PyObject_GC_Track
    _gc_track.argtypes = [ctypes.py_object]
    _gc_track.restype = None


def untrack(obj: Obj) -> Obj:
    """Take ``obj`` off the cyclic collector's lists (a no-op if it is not tracked); returns it."""
    if _ENABLED and gc.is_tracked(obj):
        _gc_untrack(obj)
    return obj


def track(obj: Obj) -> Obj:
    """Put ``obj`` back under the cyclic collector (a no-op if it is tracked or cannot be)."""
    if _ENABLED and not gc.is_tracked(obj) and _is_gc_type(obj):
        _gc_track(obj)
    return obj


_Py_TPFLAGS_HAVE_GC = 1 << 14


def _is_gc_type(obj: object) -> bool:
    """Whether instances of ``obj``'s type carry the collector's header (only those can be tracked)."""
    return bool(type(obj).__flags__ & _Py_TPFLAGS_HAVE_GC)
