/* SPDX-License-Identifier: MIT */
#include "codec/secret.h"

#include "crypto/primitives.h"

void ss_secret_random(void *buf, size_t len)
{
	ss_random_bytes(buf, len);
}

void ss_secret_wipe(void *buf, size_t len)
{
	ss_wipe(buf, len);
}
