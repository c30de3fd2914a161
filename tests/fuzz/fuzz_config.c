/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the JSON configuration (ss_config_parse_json), raw.
 * The first byte picks the program (ss-local, ss-server, ss-tunnel, ss-redir,
 * by its value modulo 4); the rest is the file's text. Whatever it holds, the
 * parser returns 0 or -EINVAL with a one-line message, every server entry
 * it made has a host, its warnings are single lines, and the configuration is cleared without leaks
 * or a secret left behind (server entries and ss:// URLs included). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config/config.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ss_config_t cfg;
	char err[512] = "";
	char *text;
	int rc;

	if (size == 0)
		return 0;
	/* The file is read whole and NUL-terminated, as load_file does. */
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	ss_config_init(&cfg, (ss_prog_t)(data[0] % 4));
	rc = ss_config_parse_json(&cfg, text, err, sizeof(err));
	FZ_CHECK(rc == 0 || rc == -EINVAL);
	FZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && strchr(err, '\n') == NULL);
	if (rc != 0)
		FZ_CHECK(err[0] != '\0');
	FZ_CHECK(cfg.n_servers <= SS_MAX_SERVERS);
	for (size_t i = 0; i < cfg.n_warnings && i < SS_CONFIG_WARN_MAX; i++)
		FZ_CHECK(memchr(cfg.warnings[i], '\0', sizeof(cfg.warnings[i])) != NULL &&
			 strchr(cfg.warnings[i], '\n') == NULL);
	for (size_t i = 0; rc == 0 && i < cfg.n_servers; i++)
		FZ_CHECK(cfg.servers[i].host[0] != '\0' &&
			 memchr(cfg.servers[i].tag, '\0', sizeof(cfg.servers[i].tag)));
	ss_config_clear(&cfg);
	FZ_CHECK(cfg.users == NULL &&
		 fz_all_zero((const uint8_t *)cfg.password, sizeof(cfg.password)));
	/* Every server entry's secret goes too, URLs' included. */
	for (size_t i = 0; i < SS_MAX_SERVERS; i++)
		FZ_CHECK(fz_all_zero((const uint8_t *)cfg.servers[i].password,
				     sizeof(cfg.servers[i].password)) &&
			 fz_all_zero((const uint8_t *)cfg.servers[i].key_b64,
				     sizeof(cfg.servers[i].key_b64)));
	free(text);
	return 0;
}
