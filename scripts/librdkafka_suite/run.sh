#!/bin/bash
# librdkafka's own test suite against groupcoord, test by test, under one consumer group protocol.
#
#   scripts/librdkafka_suite/run.sh LIBRDKAFKA_DIR PROTOCOL TEST...
#
# LIBRDKAFKA_DIR is a built librdkafka source tree (its tests/test-runner); PROTOCOL is `classic`
# or `consumer` (TEST_CONSUMER_GROUP_PROTOCOL, which every consumer the harness creates takes as
# group.protocol); each TEST is a test number as TESTS takes it (`0017`; `0045` runs every 0045
# test that the SCENARIO allows).
# Each test gets a fresh broker (its own data dir, a free port) so one test's topics and groups
# never meet another's. Environment:
#   PYTHON   an interpreter with groupcoord importable (default: python), e.g.
#            PYTHONPATH=src .venv/bin/python -> PYTHON=".venv/bin/python" with PYTHONPATH exported
#   BROKERS  1 (default) or 3 (`serve --brokers 3`, default.replication.factor=3) for the tests
#            that create topics with replication factor 3
#   TIMEOUT  seconds per test (default 600); a test still running then is recorded TIMEOUT
#   KAFKA_VERSION  TEST_KAFKA_VERSION (default 4.1.0, the version groupcoord follows: 0081 then
#            checks group types, group configs and 4.x authorized operations; 0092 skips itself)
#   CLIENT_CONF more client properties, KEY=VALUE separated by spaces, for the harness's test.conf
#            (every client it makes), e.g. partition.assignment.strategy=cooperative-sticky
#   KAFKA_PATH  where the harness finds Kafka's bin/*.sh; by default WORK/kafka, whose bin holds
#            two stand-ins: scripts/librdkafka_security/bin/kafka-acls.sh (`groupcoord acls`, for
#            0109 and 0119, which need an authorizer in SETTINGS too) and bin/kafka-topics.sh
#            (`groupcoord topics`, for 0045's noautocreate tests, 0052, 0077); BROKERS (the
#            harness's bootstrap for kafka-topics.sh) is set to the broker's address
#   WORK     where logs go (default: a new /tmp/groupcoord-rdk-suite.XXXXXX)
#   SUBTESTS passed through to the harness
#   SCENARIO the harness's test scenario (test-runner -s), e.g. noautocreate for 0107 and 0111
#            (with SETTINGS=auto.create.topics.enable=false)
#   SETTINGS more broker settings, KEY=VALUE separated by spaces, after (so over) the defaults
#            auto.create.topics.enable=true num.partitions=4; e.g. 0081's Acls sub-tests need
#            authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
#            allow.everyone.if.no.acl.found=true
# Writes WORK/<protocol>-<test>.log (the harness), WORK/<protocol>-<test>.broker.log, and one line
# per test to WORK/summary.txt: `<test> <protocol> PASSED|FAILED|SKIPPED|TIMEOUT <seconds>s` and
# how many consumer-protocol groups (with an epoch bump) and classic-type groups the broker's
# __group_events saw, printed as it goes. Every broker is stopped by its PID.
# docs/protocol-coverage.md lists the results.
set -u
rdk=$(cd "$1" && pwd); proto=$2; shift 2
py=${PYTHON:-python}; brokers=${BROKERS:-1}; tmo=${TIMEOUT:-600}; kver=${KAFKA_VERSION:-4.1.0}
work=${WORK:-$(mktemp -d /tmp/groupcoord-rdk-suite.XXXXXX)}; mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${KAFKA_PATH:-}" ]; then
  mkdir -p "$work/kafka/bin"
  ln -sfn "$here/../librdkafka_security/bin/kafka-acls.sh" "$work/kafka/bin/kafka-acls.sh"
  ln -sfn "$here/bin/kafka-topics.sh" "$work/kafka/bin/kafka-topics.sh"
  KAFKA_PATH="$work/kafka"
