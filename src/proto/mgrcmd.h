/* SPDX-License-Identifier: MIT */
#ifndef SS_PROTO_MGRCMD_H
#define SS_PROTO_MGRCMD_H

/* The commands of shadowsocks-libev's manager protocol, one per datagram:
 *
 *   add: {"server_port": 8388, "password": "pw", "method": "...", ...}
 *   remove: {"server_port": 8388}
 *   list
 *   ping
 *
 * with two of our own, for a port of several users ("users", as ss-server
 * takes them: [{"name": ..., "password": ...}, ...]):
 *
 *   add_user: {"server_port": 8388, "name": "alice", "password": "..."}
 *   remove_user: {"server_port": 8388, "name": "alice"}
 *
 * and one more, answered with each port's figures per user:
 *
 *   stat_users
 *   stat_users: {"server_port": 8388}
 *
 * and "stat: {...}", which an ss-server sends its manager. The text comes
 * from the network: parsing never trusts its length, its bytes or its
 * JSON, and an error names no value of a secret field. */

#include <stddef.h>
#include <stdint.h>

struct cJSON;

typedef enum {
	SS_MGR_ADD,
	SS_MGR_REMOVE,
	SS_MGR_LIST,
	SS_MGR_PING,
	SS_MGR_STAT,
	SS_MGR_ADD_USER,
	SS_MGR_REMOVE_USER,
	SS_MGR_STAT_USERS,
} ss_mgr_verb_t;

/* The largest command read: a datagram's most. */
#define SS_MGR_CMD_MAX 65507

typedef struct ss_mgr_cmd {
	ss_mgr_verb_t verb;
	uint16_t port; /* ADD, REMOVE, the users', STAT_USERS (0: every port) */
	/* ADD: the port's settings a command may give, as a JSON object whose
	 * values are the text ss_config_set takes ("true", "300", the string),
	 * keys in a fixed order; owned by the command (free it
	 * with ss_mgr_cmd_free); "users" is the text of a JSON array of
	 * user objects (name, password or key, method), checked. NULL
	 * otherwise. */
	struct cJSON *fields;
	/* ADD_USER: the user's object (name, password or key, method), owned
	 * by the command; REMOVE_USER: one holding its name alone. */
	struct cJSON *user;
} ss_mgr_cmd_t;

/* Parses one datagram of len bytes (no NUL needed; trailing white space
 * and NULs are dropped). 0 with *cmd filled, or -EINVAL with err holding
 * one line. */
int ss_mgr_cmd_parse(const char *buf, size_t len, ss_mgr_cmd_t *cmd, char *err, size_t errlen);

/* A port's object (an add's, or an entry of the manager's state file) into
 * its port and fields, as ss_mgr_cmd_parse gives them. Keys it does not
 * take are ignored, as libev ignores them. 0 or -EINVAL with err. */
int ss_mgr_port_parse(const struct cJSON *obj, uint16_t *port, struct cJSON **fields, char *err,
		      size_t errlen);

/* Frees what cmd owns; cmd may be parsed into again. */
void ss_mgr_cmd_free(ss_mgr_cmd_t *cmd);

#endif
