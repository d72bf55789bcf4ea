#!/bin/sh
# Writes mahimahi-sample/: three exchanges as Mahimahi's mm-webrecord stores them (one RequestResponse per
# file, serialized alone, named save.XXXXXX), encoded with Mahimahi's own schema (its
# src/protobufs/http_record.proto, copied below), not tracemod's. Like Mahimahi, a chunked response keeps its
# Transfer-Encoding header and its chunk framing in the body; the scheme is HTTPS exactly when the port is 443.
#   tests/data/web/make-mahimahi-sample.sh   (needs protoc)
set -e
cd "$(dirname "$0")"
schema=$(mktemp -d)
trap 'rm -rf "$schema"' EXIT
cat > "$schema/http_record.proto" <<'PROTO'
syntax = "proto2";
package MahimahiProtobufs;
message HTTPMessage { optional bytes first_line = 1; repeated HTTPHeader header = 2; optional bytes body = 3; }
message HTTPHeader { optional bytes key = 1; optional bytes value = 2; }
message RequestResponse {
  optional string ip = 1; optional uint32 port = 2;
  enum Scheme { HTTP = 1; HTTPS = 2; }
  optional Scheme scheme = 3; optional HTTPMessage request = 4; optional HTTPMessage response = 5;
}
PROTO
rm -rf mahimahi-sample
mkdir mahimahi-sample
encode() {
  protoc --proto_path="$schema" --encode=MahimahiProtobufs.RequestResponse "$schema/http_record.proto" \
    > "mahimahi-sample/$1"
}
encode save.Ab3xQz <<'TEXT'
ip: "93.184.216.34" port: 443 scheme: HTTPS
request { first_line: "GET /index.html HTTP/1.1"
  header { key: "Host" value: "www.example.org" }
  header { key: "User-Agent" value: "Mozilla/5.0" } body: "" }
response { first_line: "HTTP/1.1 200 OK"
  header { key: "Content-Type" value: "text/html" }
  header { key: "Transfer-Encoding" value: "chunked" }
  body: "7\r\n<html>h\r\nb;ext=1\r\nello</html>\r\n0\r\n\r\n" }
TEXT
encode save.Kk09Lm <<'TEXT'
ip: "93.184.216.34" port: 443 scheme: HTTPS
request { first_line: "GET /search?q=cats&page=2 HTTP/1.1"
  header { key: "Host" value: "www.example.org" } body: "" }
response { first_line: "HTTP/1.1 200 OK"
  header { key: "Content-Type" value: "application/json" }
  header { key: "Content-Length" value: "13" }
  body: "{\"page\": two}" }
TEXT
encode save.b7TTr2 <<'TEXT'
ip: "198.51.100.7" port: 80 scheme: HTTP
request { first_line: "POST /form HTTP/1.1"
  header { key: "Host" value: "plain.example.net:80" }
  header { key: "Content-Length" value: "3" } body: "a=b" }
response { first_line: "HTTP/1.1 302 Found"
  header { key: "Location" value: "/done" }
  header { key: "Content-Length" value: "0" } body: "" }
TEXT
