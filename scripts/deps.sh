#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what building, running and testing need, on Debian (12, 13) or
# Ubuntu (22.04, 24.04). Only packages that are missing are installed; root
# or sudo is required then. Nothing else calls it: `make` and `make test`
# install nothing.
set -e
PKGS="make cmake gcc pkg-config libev-dev libc-ares-dev libsodium-dev libmbedtls-dev
libpcre2-dev libssl-dev libcjson-dev libqrencode-dev libcmocka-dev python3 python3-pytest
curl python3-cryptography python3-prometheus-client clang zbar-tools systemd dbus util-linux fish zsh"
# ss-redir's tests: namespaces, veth pairs, REDIRECT and TPROXY rules.
PKGS="$PKGS iproute2 nftables"
# Building and checking the Debian packages (tests/package).
PKGS="$PKGS build-essential debhelper dpkg-dev fakeroot lintian strace"
# The build matrix (scripts/ci-matrix.sh) unpacks Mbed TLS 3.6 from a .tar.xz.
PKGS="$PKGS xz-utils"
# The online configuration: the system's CA bundle it checks servers against,
# and the openssl command its tests make their CA and certificates with.
PKGS="$PKGS ca-certificates openssl"
# The peers of the interop and plugin tests. Not every release has each
# (Debian 13 dropped simple-obfs): those its archive lacks are named, not
# installed, and the tests that need them fail saying so.
PEERS="shadowsocks-libev simple-obfs shadowsocks-v2ray-plugin v2ray b3sum"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
updated=""

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

update() {
	if [ -z "$updated" ]; then
		$SUDO apt-get update -qq
		updated=1
	fi
}

# Whether the archive has a package of that name (after update).
available() {
	apt-cache show --no-all-versions "$1" >/dev/null 2>&1
}

install() {
	echo "installing:$*"
	update
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

missing=""
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
for p in $PEERS; do
	installed "$p" && continue
	update
	if available "$p"; then
		missing="$missing $p"
	else
		echo "not in this release's archive: $p (the tests that need it will fail)"
	fi
done
[ -z "$missing" ] || install $missing

# The fuzz build (clang -fsanitize=fuzzer) needs clang's compiler-rt, which
# clang only recommends: the one of the clang installed. Debian 12 and 13
# and Ubuntu 24.04 ship it as libclang-rt-N-dev; Ubuntu 22.04 has it in
# libclang-common-N-dev, which clang-N depends on.
v=$(clang -dumpversion | cut -d. -f1)
if ! installed "libclang-rt-$v-dev"; then
	update
	if available "libclang-rt-$v-dev"; then
		install "libclang-rt-$v-dev"
	else
		installed "libclang-common-$v-dev" || install "libclang-common-$v-dev"
	fi
fi
