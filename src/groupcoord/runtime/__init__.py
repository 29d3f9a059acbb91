"""Drives coordinator shards: applies their results, appends their records, runs their timers."""
