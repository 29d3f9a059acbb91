"""Kafka's byte formats that the broker and the member client share.

- :mod:`groupcoord.formats.varint`: zig-zag varints (record framing).
- :mod:`groupcoord.formats.batch`: record batches, magic v2 - framing, validation, in-place
  rewrites, the compression codecs (gzip, snappy with Java's xerial framing, lz4, zstd), the one
  record walker, decoding and building. The log stores these bytes as they came; Fetch answers
  carry them; the client's fetcher decodes them.
- :mod:`groupcoord.formats.consumer_protocol`: the ConsumerProtocol subscription and assignment
  bytes (v0-v3) inside JoinGroup and SyncGroup, written by the client's assignors and read by the
  coordinator, the admin tool and the pipeline.

A leaf: these modules import only :mod:`groupcoord.errors` and each other, so the client
(:mod:`groupcoord.client`) can read what the broker writes without importing the broker.
"""
