/* SPDX-License-Identifier: MIT */
#ifndef SS_CONFIG_TABLE_H
#define SS_CONFIG_TABLE_H

/* The settings, described once (config_table.c): each row is one setting
 * with its JSON key, its options, its type and range, the programs it is
 * for, where it lands in ss_config_t and its -h text. The command line
 * (config_cli.c), the JSON reader and ss_config_set (config_json.c), -h
 * (config_usage.c) and the option lists the man pages and completions are
 * checked against all read this table; a value is checked once, by
 * ss_cfg_value_set (config_value.c), whichever source gave it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config/config.h"

struct cJSON;
struct ss_cfg_value;

typedef enum {
	SS_SET_STRING,  /* text into a char array (off, size) */
	SS_SET_INT,     /* a decimal integer in [min, max] into an int or a long (off, size) */
	SS_SET_BOOL,    /* true or false into a bool (off); as an option, a flag for true */
	SS_SET_ENUM,    /* one of names[], its index into an ss_relay_mode_t (off) */
	SS_SET_PORT,    /* 1-65535 into a uint16_t (off) */
	SS_SET_FN,      /* the row's own setter, fn */
	SS_SET_HELP,    /* -h, --help: the command line stops there */
	SS_SET_VERSION, /* --version: the same */
	/* A key of shadowsocks-libev's these programs do not act on: a file
	 * may hold it, and it is skipped without a word. */
	SS_SET_UNUSED,
} ss_set_type_t;

/* Programs, as a mask of (1 << ss_prog_t). */
#define SS_PROGS(p) (1u << (p))
#define SS_PROGS_ALL                                                                               \
	(SS_PROGS(SS_PROG_LOCAL) | SS_PROGS(SS_PROG_SERVER) | SS_PROGS(SS_PROG_TUNNEL) |           \
	 SS_PROGS(SS_PROG_REDIR))
#define SS_PROGS_CLIENTS (SS_PROGS_ALL & ~SS_PROGS(SS_PROG_SERVER))
/* SS_PROGS_ALL is the four relays; ss-manager takes the rows that name it. */

enum {
	/* Its value is never quoted in a message. */
	SS_SET_SECRET = 1 << 0,
	/* An empty argument is refused: "empty <noun> for <label>". */
	SS_SET_ARG_NONEMPTY = 1 << 1,
	/* An empty value in a file is refused too: "<key> must not be empty". */
	SS_SET_FILE_NONEMPTY = 1 << 2,
	/* Taken only to be refused with a reason (fn): no option of ours, so
	 * neither -h nor the completions name it. */
	SS_SET_REFUSED = 1 << 3,
	/* --check, --print-url: asks about what would run, so a command line
	 * of only these still reads the default file. */
	SS_SET_QUERY = 1 << 4,
	/* ss_config_set reads the value as JSON text (an array, an object, a
	 * number or a bool), not as the string itself, as it does for every
	 * BOOL. */
	SS_SET_JSON_TEXT = 1 << 5,
	/* Outside its programs, a file's value is skipped without a word (a
	 * file shared with the other programs may carry it, as libev lets it)
	 * or kept (a later check has its say); without either it is refused
	 * with scope, as an option always is. */
	SS_SET_FILE_SKIPS = 1 << 6,
	SS_SET_FILE_KEEPS = 1 << 7,
	/* -h: a blank line before it. */
	SS_SET_GAP = 1 << 8,
	/* -h names the short option alone; the help text names the long. */
	SS_SET_HELP_SHORT = 1 << 9,
};

/* A row's own setter: the value as one source gave it. 0 or -EINVAL with
 * err, naming the setting as v->name does. */
typedef int (*ss_set_fn)(ss_config_t *cfg, const struct ss_cfg_value *v, char *err, size_t errlen);

