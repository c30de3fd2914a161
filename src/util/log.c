#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

/* The one piece of process-wide state: where log lines go. It is written once
 * at start-up, before any loop runs, and only read afterwards. */
static struct {
	int verbosity;
	bool syslog;
} log_sink = {.verbosity = 0};

void ss_log_setup(const char *ident, int verbosity, bool use_syslog)
{
	log_sink.verbosity = verbosity;
	log_sink.syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

bool ss_log_enabled(ss_log_level_t level)
{
	return (int)level <= (int)SS_LOG_NOTICE + log_sink.verbosity;
}

void ss_log(ss_log_level_t level, const char *fmt, ...)
{
	static const char *const names[] = {"ERROR", "WARN", "INFO", "INFO", "DEBUG"};
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};
	char line[1024];
	va_list ap;

	if (!ss_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_sink.syslog) {
		syslog(prio[level], "%s", line);
		return;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	fprintf(stderr, " %s %s: %s\n", stamp, names[level], line);
}
