/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AFL++ persistent-mode driver around a libFuzzer-style harness: built with
 * afl-clang-fast, one process runs many inputs through
 * LLVMFuzzerTestOneInput() from AFL's shared-memory test case buffer.
 */
#include <unistd.h>

#include "fuzz_input.h"

#ifndef __AFL_FUZZ_TESTCASE_LEN
#error "build this file with afl-clang-fast"
#endif

__AFL_FUZZ_INIT();

int main(void)
{
	const unsigned char *buf;

	__AFL_INIT();
	buf = __AFL_FUZZ_TESTCASE_BUF;
	while (__AFL_LOOP(10000))
		LLVMFuzzerTestOneInput(buf, (size_t)__AFL_FUZZ_TESTCASE_LEN);
	return 0;
}
