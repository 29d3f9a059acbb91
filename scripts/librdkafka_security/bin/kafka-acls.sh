#!/bin/bash
# A stand-in for Kafka's kafka-acls.sh that librdkafka's tests call (KAFKA_PATH/bin): the same
# arguments, spoken to the broker through `groupcoord acls` (CreateAcls / DeleteAcls).
verb=""; args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bootstrap-server) args+=(--bootstrap "$2"); shift 2;;
    --add) verb=add; shift;;
    --remove) verb=remove; shift;;
    --force) shift;;
    --allow-principal) args+=(--principal "$2" --permission allow); shift 2;;
    --deny-principal) args+=(--principal "$2" --permission deny); shift 2;;
    --allow-host|--deny-host) args+=(--host "$2"); shift 2;;
    --operation) args+=(--operation "$2"); shift 2;;
    --topic) args+=(--topic "$2"); shift 2;;
    --group) args+=(--group "$2"); shift 2;;
    *) echo "kafka-acls.sh stand-in: unknown argument $1" >&2; exit 2;;
  esac
done
echo "kafka-acls.sh -> groupcoord acls $verb ${args[*]}" >&2
exec "${GROUPCOORD_PYTHON:-python}" -m groupcoord acls $verb "${args[@]}"
