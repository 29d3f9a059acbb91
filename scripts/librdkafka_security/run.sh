#!/bin/bash
# librdkafka's own SASL, SSL, re-authentication and ACL tests against one groupcoord broker.
#
#   scripts/librdkafka_security/run.sh LIBRDKAFKA_DIR [PYTHON]
#
# LIBRDKAFKA_DIR is a built librdkafka source tree (its tests/test-runner); PYTHON (default
# `python`) has groupcoord importable (e.g. PYTHONPATH=src .venv/bin/python). One broker serves four
# listeners: PLAINTEXT, SASL_PLAINTEXT, SASL_SSL and SSL (a throwaway trustme CA), SASL PLAIN and
# SCRAM-SHA-256/512, connections.max.reauth.ms=5000 (KIP-368, so 0142 runs), StandardAuthorizer
# with allow.everyone.if.no.acl.found=true (0115/0119 add their denials through bin/kafka-acls.sh,
# a stand-in that speaks `groupcoord acls`); then 0097 against a second broker whose SSL listener
# requires client certificates. Each group of tests writes WORK/<name>.log; the
# summary lines are printed at the end. The broker is stopped by its PID. docs/security.md lists
# what passes and why the rest does not.
set -u
rdk=$(cd "$1" && pwd); py=${2:-python}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/groupcoord-rdk-security.XXXXXX)
ports=($("$py" -c 'import socket
for _ in range(4):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'))
"$py" - "$work" <<'PY'
import sys, trustme
ca = trustme.CA()
ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(sys.argv[1] + "/server.pem")
ca.cert_pem.write_to_path(sys.argv[1] + "/ca.pem")
PY
jaas='org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
l="PLAIN://127.0.0.1:${ports[0]},SASLP://127.0.0.1:${ports[1]},SASLS://127.0.0.1:${ports[2]},TLS://127.0.0.1:${ports[3]}"
cat > "$work/broker.properties" <<PROPS
listeners=$l
advertised.listeners=$l
listener.security.protocol.map=PLAIN:PLAINTEXT,SASLP:SASL_PLAINTEXT,SASLS:SASL_SSL,TLS:SSL
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.saslp.plain.sasl.jaas.config=$jaas
listener.name.sasls.plain.sasl.jaas.config=$jaas
ssl.keystore.type=PEM
ssl.keystore.location=$work/server.pem
connections.max.reauth.ms=5000
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=true
auto.create.topics.enable=true
num.partitions=4
PROPS
printf 'bootstrap.servers=127.0.0.1:%s\n' "${ports[0]}" > "$work/plaintext.conf"
printf 'bootstrap.servers=127.0.0.1:%s\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n' "${ports[1]}" > "$work/sasl_plaintext.conf"
printf 'bootstrap.servers=127.0.0.1:%s\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\nsasl.password=admin-secret\nssl.ca.location=%s/ca.pem\n' "${ports[2]}" "$work" > "$work/sasl_ssl.conf"
printf 'bootstrap.servers=127.0.0.1:%s\nsecurity.protocol=SSL\nssl.ca.location=%s/ca.pem\n' "${ports[3]}" "$work" > "$work/ssl.conf"

"$py" -m groupcoord serve --config "$work/broker.properties" --data-dir "$work/data" > "$work/broker.log" 2>&1 &
broker=$!
for _ in $(seq 1 600); do grep -q "listening on" "$work/broker.log" && break; sleep 0.05; done
for m in SCRAM-SHA-256 SCRAM-SHA-512; do
  "$py" -m groupcoord users add admin --bootstrap "127.0.0.1:${ports[0]}" --mechanism $m --password admin-secret
done

run() {  # run NAME CONF "TESTS" [VAR=value | -l ...]: VAR=value into the environment, -l to test-runner
  local name=$1 conf=$2 tests=$3 vars=() flags=(); shift 3
  for a in "$@"; do case "$a" in -*) flags+=("$a");; *) vars+=("$a");; esac; done
  (cd "$rdk/tests" && env "${vars[@]}" LD_LIBRARY_PATH="$rdk/src:$rdk/src-cpp" RDKAFKA_TEST_CONF="$work/$conf" \
    TEST_KAFKA_VERSION=3.9.0 TESTS="$tests" KAFKA_PATH="$work/kafka" GROUPCOORD_PYTHON="$py" \
    timeout 900 ./test-runner "${flags[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$work/$name.log")
}
mkdir -p "$work/kafka" && ln -s "$here/bin" "$work/kafka/bin"
for proto in sasl_plaintext sasl_ssl; do
  run "$proto-0142-producer" $proto.conf 0142 SUBTESTS="producer message loss"
  run "$proto-0142-txn" $proto.conf 0142 SUBTESTS="in the middle of a txn"
  run "$proto-0142-failure" $proto.conf 0142 SUBTESTS="reauth failure with wrong"
  run "$proto-0135" $proto.conf 0135
