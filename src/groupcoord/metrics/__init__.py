"""The broker's Prometheus endpoint (``metrics.listen``): see :mod:`groupcoord.metrics.endpoint`
(``BrokerMetrics``) and ``docs/operations.md``.

The package imports nothing itself: the endpoint (and ``prometheus_client``) is imported only when
``metrics.listen`` is set."""
