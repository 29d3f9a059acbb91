"""Storage: record batches (magic v2) and a segmented log in Kafka's on-disk layout.

- :mod:`groupcoord.storage.batch` frames, validates, decodes and builds record batches.
- :mod:`groupcoord.storage.log` is one partition's segmented log (append, read, indexes, recovery,
  retention, compaction).
- :mod:`groupcoord.storage.manager` owns every topic's partitions under one data directory.
"""
