#!/bin/bash -eu
# SPDX-License-Identifier: LGPL-2.1-or-later
# OSS-Fuzz's projects/bgalloc/build.sh (tests/fuzz/oss-fuzz/README.md): the
# dependencies' static archives into $WORK/deps where the image lacks them
# (ISA-L always: no distribution ships libisal.a; ck when the image's
# package has no ck.pc or libck.a), then the harnesses through
# tests/fuzz/oss-fuzz-build.sh, every dependency linked statically, with
# their .options files and seed corpora beside them in $OUT.  The
# dependencies are not code under test: built without the sanitizer and
# coverage flags.
ISAL_SRC=${ISAL_SRC:-$SRC/isa-l}
CK_SRC=${CK_SRC:-$SRC/ck}
DEPS=$WORK/deps
mkdir -p "$DEPS/lib" "$DEPS/include"
if [ ! -f "$DEPS/lib/libisal.a" ]; then
	(cd "$ISAL_SRC" && env -u CFLAGS -u CXXFLAGS make -f Makefile.unx -j"$(nproc)" lib >/dev/null &&
		mkdir -p "$DEPS/include/isa-l" && cp bin/isa-l.a "$DEPS/lib/libisal.a" &&
		cp include/*.h "$DEPS/include/isa-l/")
fi
if [ -n "${CK_FROM_SOURCE:-}" ] || ! pkg-config --exists ck || [ "$(cc -print-file-name=libck.a)" = libck.a ]; then
	if [ ! -f "$DEPS/lib/libck.a" ]; then
		(cd "$CK_SRC" && env -u CFLAGS -u CXXFLAGS CC=cc ./configure --prefix="$DEPS" >/dev/null &&
			env -u CFLAGS -u CXXFLAGS make -j"$(nproc)" >/dev/null && make install >/dev/null)
	fi
	export PKG_CONFIG_PATH=$DEPS/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
fi
BGA_DEPS_PREFIX=$DEPS tests/fuzz/oss-fuzz-build.sh
cp tests/fuzz/oss-fuzz/*.options "$OUT/"
