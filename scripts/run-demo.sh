#!/bin/sh
# SPDX-License-Identifier: MIT
# Starts ss-server and ss-local on loopback with a fresh key and shows how to
# use them. Ctrl-C stops both.
set -e
BIN=${1:-build}
METHOD=${METHOD:-chacha20-ietf-poly1305}
SERVER_PORT=${SERVER_PORT:-8388}
LOCAL_PORT=${LOCAL_PORT:-1080}
KEY=$(head -c 32 /dev/urandom | base64)

"$BIN/ss-server" -s 127.0.0.1 -p "$SERVER_PORT" -m "$METHOD" --key "$KEY" &
SERVER=$!
"$BIN/ss-local" -s 127.0.0.1 -p "$SERVER_PORT" -b 127.0.0.1 -l "$LOCAL_PORT" -m "$METHOD" \
	--key "$KEY" &
LOCAL=$!
stop() {
	kill $SERVER $LOCAL 2>/dev/null
	wait 2>/dev/null
	echo
	echo stopped.
}
trap 'exit 0' INT TERM
trap stop EXIT
sleep 0.5
cat <<MSG

  ss-server  127.0.0.1:$SERVER_PORT   method $METHOD
  ss-local   SOCKS5 proxy at 127.0.0.1:$LOCAL_PORT
  key        $KEY

  Try it:    curl --socks5-hostname 127.0.0.1:$LOCAL_PORT https://example.com/
  Ctrl-C stops both.

MSG
wait $SERVER $LOCAL
