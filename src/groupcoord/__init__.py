"""groupcoord: a Kafka-compatible broker built around the classic consumer-group coordinator."""

from groupcoord import native as _native

__version__ = "0.1.0"

# Before any compiled module can be imported: a stale or partial build runs as Python (native.py).
_native.install()
