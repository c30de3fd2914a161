/* SPDX-License-Identifier: MIT */
/* The library's entry points (include/shadowsocks.h): a configuration built
 * through the opaque handle, and an instance's life on a loop of its own.
 * config/config.h is included only to look at what the calls set. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "shadowsocks.h"
#include "testutil.h"

static char err[512];

static ss_config_t *new_cfg(ss_prog_t prog)
{
	ss_config_t *cfg = NULL;

	assert_int_equal(ss_config_new(prog, &cfg), 0);
	assert_non_null(cfg);
	return cfg;
}

static void set_ok(ss_config_t *cfg, const char *key, const char *value)
{
	int rc = ss_config_set(cfg, key, value, err, sizeof(err));

	if (rc != 0)
		fail_msg("set %s=%s: %d %s", key, value, rc, err);
}

static void test_new_refuses_unknown_program(void **state)
{
	ss_config_t *cfg = (ss_config_t *)&cfg;
	(void)state;

	assert_int_equal(ss_config_new((ss_prog_t)7, &cfg), -EINVAL);
	assert_null(cfg);
	ss_config_free(NULL);
}

static void test_set_reads_each_key_as_its_type(void **state)
{
	ss_config_t *cfg = new_cfg(SS_PROG_LOCAL);
	(void)state;

	set_ok(cfg, "server", "192.0.2.1");
	set_ok(cfg, "server_port", "8388");
	set_ok(cfg, "local_port", "1080");
	set_ok(cfg, "fast_open", "true");
	set_ok(cfg, "verbose", "2");
	set_ok(cfg, "mode", "tcp_and_udp");
	set_ok(cfg, "password", "true"); /* a string key takes any text */
	assert_int_equal(cfg->n_servers, 1);
	assert_string_equal(cfg->servers[0].host, "192.0.2.1");
	assert_int_equal(cfg->server_port, 8388);
	assert_int_equal(cfg->local_port, 1080);
	assert_true(cfg->fast_open);
	assert_int_equal(cfg->verbose, 2);
	assert_int_equal(cfg->mode, SS_MODE_TCP_AND_UDP);
	assert_string_equal(cfg->password, "true");

	/* A list of servers as JSON text; "server" replaces it with one. */
	set_ok(cfg, "servers",
	       "[{\"server\": \"192.0.2.2\", \"server_port\": 1}, {\"server\": \"192.0.2.3\"}]");
	assert_int_equal(cfg->n_servers, 2);
	assert_string_equal(cfg->servers[1].host, "192.0.2.3");
	set_ok(cfg, "server", "192.0.2.4");
	assert_int_equal(cfg->n_servers, 1);
	assert_string_equal(cfg->servers[0].host, "192.0.2.4");
	ss_config_free(cfg);
}