typedef struct ss_setting {
	const char *key;  /* JSON key; NULL: the command line only */
	char opt;         /* short option; 0: none */
	const char *lopt; /* long option, without "--"; NULL: none */
	/* What the option takes, as -h names it ("<server_port>"); NULL: it
	 * takes none. */
	const char *arg;
	ss_set_type_t type;
	int field;     /* the ss_cfg_field_t the command line marks in cli_set; -1: none */
	size_t off;    /* where in ss_config_t */
	size_t size;   /* its size: the array of a STRING, the int or long of an INT */
	long min, max; /* INT */
	/* INT: what a value out of range is told it must be; NULL: "a number
	 * from <min> to <max>". With unit, a value above max is told "at most
	 * <max> <unit>" instead. */
	const char *expect;
	const char *unit;
	/* How messages name the setting whatever the source: "-p/server_port". */
	const char *label;
	const char *noun;         /* ARG_NONEMPTY, SECRET: what the value is ("address") */
	const char *const *names; /* ENUM: the values' names, indexed by value, NULL-ended */
	int flag_value;           /* ENUM: the value an option without argument stands for */
	ss_set_fn fn;             /* FN */
	unsigned progs;           /* the programs it is for */
	/* Outside them: printf format of the message, given its name and the
	 * program's ("%s is only for ss-tunnel"). */
	const char *scope;
	unsigned flags;
	/* -h: the programs that show it without [ ] (the settings they need) */
	unsigned required;
	const char *help;         /* -h lines, '\n' between them; NULL: not in -h */
	const char *help_server;  /* ss-server's (and ss-manager's) lines, where they differ */
	const char *help_manager; /* ss-manager's, where they differ from those */
	/* -h lines computed when printed, after help (-m's methods). */
	void (*help_more)(FILE *f, ss_prog_t prog);
} ss_setting_t;

/* The table, and its length: at most SS_CFG_SETTINGS_MAX rows, so that
 * the getopt tables built from it have a fixed size. */
#define SS_CFG_SETTINGS_MAX 64
extern const ss_setting_t ss_cfg_settings[];
extern const size_t ss_cfg_n_settings;

/* The row of a JSON key (UNUSED rows included), or NULL. */
const ss_setting_t *ss_cfg_setting_by_key(const char *key);

/* Whether s is for prog. */
static inline bool ss_cfg_setting_for(const ss_setting_t *s, ss_prog_t prog)
{
	return (s->progs & SS_PROGS(prog)) != 0;
}

/* -h (config_usage.c): lines computed when printed. */
void ss_cfg_usage_methods(FILE *f, ss_prog_t prog);
void ss_cfg_usage_default_file(FILE *f, ss_prog_t prog);

/* One value of a setting as a source gave it: an option's argument, or a
 * JSON value (a file's, or ss_config_set's). */
typedef struct ss_cfg_value {
	const ss_setting_t *set;
	const struct cJSON *json; /* the JSON value; NULL: an option's */
	const char *arg;          /* the option's argument; NULL: a flag, or JSON */
	char name[48];            /* as messages name it: "-t", "--mtu", "\"timeout\"" */
} ss_cfg_value_t;

/* The value of option s (arg NULL: it takes none), named as written:
 * --lopt when long_name, else -opt. */
void ss_cfg_value_arg(ss_cfg_value_t *v, const ss_setting_t *s, bool long_name, const char *arg);
/* The JSON value j of s's key. */
void ss_cfg_value_json(ss_cfg_value_t *v, const ss_setting_t *s, const struct cJSON *j);

/* The value as text: the argument, or a JSON string or integer (libev
 * takes either wherever it wants text); NULL otherwise. buf holds an
 * integer's digits. */
const char *ss_cfg_value_text(const ss_cfg_value_t *v, char *buf, size_t cap);
/* "<name> <what>, not <value>": the argument in '', the JSON as the file
 * spells it (ss_cfg_show_json). Returns -EINVAL. */
int ss_cfg_value_refuse(const ss_cfg_value_t *v, const char *what, char *err, size_t errlen);

/* A JSON value as messages show it: "abc" (cut at 64 bytes), 1.5, true,
 * an array, an object or null. */
const char *ss_cfg_show_json(const struct cJSON *j, char *buf, size_t cap);

/* Sets v in cfg by its row: the programs it is for, then its type and
 * range, or its setter. 0 (a file's value outside its programs may be
 * skipped) or -EINVAL with err. */
int ss_cfg_value_set(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
/* The STRING rule alone, for setters that check more first. */
int ss_cfg_value_set_string(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
/* The setters of the settings with structure of their own (config_json.c):
 * the server list and the users. */
int ss_cfg_set_server(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
int ss_cfg_set_server_url(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
int ss_cfg_set_servers(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
int ss_cfg_set_users(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
/* ss-manager's (config_manager.c): "port_password", "plugins", --executable. */
int ss_cfg_set_port_password(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
int ss_cfg_set_plugins(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
int ss_cfg_set_executable(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
/* The online configuration (config_online.c): "online_config", a URL or
 * {"url", "update_interval"}, and --online-config, a URL. */
int ss_cfg_set_online(ss_config_t *cfg, const ss_cfg_value_t *v, char *err, size_t errlen);
/* A "servers" entry's "plugin_mode", by the rule of the top-level one: 0,
 * or -EINVAL with err. */
int ss_cfg_mode_json(const struct cJSON *j, ss_relay_mode_t *mode, char *err, size_t errlen);

#endif
