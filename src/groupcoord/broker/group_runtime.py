"""Moved to :mod:`groupcoord.runtime.group_runtime`; this name stays until its importers switch."""

from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime

__all__ = ["OFFSETS_TOPIC", "GroupRuntime"]
