/* SPDX-License-Identifier: MIT */
/* --version: what the build took (the line configure printed), the
 * libraries the programs were built against, and those that run now where
 * the library can say (a newer shared library than the headers is common
 * after a distribution update). */

#include <ares.h>
#include <cjson/cJSON.h>
#include <ev.h>
#include <mbedtls/version.h>
#include <sodium.h>
#include <stdio.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#ifdef SS_HAVE_OPENSSL
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#endif
#ifdef SS_HAVE_QRENCODE
#include <qrencode.h>
#endif
#ifdef SS_HAVE_LIBBLAKE3
#include <blake3.h>
#endif

#include "build_summary.h"
#include "config/config.h"

#define LIBS_STR2(x) #x
#define LIBS_STR(x) LIBS_STR2(x)

static void libs_line(FILE *f, const char *name, const char *built, const char *runs)
{
	fprintf(f, "  %-10s %-14s %s\n", name, built, runs);
}

void ss_config_version_libs(void *out)
{
	FILE *f = out;
	char ev[32], pcre[64], mbed[32];

	if (f == NULL)
		return;
	fprintf(f, "build: %s\n", SS_BUILD_SUMMARY);
	fprintf(f, "libraries:  %-14s %s\n", "built with", "in use");
	snprintf(ev, sizeof(ev), "%d.%d", ev_version_major(), ev_version_minor());
	libs_line(f, "libev", LIBS_STR(EV_VERSION_MAJOR) "." LIBS_STR(EV_VERSION_MINOR), ev);
	libs_line(f, "c-ares", ARES_VERSION_STR, ares_version(NULL));
	libs_line(f, "libsodium", SODIUM_VERSION_STRING, sodium_version_string());
	mbedtls_version_get_string(mbed);
	libs_line(f, "Mbed TLS", MBEDTLS_VERSION_STRING, mbed);
#if defined(SS_HAVE_OPENSSL) && defined(OPENSSL_VERSION_PATCH)
	libs_line(f, "OpenSSL",
		  LIBS_STR(OPENSSL_VERSION_MAJOR) "." LIBS_STR(OPENSSL_VERSION_MINOR) "." LIBS_STR(
		      OPENSSL_VERSION_PATCH),
		  OpenSSL_version(OPENSSL_VERSION_STRING));
#elif defined(SS_HAVE_OPENSSL)
	libs_line(f, "OpenSSL", "1.x", OpenSSL_version(OPENSSL_VERSION));
#else
	libs_line(f, "OpenSSL", "-", "(not built in)");
#endif
	if (pcre2_config(PCRE2_CONFIG_VERSION, pcre) < 0)
		snprintf(pcre, sizeof(pcre), "?");
	libs_line(f, "PCRE2", LIBS_STR(PCRE2_MAJOR) "." LIBS_STR(PCRE2_MINOR), pcre);
	libs_line(f, "cJSON",
		  LIBS_STR(CJSON_VERSION_MAJOR) "." LIBS_STR(CJSON_VERSION_MINOR) "." LIBS_STR(
		      CJSON_VERSION_PATCH),
		  cJSON_Version());
#ifdef SS_HAVE_QRENCODE
	/* Its header carries no version: only the library can say. */
	libs_line(f, "qrencode", "yes", QRcode_APIVersionString());
#else
	libs_line(f, "qrencode", "-", "(not built in: no QR codes)");
#endif
#ifdef SS_HAVE_LIBBLAKE3
	libs_line(f, "BLAKE3", BLAKE3_VERSION_STRING, blake3_version());
#else
	libs_line(f, "BLAKE3", "-", "(no libblake3: deps/blake3 built in)");
#endif
}