static void test_set_rejects_with_one_line(void **state)
{
	ss_config_t *cfg = new_cfg(SS_PROG_SERVER);
	(void)state;

	assert_int_equal(ss_config_set(cfg, "no_such_key", "1", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no_such_key"));
	assert_int_equal(ss_config_set(cfg, "fast_open", "yes", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "true or false"));
	assert_int_equal(ss_config_set(cfg, "server_port", "8388\n1", err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\n'));
	assert_int_equal(ss_config_set(cfg, "method", "rot13", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rot13"));
	assert_int_equal(ss_config_set(cfg, "mode", NULL, err, sizeof(err)), -EINVAL);
	/* Text that is not JSON where JSON is wanted may hold a secret: it is
	 * not quoted back. */
	assert_int_equal(ss_config_set(cfg, "users", "[{\"name\": \"a\", \"password\": \"S3CR3T",
				       err, sizeof(err)),
			 -EINVAL);
	assert_null(strstr(err, "S3CR3T"));
	/* No room for a message is fine. */
	assert_int_equal(ss_config_set(cfg, "timeout", "-1", NULL, 0), -EINVAL);
	ss_config_free(cfg);
}

static void test_validate_once_then_frozen(void **state)
{
	ss_config_t *cfg = new_cfg(SS_PROG_LOCAL);
	(void)state;

	assert_int_equal(ss_config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "missing server address"));
	assert_int_equal(ss_config_load_json(cfg,
					     "{\"server\": \"127.0.0.1\", \"server_port\": 8388, "
					     "\"password\": \"pw\", \"method\": \"aes-256-gcm\"}",
					     err, sizeof(err)),
			 0);
	set_ok(cfg, "local_port", "1080");
	assert_int_equal(ss_config_validate(cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg->timeout, 60);                             /* a default filled in */
	assert_string_equal(cfg->password, "");                         /* the text is gone */
	assert_int_equal(ss_config_validate(cfg, err, sizeof(err)), 0); /* again: no-op */
	assert_int_equal(ss_config_set(cfg, "timeout", "5", err, sizeof(err)), -EBUSY);
	assert_int_equal(ss_config_load_json(cfg, "{}", err, sizeof(err)), -EBUSY);
	ss_config_free(cfg);
}

static void test_load_args_then_json(void **state)
{
	char *argv[] = {"embedder", "-s", "127.0.0.1", "-p",   "8388",
			"-k",       "pw", "-l",        "1080", NULL};
	char *help[] = {"embedder", "-h", NULL};
	char *bad[] = {"embedder", "--no-such-flag", NULL};
	ss_config_t *cfg = new_cfg(SS_PROG_LOCAL);
	(void)state;

	assert_int_equal(ss_config_load_args(cfg, 2, help, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "for the programs"));
	assert_int_equal(ss_config_load_args(cfg, 2, bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--no-such-flag"));
	assert_int_equal(ss_config_load_args(cfg, 0, argv, err, sizeof(err)), -EINVAL);
	assert_int_equal(ss_config_load_args(cfg, 9, argv, err, sizeof(err)), 0);
	/* As in the programs, the flags beat the file's keys. */
	assert_int_equal(
	    ss_config_load_json(cfg, "{\"server_port\": 9999, \"timeout\": 7}", err, sizeof(err)),
	    0);
	assert_int_equal(cfg->server_port, 8388);
	assert_int_equal(cfg->timeout, 7);
	assert_int_equal(ss_config_load_json(cfg, "{\"timeout\": ", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "invalid JSON"));
	assert_int_equal(ss_config_validate(cfg, err, sizeof(err)), 0);
	ss_config_free(cfg);
}

typedef struct {
	ss_instance_event_t seen[4];
	int n;
} events_t;

static void on_event(ss_instance_t *inst, ss_instance_event_t ev, const char *msg, void *arg)
{
	events_t *e = arg;
	(void)msg;

	if (e->n < 4)
		e->seen[e->n++] = ev;
	if (ev == SS_INSTANCE_READY)
		ss_instance_stop(inst);
}

static void test_instance_life(void **state)
{
	ss_config_t *cfg = new_cfg(SS_PROG_SERVER);
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	ss_instance_t *inst = (ss_instance_t *)&inst;
	events_t e = {.n = 0};
	ss_stats_t st;
	char port[8];
	(void)state;

	assert_non_null(loop);
	snprintf(port, sizeof(port), "%d", free_loopback_port());
	set_ok(cfg, "server", "127.0.0.1");
	set_ok(cfg, "server_port", port);
	set_ok(cfg, "password", "pw");
	/* Not validated: no keys to run on. */
	assert_int_equal(ss_instance_create(cfg, loop, &inst, err, sizeof(err)), -EINVAL);
	assert_null(inst);
	assert_non_null(strstr(err, "not validated"));

	assert_int_equal(ss_config_validate(cfg, err, sizeof(err)), 0);
	assert_int_equal(ss_instance_create(cfg, loop, &inst, err, sizeof(err)), 0);
	ss_instance_set_cb(inst, on_event, &e);
	ev_run(loop, 0); /* READY, which stops it, then STOPPED; then dry */
	assert_int_equal(e.n, 2);
	assert_int_equal(e.seen[0], SS_INSTANCE_READY);
	assert_int_equal(e.seen[1], SS_INSTANCE_STOPPED);
	ss_instance_stats(inst, &st);
	assert_int_equal(st.accepted, 0);
	assert_int_equal(st.active, 0);
	ss_instance_stop(inst); /* twice is fine */
	ss_instance_destroy(inst);
	ss_instance_destroy(NULL);
	ev_loop_destroy(loop);
	ss_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_refuses_unknown_program),
	    cmocka_unit_test(test_set_reads_each_key_as_its_type),
	    cmocka_unit_test(test_set_rejects_with_one_line),
	    cmocka_unit_test(test_validate_once_then_frozen),
	    cmocka_unit_test(test_load_args_then_json),
	    cmocka_unit_test(test_instance_life),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
