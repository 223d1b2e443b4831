# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Sourced by what puts a load on a mounted file system: the benches
# (fscompare.sh, bgafs_ab.sh, trace_cost.sh, dbench_counters.sh), the bgafs
# tests (tools/bgafs/tests/cases_io.sh) and tools/replay/record_traces.sh.
# Loads only: mounting is bench/support/fuse_mount.sh's (the tests have
# their own, in bgafs_test.sh).
#   dbench_run DIR SECONDS CLIENTS   dbench's output (stdout and stderr); its exit status
#   fio_job FILE DIR [RAND SEQ]      writes the fio job the bgafs tests and fscompare run
#   punch_every_other FILE COUNT     punches blocks 0, 2, ... 2 COUNT - 2 of FILE
#   avail_settled MNT FILE PAUSE     sets avail: df's available KiB once it stops changing
#   dbench_opts LAST ARGS...         the dbench benches' shared options

# dbench 4.0 checks its barrier semaphore with `!semget(...)`, so it prints
# "failed to create barrier semaphore" whenever semget returns id 0 -- a
# valid id, the first set created in an IPC namespace (a fresh boot or
# container) -- and then runs normally: that line is no error.  A semget
# that really fails (-1) makes the next semop fail, and dbench exits 1.
# Where a private IPC namespace can be had, the run takes id 0 every
# time, so this path is always exercised.
dbench_run() {
	local ns=()
	if unshare -i true 2>/dev/null; then ns=(unshare -i); fi
	"${ns[@]}" dbench -c /usr/share/dbench/client.txt -t "$2" "$3" -D "$1" 2>&1
}

# 4 jobs of 4 KiB random writes (RAND each, default 48m) and one
# sequential writer (SEQ, default 64m), 256 MiB in all, every block
# verified (crc32c); fio's default fallocate (native).
fio_job() {
	cat >"$1" <<EOF
[global]
directory=$2
ioengine=psync
verify=crc32c
do_verify=1
verify_fatal=1
verify_state_save=0
[rand]
rw=randwrite
bs=4k
size=${3:-48m}
numjobs=4
[seq]
rw=write
bs=1m
size=${4:-64m}
EOF
}

# One-block holes: every other 4 KiB block of FILE punched out.
punch_every_other() {
	local i
	for i in $(seq 0 $(($2 - 1))); do fallocate -p -o $((8192 * i)) -l 4096 "$1"; done
}

# A punch's blocks count as free once its commit is done: sync FILE and
# the file system and read df's available KiB until it stops changing (50
# tries, PAUSE seconds apart).
avail_settled() {
	local prev=-1 i
	for i in $(seq 50); do
		sync "$2" "$1"
		avail=$(df -k --output=avail "$1" | tail -1)
		[ "$avail" = "$prev" ] && break
		prev=$avail
		sleep "$3"
	done
}

# --runs N --clients C --seconds S --size SIZE --build DIR into runs,
# clients, secs, size and build; -h/--help prints the script's comment
# lines 2 to LAST and exits; everything else is left, in order, in the
# array rest for the caller.
# shellcheck disable=SC2034 # the variables are the caller's
dbench_opts() {
	local last=$1
	shift
	rest=()
	while [ $# -gt 0 ]; do
		case $1 in
		--runs) runs=$2; shift 2 ;;
		--clients) clients=$2; shift 2 ;;
		--seconds) secs=$2; shift 2 ;;
		--size) size=$2; shift 2 ;;
		--build) build=$2; shift 2 ;;
		-h | --help) sed -n "2,${last}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) rest+=("$1"); shift ;;
		esac
	done
}
