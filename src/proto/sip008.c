/* SPDX-License-Identifier: MIT */
#include "proto/sip008.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "crypto/primitives.h"

/* Online configuration documents (SIP008), and the one-URL answer of
 * Outline's dynamic access keys. */

static int sip008_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int sip008_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		/* Quoted values may hold anything: one line, printable. */
		for (char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	return -EINVAL;
}

/* How a message names server i: its remarks or id when it has them. */
static const char *sip008_who(const cJSON *o, size_t i, char *buf, size_t cap)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "remarks");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");

	if (!cJSON_IsString(r) || !r->valuestring[0])
		r = cJSON_IsString(id) && id->valuestring[0] ? id : NULL;
	if (r)
		snprintf(buf, cap, "\"servers\"[%zu] (\"%.40s\")", i, r->valuestring);
	else
		snprintf(buf, cap, "\"servers\"[%zu]", i);
	return buf;
}

/* An optional string field into dst[cap]: 0, or -EINVAL (not a string,
 * or too long; required and missing or empty). */
static int sip008_str(const cJSON *o, const char *key, bool required, char *dst, size_t cap,
		      const char *who, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			return sip008_err(err, errlen, "%s: no \"%s\"", who, key);
		return 0;
	}
	if (!cJSON_IsString(v))
		return sip008_err(err, errlen, "%s: \"%s\" must be a string", who, key);
	if (strlen(v->valuestring) >= cap)
		return sip008_err(err, errlen, "%s: \"%s\" is longer than %zu bytes", who, key,
				  cap - 1);
	if (required && !v->valuestring[0])
		return sip008_err(err, errlen, "%s: \"%s\" is empty", who, key);
	memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return 0;
}

static bool sip008_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* One entry of "servers". */
static int sip008_server(const cJSON *o, size_t i, ss_sip008_server_t *e, char *err,
			 size_t errlen)
{
	const cJSON *port = cJSON_GetObjectItemCaseSensitive(o, "server_port");
	char who[64];
	ss_url_t *u = &e->u;

	sip008_who(o, i, who, sizeof(who));
	if (!cJSON_IsObject(o))
		return sip008_err(err, errlen, "%s must be an object", who);
	if (sip008_str(o, "server", true, u->host, sizeof(u->host), who, err, errlen) ||
	    sip008_str(o, "method", true, u->method, sizeof(u->method), who, err, errlen) ||
	    sip008_str(o, "password", false, u->password, sizeof(u->password), who, err,
		       errlen) ||
	    sip008_str(o, "plugin", false, u->plugin, sizeof(u->plugin), who, err, errlen) ||
	    sip008_str(o, "plugin_opts", false, u->plugin_opts, sizeof(u->plugin_opts), who, err,
		       errlen) ||
	    sip008_str(o, "remarks", false, u->tag, sizeof(u->tag), who, err, errlen) ||
	    sip008_str(o, "id", false, e->id, sizeof(e->id), who, err, errlen))
		return -EINVAL;
	if (!cJSON_GetObjectItemCaseSensitive(o, "password"))
		return sip008_err(err, errlen, "%s: no \"password\"", who);
	if (!u->tag[0])
		memcpy(u->tag, e->id, sizeof(e->id));
	if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535 ||
	    (double)(int)port->valuedouble != port->valuedouble)
		return sip008_err(err, errlen, "%s: \"server_port\" must be a number from 1 to 65535",
				  who);
	u->port = (uint16_t)port->valuedouble;
	if (!sip008_printable(u->host) || strpbrk(u->host, " /@[]") != NULL)
		return sip008_err(err, errlen, "%s: \"server\" is not a host name or address", who);
	if (u->plugin[0] && !ss_url_plugin_name_ok(u->plugin))
		return sip008_err(err, errlen,
				  "%s: \"plugin\" must be a program's name alone, not '%.64s'",
				  who, u->plugin);
	if (!u->plugin[0] && u->plugin_opts[0])
		u->plugin_opts[0] = '\0';
	if (!sip008_printable(u->plugin_opts))
		return sip008_err(err, errlen, "%s: \"plugin_opts\" holds a control byte", who);
	return 0;
}

