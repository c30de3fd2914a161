/* SPDX-License-Identifier: MIT */
#ifndef SS_PROGRAM_CHECK_H
#define SS_PROGRAM_CHECK_H

#include <stdio.h>

#include "config/config.h"

/* --check (as nginx -t): after the configuration parsed, loads the ACL
 * file, finds each plugin, looks up each server name through the resolver
 * the program uses (-d, $SS_HOSTS_FILE) and the listen addresses as the
 * listeners would, and writes to out what would run: method, servers,
 * listen addresses, mode, plugins, ACL; never a password or key. Opens no
 * listener and starts nothing. 0, or -errno with err naming the first
 * problem. */
int ss_check_run(const ss_config_t *cfg, FILE *out, char *err, size_t errlen);

/* The parser's warnings (cfg->warnings): to the log when f is NULL, else
 * to f as "NAME: warning: ..." lines. */
void ss_check_warnings(const ss_config_t *cfg, FILE *f);

#endif
