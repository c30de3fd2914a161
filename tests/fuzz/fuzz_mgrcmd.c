/* SPDX-License-Identifier: MIT */
/* libFuzzer target: ss-manager's commands (ss_mgr_cmd_parse), raw. The
 * input is one datagram. A command that parses has a verb; an add has a
 * port, a password, key or users, and fields that are all printable text,
 * which written back as an add parse to the same port and fields; a remove
 * has a port; add_user and remove_user a port and a user with a name;
 * stat_users nothing but maybe a port. One that does not parse
 * leaves nothing allocated and an error of one line. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto/mgrcmd.h"

static void check_fields(const cJSON *fields)
{
	FZ_CHECK(cJSON_IsObject(fields));
	FZ_CHECK(cJSON_GetObjectItemCaseSensitive(fields, "password") ||
		 cJSON_GetObjectItemCaseSensitive(fields, "key") ||
		 cJSON_GetObjectItemCaseSensitive(fields, "users"));
	for (const cJSON *f = fields->child; f; f = f->next) {
		FZ_CHECK(cJSON_IsString(f));
		for (const char *p = f->valuestring; *p; p++)
			FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
	}
}

/* The add written back, as the state file keeps it, parses the same. */
static void check_round_trip(const ss_mgr_cmd_t *cmd)
{
	cJSON *o = cJSON_Duplicate(cmd->fields, true);
	ss_mgr_cmd_t again;
	char *text, *line, err[256];

	FZ_CHECK(o && cJSON_AddNumberToObject(o, "server_port", cmd->port));
	text = cJSON_PrintUnformatted(o);
	FZ_CHECK(text);
	line = malloc(strlen(text) + 6);
	FZ_CHECK(line);
	strcpy(line, "add: ");
	strcat(line, text);
	FZ_CHECK(ss_mgr_cmd_parse(line, strlen(line), &again, err, sizeof(err)) == 0);
	FZ_CHECK(again.verb == SS_MGR_ADD && again.port == cmd->port);
	FZ_CHECK(cJSON_Compare(again.fields, cmd->fields, true));
	ss_mgr_cmd_free(&again);
	free(line);
	free(text);
	cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ss_mgr_cmd_t cmd;
	char err[256] = "";

	if (ss_mgr_cmd_parse((const char *)data, size, &cmd, err, sizeof(err)) < 0) {
		FZ_CHECK(cmd.fields == NULL && cmd.user == NULL);
		FZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		return 0;
	}
	switch (cmd.verb) {
	case SS_MGR_ADD:
		FZ_CHECK(cmd.port != 0);
		check_fields(cmd.fields);
		check_round_trip(&cmd);
		break;
	case SS_MGR_REMOVE:
		FZ_CHECK(cmd.port != 0 && cmd.fields == NULL);
		break;
	case SS_MGR_ADD_USER:
	case SS_MGR_REMOVE_USER: {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(cmd.user, "name");
		FZ_CHECK(cmd.port != 0 && cmd.fields == NULL && cJSON_IsString(name) &&
			 name->valuestring[0]);
		FZ_CHECK(cmd.verb == SS_MGR_REMOVE_USER ||
			 cJSON_GetObjectItemCaseSensitive(cmd.user, "password") ||
			 cJSON_GetObjectItemCaseSensitive(cmd.user, "key"));
		break;
	}
	case SS_MGR_STAT_USERS:
		FZ_CHECK(cmd.fields == NULL && cmd.user == NULL);
		break;
	case SS_MGR_LIST:
	case SS_MGR_PING:
	case SS_MGR_STAT:
		FZ_CHECK(cmd.fields == NULL && cmd.user == NULL);
		break;
	default:
		FZ_CHECK(0);
	}
	ss_mgr_cmd_free(&cmd);
	return 0;
}
