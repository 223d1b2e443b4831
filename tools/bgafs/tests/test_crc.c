/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bgafs's crc32c (ISA-L's) is the standard CRC-32C of every image written
 * before it (the check value of "123456789"), also when fed in pieces. */
#include <stdio.h>
#include "bgafs.h"

int main(void)
{
	uint32_t whole = crc32c(0, "123456789", 9), parts = crc32c(crc32c(0, "1234", 4), "56789", 5);
	if (whole != 0xe3069283u || parts != whole) {
		fprintf(stderr, "crc32c(\"123456789\") = %08x, in two pieces %08x; want e3069283\n", whole, parts);
		return 1;
	}
	return 0;
}
