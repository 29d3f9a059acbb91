"""The consumer group of KIP-848 (ConsumerGroupHeartbeat, API 68): a second group type for the
group shard, sans-I/O. Kafka 4.1's ``group-coordinator`` module is the authority; see
``docs/coordinator-scenarios.md``, "Consumer groups (KIP-848)"."""