done
run sasl_ssl-general sasl_ssl.conf "0001 0002 0011 0012 0029 0052 0064 0083"
run ssl-general ssl.conf "0001 0002 0011 0012 0029 0052 0064 0083"
run plaintext-acls plaintext.conf "0115 0119"
run local-clients sasl_ssl.conf "0004 0097 0124 0128 0133 0134" -l  # client-side only: no broker asked

kill "$broker"; wait "$broker"

# 0097 ssl_verify: trivup's SSL_* environment (the client's key and certificate in PEM, DER and
# PKCS12, the CA in PEM and DER) and a second broker whose SSL listener requires client
# certificates from the same CA.
"$py" - "$work" <<'PY'
import sys, trustme
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption, Encoding, NoEncryption, PrivateFormat, load_pem_private_key, pkcs12)
from cryptography.x509 import load_pem_x509_certificate
w = sys.argv[1]
ca = trustme.CA()
ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(w + "/v97-server.pem")
ca.cert_pem.write_to_path(w + "/v97-ca.pem")
leaf = ca.issue_cert("client.example", common_name="client")
key = load_pem_private_key(leaf.private_key_pem.bytes(), None)
cert = load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
cacert = load_pem_x509_certificate(ca.cert_pem.bytes())
pw = b"client-key-pw"
files = {
    "client.key": key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(pw)),
    "client.key.der": key.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption()),
    "client.pem": cert.public_bytes(Encoding.PEM),
    "client.der": cert.public_bytes(Encoding.DER),
    "ca.der": cacert.public_bytes(Encoding.DER),
    "client.p12": pkcs12.serialize_key_and_certificates(b"client", key, cert, [cacert], BestAvailableEncryption(pw)),
}
for name, data in files.items():
    open(f"{w}/v97-{name}", "wb").write(data)
PY
p97=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listeners=SSL://127.0.0.1:%s\nssl.keystore.type=PEM\nssl.keystore.location=%s/v97-server.pem\nssl.truststore.type=PEM\nssl.truststore.location=%s/v97-ca.pem\nssl.client.auth=required\n' "$p97" "$work" "$work" > "$work/v97-broker.properties"
printf 'bootstrap.servers=127.0.0.1:%s\nsecurity.protocol=SSL\nssl.ca.location=%s/v97-ca.pem\nssl.key.location=%s/v97-client.key\nssl.key.password=client-key-pw\nssl.certificate.location=%s/v97-client.pem\n' "$p97" "$work" "$work" "$work" > "$work/v97.conf"
"$py" -m groupcoord serve --config "$work/v97-broker.properties" --data-dir "$work/v97-data" > "$work/v97-broker.log" 2>&1 &
broker=$!
for _ in $(seq 1 600); do grep -q "listening on" "$work/v97-broker.log" && break; sleep 0.05; done
run ssl-client-auth-0097 v97.conf 0097 SSL_pkcs="$work/v97-client.p12" SSL_password=client-key-pw \
  SSL_pub_pem="$work/v97-client.pem" SSL_pub_der="$work/v97-client.der" SSL_priv_pem="$work/v97-client.key" \
  SSL_priv_der="$work/v97-client.key.der" SSL_all_cas_pem="$work/v97-ca.pem" SSL_ca_der="$work/v97-ca.der"
kill "$broker"; wait "$broker"
for f in "$work"/*.log; do
  echo "== $(basename "$f")"
  grep -E ': PASS|PASSED: |TEST FAILURE|PASSED|SKIPPED|FAILED' "$f" | grep -v '^%' | grep -v '^\[<MAIN>' | sort -u
done
echo "logs in $work"
