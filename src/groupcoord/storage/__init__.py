"""Storage: record batches (magic v2) and a segmented log in Kafka's on-disk layout.

- :mod:`groupcoord.formats.varint` and :mod:`groupcoord.formats.batch`: the record format -
  zig-zag varints, batch framing, validation, the one record walker, decoding and building.
- :mod:`groupcoord.storage.log` is one partition's segmented log (append, read, retention,
  truncation), built from :mod:`~groupcoord.storage.segment` (a segment file and its indexes),
  :mod:`~groupcoord.storage.recovery` (repair at open, checkpoint files),
  :mod:`~groupcoord.storage.cleaner` (compaction) and :mod:`~groupcoord.storage.log_config`
  (topic configs and their broker defaults).
- :mod:`groupcoord.storage.manager` owns every topic's partitions under one data directory.
"""
