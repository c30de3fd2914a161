/* SPDX-License-Identifier: MIT */
/* ss-manager's state file: every port and what it was added with, so that
 * a restart serves them again. Written whole after each change, to a
 * temporary file beside it (mode 0600: it holds passwords), synced, then
 * renamed over it, so a crash leaves the old file or the new, never half. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/secret.h"
#include "proto/mgrcmd.h"
#include "relay/manager_internal.h"
#include "util/log.h"

/* Files larger than this are not a state file of ours. */
#define MGR_STATE_MAX (64L << 20)

static char *mgr_state_text(const ss_manager_t *m)
{
	cJSON *root = cJSON_CreateObject(), *ports = cJSON_AddArrayToObject(root, "ports");
	char *text = NULL;
	bool ok = root && ports;

	for (size_t i = 0; ok && i < m->n_ports; i++) {
		cJSON *o = cJSON_Duplicate(m->ports[i]->fields, true);
		ok = o && cJSON_AddNumberToObject(o, "server_port", m->ports[i]->port) &&
		     cJSON_AddItemToArray(ports, o);
		if (!ok)
			cJSON_Delete(o);
	}
	if (ok)
		text = cJSON_Print(root);
	cJSON_Delete(root);
	return text;
}

static int mgr_write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The directory holding path, synced so the rename lasts. */
static void mgr_sync_dir(const char *path)
{
	char dir[4096];
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int mgr_state_save(ss_manager_t *m)
{
	const char *path = m->cfg->state_file;
	char tmp[4200];
	char *text;
	int fd, rc;

	if (!path[0])
		return 0;
	if (!(text = mgr_state_text(m))) {
		ss_err("state file %s: out of memory; not written", path);
		return -ENOMEM;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp); /* 0600 */
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = mgr_write_all(fd, text, strlen(text))) == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	else
		mgr_sync_dir(path);
out:
	if (rc < 0)
		ss_err("state file %s: %s; the ports are served but not kept", path, strerror(-rc));
	ss_secret_wipe(text, strlen(text));
	free(text);
	return rc;
}

static char *mgr_read_file(const char *path, char *err, size_t errlen, int *rc)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	long size;

	*rc = 0;
	if (!f) {
		if (errno != ENOENT) {
			*rc = -errno;
			snprintf(err, errlen, "state file %.256s: %s", path, strerror(errno));
		}
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && size <= MGR_STATE_MAX &&
	    fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) &&
	    fread(text, 1, (size_t)size, f) == (size_t)size) {
		text[size] = '\0';
	} else {
		free(text);
		text = NULL;
		*rc = -EINVAL;
		snprintf(err, errlen, "state file %.256s: cannot be read whole", path);
	}
	fclose(f);
	return text;
}

/* Every entry checked before any port starts: a damaged file starts none. */
static int mgr_state_check(const cJSON *ports, const char *path, char *err, size_t errlen)
{
	char why[256];
	size_t i = 0;

	if (!cJSON_IsArray(ports)) {
		snprintf(err, errlen, "state file %.256s: no \"ports\" array", path);
		return -EINVAL;
	}
	for (const cJSON *o = ports->child; o; o = o->next, i++) {
		uint16_t port;
		cJSON *fields;

		if (ss_mgr_port_parse(o, &port, &fields, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "state file %.256s: port entry %zu: %s", path, i,
				 why);
			return -EINVAL;
		}
		cJSON_Delete(fields);
	}
	return 0;
}

int mgr_state_load(ss_manager_t *m, char *err, size_t errlen)
{
	const char *path = m->cfg->state_file;
	cJSON *root, *ports;
	char *text;
	char why[512];
	int rc;

	if (!path[0])
		return 0;
	if (!(text = mgr_read_file(path, err, errlen, &rc)))
		return rc;
	root = cJSON_Parse(text);
	ss_secret_wipe(text, strlen(text));
	free(text);
	if (!root) {
		snprintf(err, errlen, "state file %.256s: not JSON; fix or remove it", path);
		return -EINVAL;
	}
	ports = cJSON_GetObjectItemCaseSensitive(root, "ports");
	if ((rc = mgr_state_check(ports, path, err, errlen)) < 0) {
		cJSON_Delete(root);
		return rc;
	}
	for (const cJSON *o = ports->child; o; o = o->next) {
		uint16_t port;
		cJSON *fields;

		ss_mgr_port_parse(o, &port, &fields, why, sizeof(why));
		if (mgr_port_add(m, port, fields, why, sizeof(why)) < 0)
			ss_err("port %u (state file): %s", port, why);
	}
	ss_notice("state file %s: %zu ports", path, m->n_ports);
	cJSON_Delete(root);
	return 0;
}
