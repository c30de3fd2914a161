#!/bin/sh
# Installs what building, running and testing need, on Debian or Ubuntu.
# Only packages that are missing are installed; root or sudo is required then.
set -e
PKGS="make cmake gcc pkg-config libev-dev libc-ares-dev libsodium-dev libmbedtls-dev
libpcre2-dev libssl-dev libcjson-dev libqrencode-dev libcmocka-dev python3 python3-pytest
shadowsocks-libev curl v2ray b3sum python3-cryptography clang zbar-tools simple-obfs
shadowsocks-v2ray-plugin systemd dbus util-linux fish zsh"
# ss-redir's tests: namespaces, veth pairs, REDIRECT and TPROXY rules.
PKGS="$PKGS iproute2 nftables"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
updated=""
# Building and checking the Debian packages (tests/package).
PKGS="$PKGS build-essential debhelper dpkg-dev fakeroot lintian strace"

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

install() {
	echo "installing:$*"
	if [ -z "$updated" ]; then
		$SUDO apt-get update -qq
		updated=1
	fi
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

missing=""
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] || install $missing

# The fuzz build (clang -fsanitize=fuzzer) needs clang's compiler-rt, which
# clang only recommends: the one of the clang installed.
rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
installed "$rt" || install "$rt"
