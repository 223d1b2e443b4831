#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the build into a private prefix and check it as an outside user
# would, with no LD_LIBRARY_PATH anywhere:
#  - the embedding example builds and runs with pkg-config (shared, built
#    with the README's command and rpath flag, and static with no
#    libbgalloc.so.0 needed) and with find_package(bgalloc) (shared and
#    static); pkg-config --cflags is the include directory alone; the
#    CMake package holds no absolute library path;
#  - BGA_VERSION_*, bga_version(), pkg-config and the CMake package agree;
#  - the ported Ceph and ext4 allocator suites build and pass against the
#    installed header and library alone;
#  - bga_strerror(-ENOENT) names the error;
#  - a man(3) page for every exported and every BGA_EXTERN function, with
#    RETURN VALUE, ERRORS, ATTRIBUTES and VERSIONS, the structs' 3type
#    pages, bgalloc(7) with its persistence guide, man(1) pages for the
#    programs, all found by man(1) under the prefix;
#  - the installed programs run from the prefix: --help on stdout with
#    status 0, --version with the library's version.
#   tests/system/install_test.sh <build dir> <source dir>
set -euo pipefail
# No `cmd | grep -q`: grep -q exits at its first match, the writer then
# dies of SIGPIPE, and pipefail fails a check that passed.  Output is
# captured first and searched as a string.
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install_test: $*"; exit 1; }
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
libdir=${libdir%/}
export PKG_CONFIG_PATH="$libdir/pkgconfig"

# pkg-config --cflags names the installed headers and nothing else: no
# dependency's flags (ck.pc's -D__x86_64__, a multiarch -I) reach a user
# of <bgalloc.h>, which needs none of them.
cflags=$(pkg-config --cflags bgalloc)
[ "$(echo $cflags)" = "-I$libdir/pkgconfig/../../include" ] || [ "$(echo $cflags)" = "-I$prefix/include" ] ||
	fail "pkg-config --cflags bgalloc is '$cflags', not only the prefix's include directory"

# consumers: pkg-config shared, built with the README's own command for a
# private prefix (its rpath flag, and nothing else), pkg-config static,
# CMake package (shared and static)
readme_cc=$(grep -m1 -E '^cc app\.c \$\(pkg-config --cflags --libs bgalloc\) -Wl,-rpath' "$src/README.md") ||
	fail "README.md gives no 'cc app.c \$(pkg-config --cflags --libs bgalloc) -Wl,-rpath...' line"
