#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An OSS-Fuzz build script (what projects/bgalloc/build.sh would call):
# builds the library with $CC and $CFLAGS, and each harness in tests/fuzz/
# linked with $LIB_FUZZING_ENGINE into $OUT, with its seed corpus as
# $OUT/<harness>_seed_corpus.zip.  Needs the Debian packages of
# scripts/deps.sh (ck, liburcu-bp, isa-l, cmake); no network.
#
# ck, liburcu-bp and ISA-L are linked statically (their .a archives), so
# that the fuzzers run where none of them is installed, as on OSS-Fuzz's
# runners; a fuzzer that still needs one of their shared objects fails the
# build.  BGA_DEPS_PREFIX names a prefix holding archives the system lacks
# (Debian and Ubuntu ship no libisal.a: tests/fuzz/oss-fuzz/build.sh builds
# one there).  BGA_FUZZ_DYNAMIC=1 links them dynamically instead.
#
#   CC=clang CFLAGS='-fsanitize=address,fuzzer-no-link' \
#   LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/x tests/fuzz/oss-fuzz-build.sh
#
# As scripts/fuzz.sh does for make fuzz: the reference model
# (tests/support/refmodel.c) is compiled without the coverage flags, and bga_check
# is left out of the coverage instrumentation (tests/fuzz/coverage-ignore.txt):
# they are the oracle, not the code under test.  The sanitizers stay on
# for both.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CC:?}" "${CFLAGS=}" "${LIB_FUZZING_ENGINE:?}" "${OUT:?}"
ROOT=$PWD
# intermediates in $WORK (OSS-Fuzz sets it), not in $OUT, which ships
WORK=${WORK:-${TMPDIR:-/tmp}}/bgalloc-oss-fuzz
mkdir -p "$OUT" "$WORK"
cov="-fsanitize-coverage-ignorelist=$ROOT/tests/fuzz/coverage-ignore.txt"
ign="-fsanitize-ignorelist=$ROOT/tests/fuzz/sanitize-ignore.txt"
case " $CFLAGS " in *-fsanitize=*address*|*-fsanitize=*undefined*|*-fsanitize=*memory*) ;; *) ign= ;; esac

prefix=${BGA_DEPS_PREFIX:-}
if [ -n "${BGA_FUZZ_DYNAMIC:-}" ]; then
	libs="$(pkg-config --libs ck liburcu-bp) -lisal -lpthread"
else
	# -l:libX.a: the archive even where the shared object sits beside it
	libs="${prefix:+-L$prefix/lib }-l:libck.a -l:liburcu-bp.a -l:libisal.a -lpthread"
	for a in libck.a liburcu-bp.a libisal.a; do
		if [ ! -f "${prefix:-/nonexistent}/lib/$a" ] && [ "$($CC -print-file-name=$a)" = $a ]; then
			echo "oss-fuzz-build: no $a (Debian ships no libisal.a: tests/fuzz/oss-fuzz/build.sh builds one;" \
				"BGA_DEPS_PREFIX names its prefix; BGA_FUZZ_DYNAMIC=1 links the shared objects)" >&2
			exit 1
		fi
	done
fi
cmake -S "$ROOT" -B "$WORK/lib" -DCMAKE_BUILD_TYPE=Debug -DBGA_DEBUG=ON -DBGA_EXAMPLES=OFF ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} \
	-DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS $ign $cov -g -O1" >/dev/null
cmake --build "$WORK/lib" -j "$(nproc)" --target bgalloc_static >/dev/null

# The model without the coverage flags (fuzzer-no-link, trace-pc-guard...).
model_flags=$(sed -E 's/fuzzer-no-link,//g; s/,fuzzer-no-link//g; s/-fsanitize=fuzzer-no-link//g; s/-fsanitize-coverage=[^ ]*//g' <<<"$CFLAGS")
for m in tests/support/refmodel*.c; do
	# shellcheck disable=SC2086
	$CC $model_flags $ign -g -O1 -std=gnu11 -DBGA_DEBUG=1 -Iinclude -Itests/support -c "$m" -o "$WORK/$(basename "$m" .c).o"
done

incs="-Iinclude -Itests/support${prefix:+ -I$prefix/include}"
for l in base prim core alloc persist inspect; do incs+=" -Ilib/$l"; done
for h in fuzz_ops fuzz_mt fuzz_load; do
	objs=()
	# a harness is $h.c and any ${h}_*.c beside it
	for src in tests/fuzz/$h.c $(compgen -G "tests/fuzz/${h}_*.c" || true); do
		# shellcheck disable=SC2086
		$CC $CFLAGS $ign -g -O1 -std=gnu11 -DBGA_DEBUG=1 $incs -c "$src" -o "$WORK/$(basename "$src" .c).o"
		objs+=("$WORK/$(basename "$src" .c).o")
	done
	# shellcheck disable=SC2086
	$CC $CFLAGS "${objs[@]}" "$WORK"/refmodel*.o "$WORK/lib/libbgalloc.a" $LIB_FUZZING_ENGINE $libs -o "$OUT/$h"
	if [ -z "${BGA_FUZZ_DYNAMIC:-}" ] && ldd "$OUT/$h" 2>/dev/null | grep -E 'lib(ck|urcu|isal)'; then
		echo "oss-fuzz-build: $OUT/$h still needs the shared objects above" >&2
		exit 1
	fi
	rm -f "$OUT/${h}_seed_corpus.zip"
	(cd tests/fuzz/corpus/$h && zip -q -r "$OUT/${h}_seed_corpus.zip" .)
done
echo "oss-fuzz-build: fuzz_ops fuzz_mt fuzz_load in $OUT"
