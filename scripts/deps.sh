#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the Debian packages a target needs, if they are missing.
#   scripts/deps.sh build|test|bench|demo|model|fuzz|fscompare|record|coverage ...
# Each need is checked first (pkg-config module, command or file); only the
# missing packages are installed, and the script says which and why.
set -euo pipefail

need_pkgs=()
want() { # want <kind> <what> <debian package>
	local kind=$1 what=$2 pkg=$3 ok=1
	case $kind in
	pc) pkg-config --exists "$what" 2>/dev/null || ok=0 ;;
	cmd) command -v "$what" >/dev/null 2>&1 || ok=0 ;;
	file) [ -e "$what" ] || ok=0 ;;
	py) /usr/bin/python3 -c "import $what" 2>/dev/null || ok=0 ;; # Debian's python, where python3-* installs
	esac
	if [ $ok = 0 ]; then
		echo "deps: $what is missing -> will install $pkg"
		need_pkgs+=("$pkg")
	fi
}

for target in "${@:-build}"; do
	want cmd cmake cmake
	want cmd pkg-config pkg-config
	want cmd g++ g++
	want pc ck libck-dev
	want pc liburcu-bp liburcu-dev
	want file /usr/include/isa-l/crc.h libisal-dev
	want pc jansson libjansson-dev # bga-inspect's and bga-lab's JSON
	want pc liblzma liblzma-dev    # bga-replay reads xz-compressed traces
	want cmd python3 python3       # the man(3) pages (scripts/mkman.py)
	case $target in
	build) ;;
	test)
		want pc criterion libcriterion-dev
		want cmd clang clang
		want file /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev
		# bgafs, the FUSE example, and the programs its tests run
		want pc fuse3 libfuse3-dev
		want cmd fusermount3 fuse3
		want cmd dbench dbench
		want cmd fio fio
		want cmd stress-ng stress-ng # make soak: bgafs under its filesystem class
		# the kept ABI (abidw, abidiff) and the man pages' checks
		want cmd abidiff abigail-tools
		want cmd groff groff-base
		want cmd man man-db
		;;
	fscompare) # bench/fs/fscompare.sh: bgafs against fuse2fs
		want pc fuse3 libfuse3-dev
		want cmd fusermount3 fuse3
		want cmd dbench dbench
		want cmd fio fio
		want cmd fuse2fs fuse2fs
		want cmd mke2fs e2fsprogs
		;;
	bench | demo)
		want file /usr/include/benchmark/benchmark.h libbenchmark-dev
		want file /usr/share/benchmark/compare.py libbenchmark-tools
		want py scipy python3-scipy
		want pc ext2fs libext2fs-dev
		want cmd mke2fs e2fsprogs
		want cmd gnuplot gnuplot-nox
		;;
	model) # make model (bench/model): callgrind's counts, gdb and addr2line name the shared lines
		want cmd valgrind valgrind
		want cmd gdb gdb
		want cmd addr2line binutils
		want cmd gnuplot gnuplot-nox
		;;
	record) # tools/replay/record_traces.sh: the histories of tests/data/traces
		want pc fuse3 libfuse3-dev
		want cmd fusermount3 fuse3
		want cmd dbench dbench
		want cmd postmark postmark
		want cmd fio fio
		want cmd git git
		want cmd xz xz-utils
		want file /usr/src/linux-source-6.1.tar.xz linux-source-6.1
		want cmd make make # the kernel build (kbuild)
		want cmd gcc gcc
		want cmd flex flex
		want cmd bison bison
		want cmd bc bc
		want cmd sqlite3 sqlite3 # the sqlite history
		want cmd db_bench rocksdb-tools # the lsm history
		want cmd ccache ccache # the ccache history
		want cmd zstd zstd # the archive history
		want cmd mksquashfs squashfs-tools # the squashfs history
		want cmd bonnie++ bonnie++ # the bonnie history
		want cmd hg mercurial # the hg history
		want file /usr/lib/postgresql/15/bin/pgbench postgresql-15 # the pgbench history
		want file /usr/lib/dovecot/dovecot-lda dovecot-core # the maildir history
		want cmd redis-server redis-server # the redis history
		want cmd redis-benchmark redis-tools
		want cmd borg borgbackup # the borg history
		want cmd omindex xapian-omega # the xapian history
		want cmd xapian-compact xapian-tools
		want cmd mdb_load lmdb-utils # the lmdb history
		want cmd mariadbd mariadb-server # the mariadb history
		want cmd sysbench sysbench
		want cmd restic restic # the restic history
		want cmd ffmpeg ffmpeg # the hls history
		want cmd doxygen doxygen # the dox history
		want cmd prometheus prometheus # the prom history
		;;
	coverage) # make coverage: with test, gcovr for the report
		want cmd gcovr gcovr
		;;
	fuzz)
		want cmd clang clang
		want file /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev
		want cmd afl-clang-fast afl++
		want pc criterion libcriterion-dev
		;;
	*) echo "deps: unknown target $target" >&2; exit 2 ;;
	esac
done

if [ ${#need_pkgs[@]} -eq 0 ]; then
	echo "deps: all packages for '${*:-build}' are present"
	exit 0
fi
mapfile -t need_pkgs < <(printf '%s\n' "${need_pkgs[@]}" | sort -u)
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "deps: apt-get install ${need_pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need_pkgs[@]}"