readme_cc=${readme_cc%%#*}
(cd "$prefix" && cp "$src/examples/embed.c" app.c && eval "$readme_cc -o embed-pc") ||
	fail "the README's command does not build: $readme_cc"
out=$("$prefix/embed-pc") && grep -q "^free:" <<<"$out" || fail "pkg-config consumer (README's rpath) failed"
cc -o "$prefix/embed-static" "$src/examples/embed.c" $(pkg-config --cflags bgalloc) \
	$(pkg-config --static --libs bgalloc | sed 's/-lbgalloc\b/-l:libbgalloc.a/')
out=$("$prefix/embed-static") && grep -q "^free:" <<<"$out" || fail "static pkg-config consumer failed"
out=$(readelf -d "$prefix/embed-static") && ! grep -q 'libbgalloc' <<<"$out" || fail "the static consumer needs libbgalloc.so"
cmake -S "$src/tests/consumer" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
	-DEMBED_SOURCE="$src/examples/embed.c" >"$prefix/consumer.log"
cmake --build "$prefix/consumer" >/dev/null
out=$("$prefix/consumer/consumer") && grep -q "^free:" <<<"$out" || fail "find_package consumer failed"
out=$("$prefix/consumer/consumer_static") && grep -q "^free:" <<<"$out" || fail "find_package static consumer failed"
out=$(readelf -d "$prefix/consumer/consumer_static") && ! grep -q 'libbgalloc' <<<"$out" ||
	fail "the CMake static consumer needs libbgalloc.so"
# The CMake package names its dependencies as imported targets, never as
# a library's absolute path, and finds its own files from where it lies.
for f in "$libdir"/cmake/bgalloc/*.cmake; do
	abs=$(sed 's/\${_IMPORT_PREFIX}[^";]*//g' "$f" | grep -oE '/[^";)]*\.(so|a)([.0-9]*)?\b' || true)
	[ -z "$abs" ] || fail "${f#$prefix/} holds absolute library paths: $abs"
	! grep -qF "$prefix" "$f" || fail "${f#$prefix/} names the install prefix $prefix: it cannot be moved"
done
cmake_version=$(sed -n 's/^-- bgalloc package version: //p' "$prefix/consumer.log")

# The ported peer suites (Ceph's allocator tests, ext4's mballoc tests),
# held out from the tree: copied with their helper headers into the
# prefix and built there against the installed <bgalloc.h> and the shared
# library alone (pkg-config), so a name only the build tree has, an
# internal header or a hidden symbol fails here.
mkdir "$prefix/ported"
cp "$src/tests/support/testutil.h" "$src/tests/support/rng.h" "$prefix/ported/"
ported=
for t in test_ceph_allocator test_ext4_mballoc; do
	cp "$src/tests/unit/$t.c" "$prefix/ported/"
	(cd "$prefix/ported" && cc -std=gnu11 -O1 -Wall -Wextra -Werror -o "$t" "$t.c" \
		$(pkg-config --cflags --libs bgalloc criterion) -Wl,-rpath,"$libdir") ||
		fail "$t does not build against the installed library"
	out=$("$prefix/ported/$t" --jobs=2 --short-filename 2>&1) || fail "$t fails against the installed library: $out"
	grep -q "Synthesis: Tested: [1-9]" <<<"$out" || fail "$t ran no test: $out"
	out=$(ldd "$prefix/ported/$t") && grep -qF "libbgalloc.so.0 => $prefix/" <<<"$out" ||
		fail "$t does not run on the installed library"
	ported="$ported $t"
done

# versions, and a message for an errno the library passes through
cat >"$prefix/version.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <bgalloc.h>
int main(void)
{
	printf("%d.%d.%d %s %s %06x\n%s\n", BGA_VERSION_MAJOR, BGA_VERSION_MINOR, BGA_VERSION_PATCH,
	       BGA_VERSION_STRING, bga_version(), BGA_VERSION_HEX, bga_strerror(-ENOENT));
	return 0;
}
EOF
cc -o "$prefix/version" "$prefix/version.c" $(pkg-config --cflags --libs bgalloc) -Wl,-rpath,"$libdir"
read -r parts string runtime hex < <("$prefix/version")
pc=$(pkg-config --modversion bgalloc)
want_hex=$(printf '%02x%02x%02x' ${parts//./ })
[ "$parts" = "$string" ] && [ "$string" = "$runtime" ] && [ "$runtime" = "$pc" ] &&
	[ "$pc" = "$cmake_version" ] && [ "$hex" = "$want_hex" ] ||
	fail "versions disagree: macros $parts, string $string, bga_version() $runtime, hex $hex," \
		"pkg-config $pc, CMake package '$cmake_version'"
enoent=$("$prefix/version" | sed -n 2p)
[ "$enoent" = "ENOENT: No such file or directory" ] || fail "bga_strerror(-ENOENT) is '$enoent'"

# man pages, as man(1) finds them under the prefix
"$src/tests/system/man_test.sh" "$libdir/libbgalloc.so" "$prefix/share/man" "$prefix/include" >/dev/null ||
	fail "man(3) pages: $("$src/tests/system/man_test.sh" "$libdir/libbgalloc.so" "$prefix/share/man" "$prefix/include")"
for page in 3:bgalloc 3:bga_alloc 3:bga_version 1:bga-inspect 7:bgalloc 3type:bga_config; do
	man -M "$prefix/share/man" -w "${page%%:*}" "${page#*:}" >/dev/null 2>&1 || fail "man ${page/:/ } not found"
	[ -n "$(MANWIDTH=80 man -M "$prefix/share/man" "${page%%:*}" "${page#*:}" 2>/dev/null | grep DESCRIPTION)" ] ||
		fail "man ${page/:/ } does not render"
done

out=$(MANWIDTH=80 man -M "$prefix/share/man" 3 bga_alloc_vec 2>/dev/null)
for s in "RETURN VALUE" ERRORS ATTRIBUTES VERSIONS; do
	grep -q "^$s" <<<"$out" || fail "man 3 bga_alloc_vec has no $s section"
done
out=$(MANWIDTH=80 man -M "$prefix/share/man" 7 bgalloc 2>/dev/null)
grep -q "^PERSISTENCE GUIDE" <<<"$out" || fail "man 7 bgalloc has no persistence guide"

# the installed programs, from the prefix alone
tools="bga-inspect bga-replay"
[ -x "$prefix/bin/bgafs" ] && tools="$tools bgafs"
for t in $tools; do
	out=$("$prefix/bin/$t" --help 2>"$prefix/err") || fail "$t --help exited $?"
	grep -q '^usage: ' <<<"$out" && [ ! -s "$prefix/err" ] || fail "$t --help: not a usage on stdout"
	v=$("$prefix/bin/$t" --version) || fail "$t --version exited $?"
	grep -qF "$runtime" <<<"$v" || fail "$t --version says '$v', not $runtime"
	man -M "$prefix/share/man" -w 1 "$t" >/dev/null 2>&1 || fail "no man(1) page for $t"
done
for t in bgafs bga-replay; do
	[ -x "$prefix/bin/$t" ] || continue
	out=$(ldd "$prefix/bin/$t") && grep -qF "libbgalloc.so.0 => $prefix/" <<<"$out" || fail "$t does not find the installed library"
done
echo "install_test: consumers, ported suites ($ported ), versions ($runtime), messages, man pages and programs ($tools) checked"
