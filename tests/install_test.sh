#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the build into a scratch prefix, then build and run the embedding
# example against it twice: with pkg-config and with find_package(bgalloc).
#   tests/install_test.sh <build dir> <source dir>
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
export LD_LIBRARY_PATH="$libdir"

cc -o "$prefix/embed-pc" "$src/examples/embed.c" $(pkg-config --cflags --libs bgalloc)
"$prefix/embed-pc" | grep -q "^free:" || { echo "pkg-config consumer failed"; exit 1; }

cmake -S "$src/tests/consumer" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
	-DEMBED_SOURCE="$src/examples/embed.c" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
"$prefix/consumer/consumer" | grep -q "^free:" || { echo "find_package consumer failed"; exit 1; }
echo "install_test: pkg-config and find_package consumers built and ran"