fi
case "$proto" in classic|consumer) ;; *) echo "PROTOCOL must be classic or consumer" >&2; exit 2;; esac

free_port() {  # a base port whose next BROKERS-1 ports are free too
  "$py" - "$brokers" <<'PY'
import socket, sys
n = int(sys.argv[1])
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); base = s.getsockname()[1]; s.close()
    if base + n > 65535:
        continue
    held = []
    try:
        for p in range(base, base + n):
            t = socket.socket(); t.bind(("127.0.0.1", p)); held.append(t)
    except OSError:
        continue
    finally:
        for t in held:
            t.close()
    print(base); break
PY
}

for t in "$@"; do
  port=$(free_port); data="$work/data-$proto-$t"; rm -rf "$data"
  blog="$work/$proto-$t.broker.log"; tlog="$work/$proto-$t.log"
  extra=(); servers="127.0.0.1:$port"; flags=()
  for kv in ${SETTINGS:-}; do extra+=(--set "$kv"); done
  [ -n "${SCENARIO:-}" ] && flags=(-s "$SCENARIO")
  if [ "$brokers" -gt 1 ]; then
    extra=(--brokers "$brokers" --set default.replication.factor="$brokers" --set auto.leader.rebalance.enable=false "${extra[@]}")
    for i in $(seq 1 $((brokers - 1))); do servers="$servers,127.0.0.1:$((port + i))"; done
  fi
  "$py" -m groupcoord serve --listen "127.0.0.1:$port" --data-dir "$data" \
    --set auto.create.topics.enable=true --set num.partitions=4 "${extra[@]}" > "$blog" 2>&1 &
  broker=$!
  for _ in $(seq 1 600); do grep -qs "listening on" "$blog" && break; sleep 0.05; done
  { printf 'bootstrap.servers=%s\n' "$servers"; for kv in ${CLIENT_CONF:-}; do echo "$kv"; done; } > "$work/$proto-$t.conf"
  start=$(date +%s)
  (cd "$rdk/tests" && LD_LIBRARY_PATH="$rdk/src:$rdk/src-cpp" RDKAFKA_TEST_CONF="$work/$proto-$t.conf" \
    KAFKA_PATH="$KAFKA_PATH" BROKERS="$servers" GROUPCOORD_PYTHON="$py" \
    TEST_KAFKA_VERSION="$kver" TEST_CONSUMER_GROUP_PROTOCOL="$proto" TESTS="$t" SUBTESTS="${SUBTESTS:-}" \
    timeout "$tmo" ./test-runner "${flags[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$tlog"; echo "${PIPESTATUS[0]}" > "$tlog.rc")
  secs=$(( $(date +%s) - start ))
  kill "$broker"; wait "$broker" 2>/dev/null
  rows=$(grep -E '^\| [0-9]{4}_' "$tlog" | grep -v '<MAIN>')
  if [ "$(cat "$tlog.rc")" = 124 ]; then res=TIMEOUT
  elif echo "$rows" | grep -q FAILED || grep -q '^### Test ".*" failed' "$tlog"; then res=FAILED
  elif echo "$rows" | grep -q PASSED; then res=PASSED
  elif echo "$rows" | grep -q SKIPPED; then res=SKIPPED
  else res=NOT-RUN; fi
  # which protocol the groups really spoke: a consumer group's __group_events records include its
  # epoch bumps (type epoch_bump), a classic group's never do
  ev() { cat "$data"/__group_events-*/*.log 2>/dev/null | grep -ao "\"group_id\":\"[^\"]*\",\"generation\":[-0-9]*,\"type\":\"$1" \
    | cut -d'"' -f4 | sort -u; }
  all=$(ev '' | grep -c .); cg=$(ev epoch_bump | grep -c .)
  echo "$t $proto $res ${secs}s groups: $cg consumer-protocol, $((all - cg)) classic" \
    | tee -a "$work/summary.txt"
done
echo "logs: $work"
