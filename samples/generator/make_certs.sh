#!/bin/sh
# Test-only certificates for the tls-* recordings: a self-signed CA and a server certificate for
# localhost / 127.0.0.1 signed by it. Loopback only; the keys are public (committed) so that a
# re-recording uses the same certificates. Never use them for anything else.
set -eu
cd "$(dirname "$0")/certs"
openssl req -x509 -newkey rsa:2048 -nodes -days 7300 -subj "/CN=mcp-trace samples test CA (loopback only)" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout ca.key -out ca.pem
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7300 -extfile server.ext -out server.pem
rm -f server.csr server.ext ca.srl
openssl verify -CAfile ca.pem server.pem
# the gateway recordings (gateway/record_gateways.py): nginx terminates TLS on 127.0.0.2 (a gateway host's own
# address; clients connect by IP, so no SNI), signed by the same CA
openssl req -newkey rsa:2048 -nodes -subj "/CN=mcp-trace samples gateway (loopback only)" -keyout gateway.key -out gateway.csr
printf 'subjectAltName=IP:127.0.0.2,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > gateway.ext
openssl x509 -req -in gateway.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7300 -extfile gateway.ext -out gateway.pem
rm -f gateway.csr gateway.ext ca.srl
openssl verify -CAfile ca.pem gateway.pem
