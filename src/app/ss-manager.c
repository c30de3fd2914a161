/* SPDX-License-Identifier: MIT */
#include "shadowsocks.h"

int main(int argc, char **argv)
{
	return ss_program_main(SS_PROG_MANAGER, argc, argv);
}
