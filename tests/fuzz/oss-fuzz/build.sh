#!/bin/bash -eu
# SPDX-License-Identifier: LGPL-2.1-or-later
# OSS-Fuzz's projects/bgalloc/build.sh (tests/fuzz/oss-fuzz/README.md): ISA-L
# built static into $WORK/deps, then the harnesses through
# tests/fuzz/oss-fuzz-build.sh, every dependency linked statically, with
# their .options files and seed corpora beside them in $OUT.
ISAL_SRC=${ISAL_SRC:-$SRC/isa-l}
DEPS=$WORK/deps
if [ ! -f "$DEPS/lib/libisal.a" ]; then
	# ISA-L is a dependency, not code under test: no sanitizer or coverage flags.
	(cd "$ISAL_SRC" && env -u CFLAGS -u CXXFLAGS make -f Makefile.unx -j"$(nproc)" lib >/dev/null &&
		mkdir -p "$DEPS/lib" "$DEPS/include/isa-l" && cp bin/isa-l.a "$DEPS/lib/libisal.a" &&
		cp include/*.h "$DEPS/include/isa-l/")
fi
BGA_DEPS_PREFIX=$DEPS tests/fuzz/oss-fuzz-build.sh
cp tests/fuzz/oss-fuzz/*.options "$OUT/"
