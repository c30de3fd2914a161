/* SPDX-License-Identifier: MIT */
/* An ss-local inside another program: SOCKS5 on 127.0.0.1:1080 by default.
 *   cc embed-local.c $(pkg-config --cflags --libs shadowsocks-c) -lev
 *   ./a.out '{"server": "203.0.113.1", "server_port": 8388, "password": "secret",
 *             "method": "chacha20-ietf-poly1305"}' [local_port] */
#include <ev.h>
#include <shadowsocks.h>
#include <signal.h>
#include <stdio.h>

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop, (void)revents;
	ss_instance_stop(w->data); /* the loop ends once it has stopped */
}

int main(int argc, char **argv)
{
	ss_config_t *cfg = NULL;
	ss_instance_t *inst = NULL;
	ev_signal sigint, sigterm;
	char err[256] = "";
	int rc = 1;

	signal(SIGPIPE, SIG_IGN); /* a peer gone mid-write is an error return */
	if (argc < 2 || ss_config_new(SS_PROG_LOCAL, &cfg) < 0 ||
	    ss_config_set(cfg, "local_port", argc > 2 ? argv[2] : "1080", err, sizeof(err)) < 0 ||
	    ss_config_load_json(cfg, argv[1], err, sizeof(err)) < 0 ||
	    ss_config_validate(cfg, err, sizeof(err)) < 0 ||
	    ss_instance_create(cfg, EV_DEFAULT, &inst, err, sizeof(err)) < 0) {
		fprintf(stderr, "embed-local: %s\n",
			argc < 2 ? "usage: embed-local JSON [port]" : err);
		goto out;
	}
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	sigint.data = sigterm.data = inst;
	ev_signal_start(EV_DEFAULT, &sigint);
	ev_signal_start(EV_DEFAULT, &sigterm);
	ev_unref(EV_DEFAULT), ev_unref(EV_DEFAULT); /* they alone do not keep it running */
	ev_run(EV_DEFAULT, 0);
	ss_stats_t st;
	ss_instance_stats(inst, &st);
	fprintf(stderr, "embed-local: %llu connections, %llu bytes up, %llu down\n",
		(unsigned long long)st.accepted, (unsigned long long)st.bytes_up,
		(unsigned long long)st.bytes_down);
	rc = 0;
out:
	ss_instance_destroy(inst);
	ss_config_free(cfg);
	return rc;
}
