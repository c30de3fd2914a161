/* SPDX-License-Identifier: MIT */
/* ss-local's SOCKS5 users: --socks-user/--socks-pass and --socks-users FILE
 * (and their JSON keys) made into the list the handshake checks. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"
#include "crypto/primitives.h"

#define USERS_FILE_MAX (1 << 20)

/* The file's text into a NUL-free buffer the caller wipes and frees. */
static int read_users_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (f == NULL)
		return ss_cfg_err(err, errlen, "cannot read SOCKS5 users file '%s': %s", path,
				  strerror(errno));
	buf = malloc(USERS_FILE_MAX + 1);
	if (buf == NULL) {
		fclose(f);
		return ss_cfg_err(err, errlen, "cannot read SOCKS5 users file '%s': %s", path,
				  strerror(ENOMEM));
	}
	n = fread(buf, 1, USERS_FILE_MAX + 1, f);
	int bad = ferror(f), e = errno;
	fclose(f);
	if (bad || n > USERS_FILE_MAX) {
		ss_wipe(buf, n);
		free(buf);
		if (bad)
			return ss_cfg_err(err, errlen, "cannot read SOCKS5 users file '%s': %s",
					  path, strerror(e ? e : EIO));
		return ss_cfg_err(err, errlen,
				  "SOCKS5 users file '%s' is too large (over %d bytes)", path,
				  USERS_FILE_MAX);
	}
	*out = buf;
	*len = n;
	return 0;
}

static int load_users(ss_config_t *cfg, ss_socks5_cred_t **v, size_t *n, char *err, size_t errlen)
{
	char why[128], *text = NULL;
	size_t len = 0;

	if (read_users_file(cfg->socks_users_file, &text, &len, err, errlen) != 0)
		return -EINVAL;
	int rc = ss_socks5_users_parse(text, len, v, n, why, sizeof(why));
	ss_wipe(text, len);
	free(text);
	if (rc != 0)
		return ss_cfg_err(err, errlen, "SOCKS5 users file '%s': %s", cfg->socks_users_file,
				  why);
	return 0;
}

/* The --socks-user one goes in front of the file's, which are moved up. */
static int add_cli_user(ss_config_t *cfg, char *err, size_t errlen)
{
	ss_socks5_cred_t *v = calloc(cfg->n_socks_creds + 1, sizeof(*v));

	if (v == NULL)
		return ss_cfg_err(err, errlen, "SOCKS5 users: %s", strerror(ENOMEM));
	if (ss_socks5_cred_set(&v[0], cfg->socks_user, cfg->socks_pass) != 0) {
		free(v);
		return ss_cfg_err(err, errlen,
				  "--socks-user and --socks-pass (socks_user, socks_pass) must be "
				  "1 to 255 bytes each");
	}
	for (size_t i = 0; i < cfg->n_socks_creds; i++) {
		const ss_socks5_cred_t *u = &cfg->socks_creds[i];
		if (u->name_len == v[0].name_len && memcmp(u->name, v[0].name, u->name_len) == 0) {
			ss_wipe(v, sizeof(*v));
			free(v);
			return ss_cfg_err(err, errlen,
					  "SOCKS5 user '%s' is given both by --socks-user and in "
					  "'%s'",
					  cfg->socks_user, cfg->socks_users_file);
		}
		v[i + 1] = *u;
	}
	if (cfg->socks_creds != NULL) {
		ss_wipe(cfg->socks_creds, cfg->n_socks_creds * sizeof(*cfg->socks_creds));
		free(cfg->socks_creds);
	}
	cfg->socks_creds = v;
	cfg->n_socks_creds++;
	return 0;
}

int ss_cfg_finish_socks(ss_config_t *cfg, char *err, size_t errlen)
{
	bool user = cfg->socks_user[0], pass = cfg->socks_pass[0], file = cfg->socks_users_file[0];
	int rc = 0;

	/* The flags are refused elsewhere; the keys may be in a file that
	 * ss-local shares. */
	if ((user || pass || file) && cfg->prog != SS_PROG_LOCAL)
		ss_cfg_warn(cfg, "socks_user, socks_pass and socks_users are for ss-local; "
				 "ignored");
	else if (user != pass)
		rc = ss_cfg_err(err, errlen, "%s needs %s as well",
				user ? "--socks-user/socks_user" : "--socks-pass/socks_pass",
				user ? "--socks-pass/socks_pass" : "--socks-user/socks_user");
	else if (file && load_users(cfg, &cfg->socks_creds, &cfg->n_socks_creds, err, errlen) != 0)
		rc = -EINVAL;
	else if (user)
		rc = add_cli_user(cfg, err, errlen);
	ss_wipe(cfg->socks_pass, sizeof(cfg->socks_pass));
	return rc;
}

void ss_cfg_clear_socks(ss_config_t *cfg)
{
	if (cfg->socks_creds != NULL) {
		ss_wipe(cfg->socks_creds, cfg->n_socks_creds * sizeof(*cfg->socks_creds));
		free(cfg->socks_creds);
	}
	cfg->socks_creds = NULL;
	cfg->n_socks_creds = 0;
	ss_wipe(cfg->socks_pass, sizeof(cfg->socks_pass));
}
