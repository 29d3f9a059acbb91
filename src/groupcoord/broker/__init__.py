"""Broker handlers: topics and partitions, produce, fetch, list-offsets, metadata, configs."""
