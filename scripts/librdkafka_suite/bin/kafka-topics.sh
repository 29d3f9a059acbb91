#!/bin/bash
# A stand-in for Kafka's kafka-topics.sh that librdkafka's tests call (KAFKA_PATH/bin, with
# --bootstrap-server from BROKERS): --create, --delete and --alter with the arguments the tests use
# (0045's topic removal and partition change, 0052's timestamp types, 0077's compacted topics),
# spoken to the broker through `groupcoord topics` (CreateTopics, DeleteTopics, CreatePartitions /
# IncrementalAlterConfigs).
verb=""; topic=""; args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bootstrap-server) args+=(--bootstrap "${2%%,*}"); shift 2;;
    --create) verb=create; shift;;
    --delete) verb=delete; shift;;
    --alter) verb=alter; shift;;
    --topic) topic=$2; shift 2;;
    --partitions) args+=(--partitions "$2"); shift 2;;
    --replication-factor) args+=(--replication-factor "$2"); shift 2;;
    --config) args+=(--config "$2"); shift 2;;
    *) echo "kafka-topics.sh stand-in: unknown argument $1" >&2; exit 2;;
  esac
done
[ -n "$verb" ] && [ -n "$topic" ] || { echo "kafka-topics.sh stand-in: needs --create, --delete or --alter and --topic" >&2; exit 2; }
echo "kafka-topics.sh -> groupcoord topics $verb ${args[*]} $topic" >&2
exec "${GROUPCOORD_PYTHON:-python}" -m groupcoord topics $verb "${args[@]}" "$topic"
