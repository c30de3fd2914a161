/* SPDX-License-Identifier: MIT */
/* The JSON file's text before and after cJSON reads it: the leniency of
 * shadowsocks-libev 3.3.5's parser, messages that say where and how to fix
 * what is still refused, and the closest known key for an unknown one.
 *
 * What libev's ss-server was found to accept beyond RFC 8259 (each tried
 * on a small file): one UTF-8 byte order mark at the start (cJSON skips
 * it too); a comma after
 * the last member of an object or the last element of an array ("a":1,}
 * and [1,]); an unknown escape in a string, "\q" read as "q"; a NUL byte
 * ending the text. It refuses comments of every kind, single quotes,
 * unquoted keys, a comma with no value before it ({,} [,] ,,), and
 * anything after the top-level value. */

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/config_internal.h"

static bool json_space(char c)
{
	/* As cJSON skips it, so that a blanked byte is never seen. */
	return (unsigned char)c <= 0x20 && c != '\0';
}

/* Inside a string that starts at s[0] == '"': drops the backslash of an
 * escape JSON does not have, as libev reads it, by moving the rest of the
 * string left and blanking the bytes freed after its closing quote (so
 * what follows the string keeps its position, for messages). Returns the
 * index just past the closing quote, or of the NUL ending the text. */
static size_t relax_string(char *s)
{
	size_t r = 1, w = 1;

	while (s[r] != '\0' && s[r] != '"') {
		if (s[r] == '\\' && s[r + 1] != '\0') {
			if (strchr("\"\\/bfnrtu", s[r + 1]) == NULL) {
				r++; /* "\q" is "q" */
			} else {
				s[w++] = s[r++];
			}
		}
		s[w++] = s[r++];
	}
	if (s[r] == '"')
		s[w++] = s[r++];
	for (size_t i = w; i < r; i++)
		s[i] = ' ';
	return r;
}

void ss_cfg_json_relax(char *text)
{
	/* The last byte outside white space and strings: a comma is a
	 * trailing one only after a value, not after '{', '[', ':' or ','. */
	char prev = '\0';

	for (size_t i = 0; text[i] != '\0';) {
		char c = text[i];

		if (c == '"') {
			i += relax_string(text + i);
			prev = '"';
			continue;
		}
		if (c == ',' && prev != '\0' && strchr("{[:,", prev) == NULL) {
			size_t j = i + 1;

			while (json_space(text[j]))
				j++;
			if (text[j] == '}' || text[j] == ']') {
				text[i] = ' ';
				i = j;
				continue;
			}
		}
		if (!json_space(c))
			prev = c;
		i++;
	}
}

/* How to fix what stopped the parser at `at`. */
static const char *json_hint(const char *text, const char *at)
{
	const char *before = at;

	while (before > text && json_space(before[-1]))
		before--;
	if (before == text && *at == '\0')
		return "the file is empty; it needs an object, {...}";
	if (*at == '\0')
		return "the text ends early: a closing '}', ']' or '\"' is missing";
	if ((at[0] == '/' && (at[1] == '/' || at[1] == '*')) || at[0] == '#')
		return "JSON has no comments (shadowsocks-libev refuses them too): remove it";
	if (at[0] == '\'')
		return "JSON strings and keys take double quotes (\"), not single ones";
	if (at[0] == ',' && before > text && before[-1] == ':')
		return "a value is missing after the ':'";
	if (at[0] == ',')
		return "a comma with no value before it: remove it";
	if (at[0] == '"' && before > text && strchr("\"}]0123456789el", before[-1]) != NULL)
		return "a comma is missing before this";
	if (before > text && (before[-1] == '{' || before[-1] == ',') &&
	    (at[0] == '_' || ((at[0] | 0x20) >= 'a' && (at[0] | 0x20) <= 'z')))
		return "a key must be a string in double quotes";
	if (strncmp(at, "True", 4) == 0 || strncmp(at, "False", 5) == 0 ||
	    strncmp(at, "None", 4) == 0 || strncmp(at, "Null", 4) == 0)
		return "the literals are true, false and null, in lower case";
	if (before > text && (before[-1] == '}' || before[-1] == ']'))
		return "text after the end of the top-level object: remove it";
	return NULL;
}

int ss_cfg_json_error(const char *text, const char *at, char *err, size_t errlen)
{
	int line = 1, col = 1;
	const char *hint;

	if (at == NULL || at < text)
		return ss_cfg_err(err, errlen, "invalid JSON");
	/* Where a key should start, cJSON stops one byte past what is
	 * wrong there: step back onto it. */
	if (at > text && !json_space(at[-1])) {
		const char *p = at - 1;
		while (p > text && json_space(p[-1]))
			p--;
		if (p > text && (p[-1] == '{' || p[-1] == ','))
			at--;
	}
	for (const char *p = text; p < at && *p != '\0'; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)*p & 0xc0) != 0x80) {
			col++; /* one column per UTF-8 character */
		}
	}
	hint = json_hint(text, at);
	if (hint != NULL)
		return ss_cfg_err(err, errlen, "invalid JSON at line %d, column %d: %s", line, col,
				  hint);
	if ((unsigned char)*at >= 0x21 && (unsigned char)*at < 0x7f)
		return ss_cfg_err(err, errlen,
				  "invalid JSON at line %d, column %d: unexpected '%c'", line, col,
				  *at);
	return ss_cfg_err(err, errlen, "invalid JSON at line %d, column %d: unexpected byte 0x%02x",
			  line, col, (unsigned char)*at);
}

/* Edits (insert, delete, replace, swap two neighbours) from a to b, or
 * more than `most` when it gives up early. Keys are short: the rows fit. */
static size_t json_distance(const char *a, const char *b, size_t most)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[3][40], *prev2 = row[0], *prev = row[1], *cur = row[2];

	if (la >= 40 || lb >= 40)
		return most + 1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t best = cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
			if (d < best)
				best = d;
		}
		if (best > most)
			return most + 1;
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

const char *ss_cfg_closest(const char *word, const char *const *known, size_t n)
{
	/* Close enough to be a slip: a third of the word, at most 3 edits. */
	size_t most = strlen(word) / 3, best;
	const char *pick = NULL;

	most = most < 1 ? 1 : most > 3 ? 3 : most;
	best = most + 1;
	for (size_t i = 0; i < n; i++) {
		size_t d = json_distance(word, known[i], most);
		if (d < best) {
			best = d;
			pick = known[i];
		}
	}
	return pick;
}
