/* SPDX-License-Identifier: MIT */
#ifndef SS_UTIL_QR_H
#define SS_UTIL_QR_H

#include <stdbool.h>
#include <stdio.h>

/* A QR code of text as lines of terminal text, for a phone's camera: two
 * rows of modules per line in Unicode half blocks (U+2580, U+2584, U+2588),
 * the light modules and a quiet zone of four drawn as the ink, the dark
 * ones left blank; on a terminal with light text on a dark background that
 * is dark on light, as a reader wants. color adds ANSI colours that make
 * it so on any terminal (white on black). Byte mode, error correction
 * level M, by libqrencode. 0, -ENOTSUP when built without libqrencode,
 * -EINVAL when text does not fit in a QR code, or -ENOMEM. */
int ss_qr_write(const char *text, bool color, FILE *out);

#endif
