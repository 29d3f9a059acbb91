"""PySpark analytics over the broker's own data: rebalance history, consumer lag and group health.

Layers (each importable on its own):

- ``decoders``: Spark-free functions turning ``__consumer_offsets`` / ``__group_events`` records into
  plain rows (dicts), built on ``groupcoord.coordinator.records`` and
  ``groupcoord.formats.consumer_protocol``.
- ``segments``: Spark-free planning and reading of Kafka log segments (one split per segment, large
  segments split at offset-index points), producing Arrow record batches.
- ``source``: the Spark Python data sources ``kafka-log``, ``kafka-log-batches`` and
  ``consumer-offsets`` over those splits.
- ``tables``: pure ``DataFrame -> DataFrame`` transformations (offset commits, generations, ownership,
  rebalances, lag, Burrow status, rebalance summary).
- ``report``: the self-contained HTML report.
- ``analyze`` / ``simulate`` / ``cli``: the ``groupcoord analyze`` and ``groupcoord simulate`` commands.
"""
