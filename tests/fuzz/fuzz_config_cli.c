/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the command line (ss_config_parse), raw, for each
 * program. Input: [program][arguments][\0\0][JSON]. The program is picked
 * by the first byte (modulo 4); the arguments are separated by single NUL
 * bytes and become argv[1..] (at most 64); whatever follows the first
 * double NUL is written, before the parse, to the two files the parse may
 * read: c.json in the working directory (for -c c.json) and the default
 * file it reads when given no arguments.
 * The parse must not touch files outside a temporary directory: it runs
 * inside one, with HOME, XDG_CONFIG_HOME and SS_SYSCONFDIR pointing into it,
 * and every '/' in an argument is turned into '_', so a path can only name
 * something in the working directory (or "..", its parent, also inside).
 * The default file is the one under XDG_CONFIG_HOME. It must never
 * exit (libFuzzer reports an exit as a failure) and must answer with a
 * valid configuration, usage text, or one line naming what is wrong. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "fuzz_util.h"

#define MAX_ARGS 64

static char root[256], work[300], conf_dir[300], conf_file[340];
static char usage[1 << 16];
static FILE *usage_out;

static void cleanup(void)
{
	char path[400];

	unlink("c.json");
	unlink(conf_file);
	rmdir(conf_dir);
	snprintf(path, sizeof(path), "%s/xdg", root);
	rmdir(path);
	rmdir(work);
	snprintf(path, sizeof(path), "%s/home", root);
	rmdir(path);
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	char path[400];

	(void)argc;
	(void)argv;
	snprintf(root, sizeof(root), "%s/fuzz_config_cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	FZ_CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/home", root);
	FZ_CHECK(mkdir(path, 0700) == 0);
	snprintf(work, sizeof(work), "%s/home/work", root);
	FZ_CHECK(mkdir(work, 0700) == 0);
	snprintf(path, sizeof(path), "%s/xdg", root);
	FZ_CHECK(mkdir(path, 0700) == 0);
	snprintf(conf_dir, sizeof(conf_dir), "%s/xdg/shadowsocks-libev", root);
	FZ_CHECK(mkdir(conf_dir, 0700) == 0);
	snprintf(conf_file, sizeof(conf_file), "%s/config.json", conf_dir);
	FZ_CHECK(chdir(work) == 0);
	snprintf(path, sizeof(path), "%s/home", root);
	FZ_CHECK(setenv("HOME", path, 1) == 0);
	snprintf(path, sizeof(path), "%s/xdg", root);
	FZ_CHECK(setenv("XDG_CONFIG_HOME", path, 1) == 0);
	FZ_CHECK(setenv("SS_SYSCONFDIR", root, 1) == 0);
	atexit(cleanup);
	usage_out = fmemopen(usage, sizeof(usage), "w");
	FZ_CHECK(usage_out != NULL);
	setvbuf(usage_out, NULL, _IONBF, 0);
	return 0;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	FZ_CHECK(f != NULL);
	FZ_CHECK(fwrite(p, 1, n, f) == n);
	FZ_CHECK(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"ss-local", "ss-server", "ss-tunnel", "ss-redir"};
	static ss_config_t cfg;
	char *argv[MAX_ARGS + 2], *text, err[512] = "";
	const uint8_t *json = NULL;
	int argc = 1;
	ss_config_status_t st;
	ss_prog_t prog;

	if (size == 0)
		return 0;
	prog = (ss_prog_t)(data[0] % 4);
	data++;
	size--;
	for (size_t i = 0; i + 1 < size; i++)
		if (data[i] == 0 && data[i + 1] == 0) {
			json = data + i + 2;
			write_file("c.json", json, size - i - 2);
			write_file(conf_file, json, size - i - 2);
			size = i;
			break;
		}
	if (!json) {
		unlink("c.json");
		unlink(conf_file);
	}
	/* The arguments, each its own allocation so ASan sees past its end. */
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t i = 0; i < size; i++)
		if (text[i] == '/')
			text[i] = '_';
	argv[0] = strdup(names[prog]);
	for (char *p = text; p < text + size && argc <= MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = strdup(p);
	argv[argc] = NULL;

	rewind(usage_out);
	usage[0] = '\0';
	{
		char *copy[MAX_ARGS + 2];
		int n = argc;

		/* getopt permutes argv; the strings are freed from this copy. */
		memcpy(copy, argv, sizeof(argv[0]) * (size_t)(argc + 1));
		st = ss_config_parse(&cfg, prog, n, argv, usage_out, err, sizeof(err));
		memcpy(argv, copy, sizeof(argv[0]) * (size_t)(argc + 1));
	}
	FZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && strchr(err, '\n') == NULL);
	switch (st) {
	case SS_CONFIG_RUN:
		FZ_CHECK(err[0] == '\0');
		FZ_CHECK(cfg.prog == prog && cfg.method != NULL);
		FZ_CHECK(cfg.n_servers >= 1 && cfg.n_servers <= SS_MAX_SERVERS);
		FZ_CHECK(cfg.timeout > 0 && cfg.udp_timeout > 0 && cfg.udp_max_assoc > 0);
		FZ_CHECK(prog == SS_PROG_SERVER || cfg.local_port != 0);
		FZ_CHECK(prog != SS_PROG_TUNNEL || cfg.have_tunnel_addr);
		/* The secret text is gone once the key is made. */
		FZ_CHECK(fz_all_zero((const uint8_t *)cfg.password, sizeof(cfg.password)));
		FZ_CHECK(fz_all_zero((const uint8_t *)cfg.key_b64, sizeof(cfg.key_b64)));
		break;
	case SS_CONFIG_HELP:
	case SS_CONFIG_VERSION:
		FZ_CHECK(usage[0] != '\0');
		break;
	default:
		FZ_CHECK(st == SS_CONFIG_ERROR && err[0] != '\0');
	}
	ss_config_clear(&cfg);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(text);
	return 0;
}
