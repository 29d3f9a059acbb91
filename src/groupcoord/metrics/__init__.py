"""The broker's Prometheus endpoint (``metrics.listen``): see :mod:`groupcoord.metrics.endpoint`
and ``docs/operations.md``."""

from groupcoord.metrics.endpoint import BrokerMetrics

__all__ = ["BrokerMetrics"]
