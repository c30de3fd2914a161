/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_LOG_H
#define SS_UTIL_LOG_H

#include <stdbool.h>

/* Levels: a line is printed when its level <= the chosen verbosity.
 * ERROR and WARN always print; INFO at -v, DEBUG at -vv. */
typedef enum {
	SS_LOG_ERROR = 0,
	SS_LOG_WARN = 1,
	SS_LOG_NOTICE = 2, /* start-up lines, always printed */
	SS_LOG_INFO = 3,
	SS_LOG_DEBUG = 4,
} ss_log_level_t;

/* Process-wide log sink, set once by the program before the loop starts.
 * verbosity 0 prints ERROR..NOTICE, 1 adds INFO, 2 adds DEBUG. Lines go to
 * stderr with a time stamp; to stderr with sd-daemon(3) priority prefixes
 * and no time stamp when JOURNAL_STREAM names stderr (systemd's journal);
 * or, with use_syslog, to syslog (facility daemon) as RFC 3164 datagrams on
 * /dev/log, or on the socket SS_SYSLOG_SOCKET names. SS_LOG_INTERVAL is
 * read here too (ss_log_interval); a bad value is warned about. */
void ss_log_setup(const char *ident, int verbosity, bool use_syslog);
/* From now on, lines go to syslog: -f has sent stderr to /dev/null. */
void ss_log_to_syslog(void);
/* Seconds between the summaries of rate-limited lines (util/ratelog.h):
 * SS_LOG_INTERVAL, or SS_LOG_INTERVAL_DEFAULT. */
#define SS_LOG_INTERVAL_DEFAULT 60
double ss_log_interval(void);
/* For the lines a program writes to stderr itself before (or instead of)
 * setting up the log, such as a configuration error: the sd-daemon(3)
 * priority prefix when stderr is the journal, "" otherwise. */
const char *ss_log_stderr_prefix(ss_log_level_t level);
bool ss_log_enabled(ss_log_level_t level);
/* At -v and above, the calling thread's lines start with "[w<id>] "
 * (--workers: which worker wrote them); a negative id: no mark, as with
 * one loop. */
void ss_log_set_worker(int id);
void ss_log(ss_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ss_err(...) ss_log(SS_LOG_ERROR, __VA_ARGS__)
#define ss_warn(...) ss_log(SS_LOG_WARN, __VA_ARGS__)
#define ss_notice(...) ss_log(SS_LOG_NOTICE, __VA_ARGS__)
/* The levels that are usually off test first, so a silent line costs no
 * formatting of its arguments (peer addresses on every close). */
#define ss_log_if(level, ...)                                                                      \
	do {                                                                                       \
		if (ss_log_enabled(level))                                                         \
			ss_log(level, __VA_ARGS__);                                                \
	} while (0)
#define ss_info(...) ss_log_if(SS_LOG_INFO, __VA_ARGS__)
#define ss_debug(...) ss_log_if(SS_LOG_DEBUG, __VA_ARGS__)

#endif