static int sip008_json(const char *text, size_t len, ss_sip008_t *doc, char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	const cJSON *v, *servers = NULL, *o;
	size_t i = 0;
	int rc = -EINVAL;

	if (root == NULL)
		return sip008_err(err, errlen, "not a JSON document (nor an ss:// URL)");
	if (!cJSON_IsObject(root)) {
		sip008_err(err, errlen, "the document must be a JSON object");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "version");
	if (v != NULL && (!cJSON_IsNumber(v) || v->valuedouble != 1)) {
		sip008_err(err, errlen, "\"version\" must be 1 (SIP008)");
		goto out;
	}
	servers = cJSON_GetObjectItemCaseSensitive(root, "servers");
	if (!cJSON_IsArray(servers)) {
		sip008_err(err, errlen, "no \"servers\" list");
		goto out;
	}
	cJSON_ArrayForEach(o, servers)
	{
		ss_sip008_server_t spare, *e = doc->n < SS_SIP008_KEEP ? &doc->s[doc->n] : &spare;

		memset(&spare, 0, sizeof(spare));
		if (sip008_server(o, i++, e, err, errlen) != 0) {
			ss_wipe(&spare, sizeof(spare));
			goto out;
		}
		if (e == &spare)
			doc->n_more++;
		else
			doc->n++;
		ss_wipe(&spare, sizeof(spare));
	}
	if (i == 0)
		sip008_err(err, errlen, "the \"servers\" list is empty");
	else
		rc = 0;
out:
	/* The passwords were in the tree too. */
	for (cJSON *it = servers && cJSON_IsArray(servers) ? servers->child : NULL; it;
	     it = it->next) {
		cJSON *pw = cJSON_GetObjectItemCaseSensitive(it, "password");
		if (cJSON_IsString(pw))
			ss_wipe(pw->valuestring, strlen(pw->valuestring));
	}
	cJSON_Delete(root);
	return rc;
}

int ss_sip008_parse(const char *text, size_t len, ss_sip008_t *doc, char *err, size_t errlen)
{
	char url[8192];
	int rc;

	memset(doc, 0, sizeof(*doc));
	if (err && errlen)
		err[0] = '\0';
	while (len && (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n'))
		text++, len--;
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r' ||
		       text[len - 1] == '\n'))
		len--;
	if (len >= 5 && strncmp(text, "ss://", 5) == 0) {
		if (len >= sizeof(url) || memchr(text, '\0', len))
			return sip008_err(err, errlen, "the ss:// URL is too long or holds a NUL");
		memcpy(url, text, len);
		url[len] = '\0';
		rc = ss_url_parse(url, &doc->s[0].u, err, errlen);
		ss_wipe(url, sizeof(url));
		if (rc != 0) {
			ss_sip008_clear(doc);
			return -EINVAL;
		}
		doc->n = 1;
		doc->from_url = true;
		return 0;
	}
	rc = sip008_json(text, len, doc, err, errlen);
	if (rc != 0)
		ss_sip008_clear(doc);
	return rc;
}

bool ss_sip008_same(const ss_sip008_t *a, const ss_sip008_t *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const ss_url_t *x = &a->s[i].u, *y = &b->s[i].u;
		if (x->port != y->port || strcmp(x->host, y->host) || strcmp(x->method, y->method) ||
		    strcmp(x->password, y->password) || strcmp(x->plugin, y->plugin) ||
		    strcmp(x->plugin_opts, y->plugin_opts) || strcmp(x->tag, y->tag))
			return false;
	}
	return true;
}

void ss_sip008_clear(ss_sip008_t *doc)
{
	ss_wipe(doc, sizeof(*doc));
}
