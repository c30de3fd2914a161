#!/bin/sh
# Installs what building, running and testing need, on Debian or Ubuntu.
# Only packages that are missing are installed; root or sudo is required then.
set -e
PKGS="make cmake gcc pkg-config libev-dev libc-ares-dev libsodium-dev libmbedtls-dev
libpcre2-dev libssl-dev libcjson-dev libcmocka-dev python3 python3-pytest shadowsocks-libev
curl v2ray b3sum python3-cryptography"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
