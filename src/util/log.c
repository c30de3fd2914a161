/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Syslog's "daemon" facility, as shadowsocks-libev uses (LOG_DAEMON). */
#define LOG_FACILITY_DAEMON 3

typedef enum { SINK_STDERR, SINK_JOURNAL, SINK_SYSLOG } log_sink_kind_t;

/* The one piece of process-wide state: where log lines go. It is written at
 * start-up and when -f detaches, before the loop runs, and only read
 * otherwise (the syslog socket is reopened when the daemon behind it
 * restarted, from the one loop thread). */
static struct {
	int verbosity;
	log_sink_kind_t kind;
	char ident[32];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd; /* the syslog socket, or -1 */
	int pid;
	double interval;
} log_sink = {.fd = -1, .interval = SS_LOG_INTERVAL_DEFAULT};

/* Workers write from threads of their own: the syslog socket, reopened when
 * its daemon restarts, is taken under this lock (stdio locks stderr
 * itself). */
static pthread_mutex_t log_syslog_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int log_worker = -1;

/* Severities of RFC 5424 / sd-daemon(3), by our level. */
static const int log_severity[] = {3, 4, 5, 6, 7};

/* systemd connects stderr to the journal and says so in JOURNAL_STREAM
 * ("device:inode" of that stream), so that a descendant whose stderr went
 * elsewhere does not take it for the journal. */
static bool log_stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (!v || sscanf(v, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	return fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

static void log_syslog_open(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	if (log_sink.fd >= 0)
		close(log_sink.fd);
	log_sink.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (log_sink.fd < 0)
		return;
	memcpy(sun.sun_path, log_sink.path, sizeof(sun.sun_path));
	if (connect(log_sink.fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(log_sink.fd);
		log_sink.fd = -1;
	}
}

/* One RFC 3164 datagram, as syslog(3) writes it to /dev/log. Never blocks
 * the loop: a line the syslog daemon has no room for is lost. */
static void log_syslog_send(ss_log_level_t level, const char *line)
{
	char msg[1200], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", localtime_r(&now, &tm));
	n = snprintf(msg, sizeof(msg), "<%d>%s %s[%d]: %s",
		     LOG_FACILITY_DAEMON * 8 + log_severity[level], stamp, log_sink.ident,
		     log_sink.pid, line);
	if (n >= (int)sizeof(msg))
		n = (int)sizeof(msg) - 1;
	pthread_mutex_lock(&log_syslog_lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (log_sink.fd < 0)
			log_syslog_open();
		if (log_sink.fd < 0)
			break;
		if (send(log_sink.fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0 ||
		    errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		/* The daemon restarted (a new socket at the path): reconnect. */
		close(log_sink.fd);
		log_sink.fd = -1;
	}
	pthread_mutex_unlock(&log_syslog_lock);
}

void ss_log_to_syslog(void)
{
	log_sink.kind = SINK_SYSLOG;
	log_sink.pid = (int)getpid();
	log_syslog_open();
}

void ss_log_setup(const char *ident, int verbosity, bool use_syslog)
{
	const char *path = getenv("SS_SYSLOG_SOCKET");
	const char *iv = getenv("SS_LOG_INTERVAL");
	bool too_long = path && strlen(path) >= sizeof(log_sink.path);
	char *end;

	log_sink.verbosity = verbosity;
	snprintf(log_sink.ident, sizeof(log_sink.ident), "%s", ident);
	if (!path || !*path || too_long)
		path = NULL;
	snprintf(log_sink.path, sizeof(log_sink.path), "%s", path ? path : "/dev/log");
	log_sink.kind = log_stderr_is_journal() ? SINK_JOURNAL : SINK_STDERR;
	if (use_syslog)
		ss_log_to_syslog();
	if (too_long)
		ss_warn("SS_SYSLOG_SOCKET is longer than a socket path can be: using %s",
			log_sink.path);
	log_sink.interval = SS_LOG_INTERVAL_DEFAULT;
	if (iv) {
		double v = strtod(iv, &end);
		if (end != iv && !*end && isfinite(v) && v > 0 && v <= 86400)
			log_sink.interval = v;
		else
			ss_warn("SS_LOG_INTERVAL='%s' is not a number of seconds in (0, 86400]: "
				"using %d",
				iv, SS_LOG_INTERVAL_DEFAULT);
	}
}

double ss_log_interval(void)
{
	return log_sink.interval;
}

const char *ss_log_stderr_prefix(ss_log_level_t level)
{
	static const char *const prefixes[] = {"<3>", "<4>", "<5>", "<6>", "<7>"};

	return log_stderr_is_journal() ? prefixes[level] : "";
}

void ss_log_set_worker(int id)
{
	log_worker = id;
}

bool ss_log_enabled(ss_log_level_t level)
{
	return (int)level <= (int)SS_LOG_NOTICE + log_sink.verbosity;
}

void ss_log(ss_log_level_t level, const char *fmt, ...)
{
	static const char *const names[] = {"ERROR", "WARN", "INFO", "INFO", "DEBUG"};
	char line[1024];
	size_t mark = 0;
	va_list ap;

	if (!ss_log_enabled(level))
		return;
	if (log_worker >= 0 && log_sink.verbosity > 0)
		mark = (size_t)snprintf(line, sizeof(line), "[w%d] ", log_worker);
	va_start(ap, fmt);
	vsnprintf(line + mark, sizeof(line) - mark, fmt, ap);
	va_end(ap);
	switch (log_sink.kind) {
	case SINK_SYSLOG:
		log_syslog_send(level, line);
		return;
	case SINK_JOURNAL:
		/* The journal stamps the time itself and reads the priority
		 * from the prefix (sd-daemon(3)). */
		fprintf(stderr, "<%d>%s\n", log_severity[level], line);
		return;
	case SINK_STDERR:
		break;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	fprintf(stderr, " %s %s: %s\n", stamp, names[level], line);
}
