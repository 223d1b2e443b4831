/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <bgalloc.h>

const char *bga_version(void)
{
	return BGA_VERSION_STRING;
}
