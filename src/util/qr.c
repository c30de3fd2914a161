/* SPDX-License-Identifier: MIT */
#include "util/qr.h"

#include <errno.h>

#ifdef SS_HAVE_QRENCODE
#include <qrencode.h>

#define QR_QUIET 4 /* modules of light margin on each side */

/* Whether the module at (x, y) of the code with its margin is light. */
static bool qr_light(const QRcode *q, int x, int y)
{
	x -= QR_QUIET;
	y -= QR_QUIET;
	if (x < 0 || y < 0 || x >= q->width || y >= q->width)
		return true;
	return !(q->data[y * q->width + x] & 1);
}

int ss_qr_write(const char *text, bool color, FILE *out)
{
	static const char *const cell[4] = {" ", "\xe2\x96\x84", "\xe2\x96\x80", "\xe2\x96\x88"};
	QRcode *q;
	int side;

	errno = 0;
	q = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M);
	if (!q)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	side = q->width + 2 * QR_QUIET;
	for (int y = 0; y < side; y += 2) {
		if (color)
			fputs("\033[97;40m", out);
		for (int x = 0; x < side; x++)
			fputs(cell[qr_light(q, x, y) << 1 | qr_light(q, x, y + 1)], out);
		fputs(color ? "\033[0m\n" : "\n", out);
	}
	QRcode_free(q);
	return 0;
}

#else

int ss_qr_write(const char *text, bool color, FILE *out)
{
	(void)text;
	(void)color;
	(void)out;
	return -ENOTSUP;
}

#endif
