/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_RESULT_H
#define SS_UTIL_RESULT_H

/* One result for parsers and I/O steps. A value never has two meanings:
 * SS_AGAIN is "incomplete, call again with more bytes", never an error. */
typedef enum {
	SS_ERR = -1,
	SS_OK = 0,
	SS_AGAIN = 1,
} ss_result_t;

#define SS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
