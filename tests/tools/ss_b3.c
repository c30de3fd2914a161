/* SPDX-License-Identifier: MIT */
/* ss_b3: ss_blake3 behind the command line of b3sum (--keyed, --derive-key,
 * --length, output as with --no-names), so that tests can compare the two. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blake3/blake3.h"

static const char usage[] =
    "usage: ss_b3 [--keyed | --derive-key CONTEXT] [--length N] [--piece N] [FILE]...\n"
    "Prints the BLAKE3 hash of each FILE (standard input when none, or '-') in hex,\n"
    "one line each.\n"
    "  --keyed              keyed hash; the key is read from standard input,\n"
    "                       exactly 32 raw bytes (FILE is then required)\n"
    "  --derive-key CONTEXT derive a key from each input under CONTEXT\n"
    "  --length N           output N bytes (default 32)\n"
    "  --piece N            feed the hasher N bytes per update (default: per read)\n";

typedef struct opts {
	int keyed;
	uint8_t key[SS_BLAKE3_KEY_LEN];
	const char *context;
	size_t length;
	size_t piece;
} opts_t;

static int parse_size(const char *s, size_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int read_key(uint8_t key[static SS_BLAKE3_KEY_LEN])
{
	uint8_t extra;
	size_t n = fread(key, 1, SS_BLAKE3_KEY_LEN, stdin);

	if (n != SS_BLAKE3_KEY_LEN || fread(&extra, 1, 1, stdin) != 0) {
		fprintf(stderr, "ss_b3: the key on standard input must be exactly %d bytes\n",
			SS_BLAKE3_KEY_LEN);
		return -1;
	}
	return 0;
}

static int hash_stream(const opts_t *o, FILE *f, const char *name, uint8_t *out)
{
	uint8_t buf[65536];
	ss_blake3_t h;
	size_t n;

	if (o->keyed)
		ss_blake3_init_keyed(&h, o->key);
	else if (o->context)
		ss_blake3_init_derive_key(&h, o->context);
	else
		ss_blake3_init(&h);

	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		size_t step = o->piece ? o->piece : n;
		for (size_t off = 0; off < n; off += step)
			ss_blake3_update(&h, buf + off, n - off < step ? n - off : step);
	}
	if (ferror(f)) {
		fprintf(stderr, "ss_b3: reading %s: %s\n", name, strerror(errno));
		return -1;
	}
	ss_blake3_final(&h, out, o->length);
	ss_blake3_wipe(&h);
	for (size_t i = 0; i < o->length; i++)
		printf("%02x", out[i]);
	putchar('\n');
	return 0;
}

static int hash_path(const opts_t *o, const char *path, uint8_t *out)
{
	if (strcmp(path, "-") == 0)
		return hash_stream(o, stdin, "standard input", out);

	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "ss_b3: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = hash_stream(o, f, path, out);
	fclose(f);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"keyed", no_argument, NULL, 'k'},        {"derive-key", required_argument, NULL, 'd'},
	    {"length", required_argument, NULL, 'l'}, {"piece", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	opts_t o = {.length = SS_BLAKE3_OUT_LEN};
	uint8_t *out;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "l:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o.keyed = 1;
			break;
		case 'd':
			o.context = optarg;
			break;
		case 'l':
		case 'p':
			if (parse_size(optarg, c == 'l' ? &o.length : &o.piece) < 0) {
				fprintf(stderr, "ss_b3: not a byte count: `%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (o.keyed && o.context) {
		fputs("ss_b3: --keyed and --derive-key exclude each other\n", stderr);
		return 2;
	}
	if (o.keyed && optind == argc) {
		fputs("ss_b3: --keyed reads the key from standard input: name the FILE\n", stderr);
		return 2;
	}
	if (o.keyed && read_key(o.key) < 0)
		return 1;

	out = malloc(o.length ? o.length : 1);
	if (!out) {
		fprintf(stderr, "ss_b3: no memory for %zu bytes of output\n", o.length);
		return 1;
	}
	if (optind == argc)
		rc = hash_path(&o, "-", out);
	for (int i = optind; i < argc; i++)
		if (hash_path(&o, argv[i], out) < 0)
			rc = -1;
	free(out);
	return rc < 0 ? 1 : 0;
}
