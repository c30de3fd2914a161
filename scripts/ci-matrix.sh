#!/bin/sh
# SPDX-License-Identifier: MIT
# The build matrix that CI runs after `make test`, one job or all:
#
#   scripts/ci-matrix.sh [clang] [mbedtls3] [minimal]    (none named: all three)
#   scripts/ci-matrix.sh check    only checks that what the jobs take from
#                                 outside the tree is there
#
#   clang     clang with -Werror (SS_WERROR=ON): the build, the unit tests
#   mbedtls3  Mbed TLS 3.6.6 built from ../shared/vendor instead of the
#             system's 2.28, found through CMAKE_PREFIX_PATH; the sodium
#             backend without our own code, so that Mbed TLS seals AES-128
#             and AES-192-GCM: the unit tests, the end-to-end selection and
#             the check that the programs were built with 3.6.6 and run it
#   minimal   gcc with every optional library OFF (OpenSSL, libqrencode, a
#             system libblake3): the unit tests and the end-to-end selection
#
# Each job has a build directory of its own (build-clang, build-mbedtls3,
# build-minimal) and leaves the others alone. It installs nothing: run
# scripts/deps.sh first. JOBS sets the build's parallelism (2);
# SS_VENDOR_DIR the folder holding the Mbed TLS sources (../shared/vendor
# beside the project root).
set -e
cd "$(dirname "$0")/.."
root=$(pwd)
JOBS=${JOBS:-2}
MBEDTLS_VERSION=3.6.6
vendor=${SS_VENDOR_DIR:-$root/../shared/vendor}
mbedtls_tar=$vendor/mbedtls-$MBEDTLS_VERSION-crypto-src.tar.xz

say() {
	echo "ci-matrix: $*"
}

# The tests labelled unit (the unit tests, the --version checks) of build dir $1.
unit_tests() {
	(cd "$1" && ctest -L unit -j"$JOBS" --output-on-failure)
}

# A TCP and a UDP round trip through ss-local and ss-tunnel for every
# method, --print-url (its QR code, or the message of a build without one)
# and what --version names, against the programs of build dir $1.
end_to_end() {
	(cd tests/integration &&
		SS_BIN_DIR="$root/$1" SS_BENCH_DIR="$root/$1/tests/bench" \
			/usr/bin/python3 -m pytest -q -p no:cacheprovider test_methods.py \
			test_print_url.py test_cli.py::test_version_names_what_encrypts \
			test_cli.py::test_version_names_the_libraries)
}

job_clang() {
	CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DSS_WERROR=ON
	cmake --build build-clang -j"$JOBS"
	unit_tests build-clang
}

job_check() {
	if [ ! -f "$mbedtls_tar" ]; then
		say "$mbedtls_tar is missing: the mbedtls3 job needs the shared folder beside" \
			"the project root, or SS_VENDOR_DIR naming the folder that holds it" >&2
		exit 1
	fi
	for tool in clang cmake make tar xz; do
		command -v $tool >/dev/null || {
			say "$tool is missing: run scripts/deps.sh" >&2
			exit 1
		}
	done
}

# libmbedcrypto.a, libmbedx509.a and libmbedtls.a of Mbed TLS $MBEDTLS_VERSION, built once under
# build-mbedtls3/ (again when the tarball is newer); position-independent,
# since libshadowsocks-c.so links them.
mbedtls_prefix() {
	src=build-mbedtls3/mbedtls-$MBEDTLS_VERSION
	job_check
	if [ ! -f "$src/library/libmbedtls.a" ] || [ "$mbedtls_tar" -nt "$src/library/libmbedtls.a" ]; then
		rm -rf "$src"
		mkdir -p build-mbedtls3
		tar xJmf "$mbedtls_tar" -C build-mbedtls3
		# The tarball holds ssl_debug_helpers_generated.c but not the
		# script that makes it: -o keeps make from looking for that.
		make -s -C "$src/library" -j"$JOBS" CFLAGS="-O2 -fPIC" -o ssl_debug_helpers_generated.c \
			libmbedcrypto.a libmbedx509.a libmbedtls.a >/dev/null
	fi
	echo "$root/$src"
}

job_mbedtls3() {
	prefix=$(mbedtls_prefix)
	cmake -S . -B build-mbedtls3 -DCMAKE_BUILD_TYPE=Release -DSS_WERROR=ON \
		-DCMAKE_PREFIX_PATH="$prefix" -DSS_EXPECT_MBEDTLS_VERSION=$MBEDTLS_VERSION \
		-DSS_CRYPTO=sodium -DSS_OWN_CRYPTO=OFF
	cmake --build build-mbedtls3 -j"$JOBS"
	unit_tests build-mbedtls3
	end_to_end build-mbedtls3
}

job_minimal() {
	cmake -S . -B build-minimal -DCMAKE_BUILD_TYPE=Release -DSS_WERROR=ON \
		-DSS_WITH_OPENSSL=OFF -DSS_WITH_QRENCODE=OFF -DSS_WITH_SYSTEM_BLAKE3=OFF
	cmake --build build-minimal -j"$JOBS"
	unit_tests build-minimal
	end_to_end build-minimal
}

[ $# -gt 0 ] || set -- clang mbedtls3 minimal
for job in "$@"; do
	case $job in
	clang | mbedtls3 | minimal | check) ;;
	*)
		say "no job '$job': the jobs are clang, mbedtls3, minimal and check" >&2
		exit 2
		;;
	esac
done
for job in "$@"; do
	if [ "$job" = check ]; then
		job_check
		continue
	fi
	start=$(date +%s)
	say "$job: start"
	"job_$job"
	say "$job: passed in $(($(date +%s) - start)) s"
done
