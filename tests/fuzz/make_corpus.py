#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the seed corpus for the fuzz harnesses (deterministic).

    tests/fuzz/make_corpus.py [outdir]     (default: tests/fuzz/corpus)

The byte layouts follow the decoders in fuzz_ops.c and fuzz_mt.c: a small
config, then operations.  Hand-made scenarios (fill the volume, deferred
frees and commits, reservations, windows, trims, bad arguments) plus a few
random inputs; the fuzzers take it from there.
"""
import os
import random
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


# --- fuzz_ops ---------------------------------------------------------------

LEGACY_TAG = bytes([0xB1])  # fuzz_ops.c: an input in the first format
V3_TAG = bytes([0xB3])  # fuzz_ops.c: the second format with the calls of 0.3.0


def ops_config(nblocks, bpg_idx, fdb, rsv_max, rsv_def, flags=0, bad=0):
    b = u16(nblocks - 1) + bytes([bpg_idx, fdb]) + u16(rsv_max)
    if rsv_max % (64 * (1 + bpg_idx % 16) + 1):
        b += u16(rsv_def)
    return b + bytes([flags, bad])


# pick_block: mode byte then operand(s)
BLK_FDB = bytes([0])
BLK_RAND = lambda v: bytes([7]) + u16(v)  # noqa: E731 (fz_below of n > 256 reads u16)
BLK_PAST = bytes([3, 5])
LEN_SMALL = lambda n: bytes([5, (n - 1) & 15])  # noqa: E731
LEN_ZERO = bytes([0])
LEN_BPG = bytes([1])
LEN_HUGE = bytes([3, 0])


def alloc(goal=None, length=LEN_SMALL(4), maxmode=1, extra=8, rsv=0, flags=0):
    g = bytes([0]) if goal is None else bytes([1]) + goal
    mx = bytes([maxmode]) + (bytes([extra]) if maxmode == 1 else b"")
    return bytes([0]) + g + length + mx + bytes([rsv, flags])


def free_recent(idx=0, how=0):
    return bytes([5, 0, idx, 0, how])


def free_model_run(pos=0, lenbyte=3):
    return bytes([6, 2]) + u16(pos) + bytes([lenbyte] * 4)


def free_random(start, length):
    return bytes([5, 1]) + start + length


def deferred_recent(idx=0, txnmode=3, inc=0):
    return bytes([7, 0, idx, 0, 0, txnmode, inc])


def commit(mode=4, inc=1):
    return bytes([8, mode, inc])


def reserve(mode=4, n=7):
    return bytes([9, mode, n])


def unreserve(mode=4, n=3):
    return bytes([10, mode, n])


def window_open(i=0):
    return bytes([11, i])


def window_close(i=0):
    return bytes([11, 4 | i])


def window_size(i=0, mode=1, v=0):
    return bytes([11, 8 | i, mode]) + (u16(v) if mode == 3 else b"")


def walk(trim=False, whole=True, extra=b""):
    return bytes([14 if trim else 13, 1 if whole else 0]) + extra


def ops_seeds(rnd):
    seeds = {}
    seeds["empty"] = b""
    seeds["tiny_volume"] = ops_config(1, 0, 0, 0, 0) + alloc() + alloc()
    seeds["fill_one_group"] = ops_config(64, 0, 0, 8, 4) + alloc(length=LEN_SMALL(16), extra=255) * 8
    seeds["fill_and_free"] = ops_config(300, 1, 1, 16, 8) + alloc(length=LEN_BPG, maxmode=0) * 4 + \
        free_model_run(0, 255) * 4 + walk()
    seeds["goal_chain"] = ops_config(2048, 3, 0, 32, 8) + b"".join(
        alloc(goal=BLK_RAND(i * 97), length=LEN_SMALL(1 + i % 8)) for i in range(12))
    seeds["exact_goal"] = ops_config(512, 1, 0, 16, 8) + alloc(goal=BLK_RAND(10), flags=1) * 3 + \
        alloc(goal=BLK_FDB, flags=1)
    seeds["bad_allocs"] = ops_config(512, 1, 2, 16, 8) + alloc(length=LEN_ZERO) + \
        alloc(maxmode=2) + alloc(goal=BLK_PAST) + alloc(flags=0x84) + alloc(flags=1) + \
        alloc(flags=2) + alloc(length=LEN_HUGE, maxmode=3)
    seeds["double_free"] = ops_config(256, 0, 0, 8, 8) + alloc() + free_recent(0, 0) + free_recent(0, 0) + \
        free_random(BLK_FDB, LEN_SMALL(2)) + free_random(BLK_PAST, LEN_SMALL(1))
    seeds["deferred_commit"] = ops_config(1024, 2, 0, 64, 8) + alloc(length=LEN_SMALL(16)) * 4 + \
        deferred_recent(0) + deferred_recent(1, 3, 2) + commit(4, 1) + commit(2) + commit(1) + commit(0) + \
        deferred_recent(2, 0) + deferred_recent(2, 1) + commit(4, 3)
    seeds["eagain"] = ops_config(64, 0, 0, 8, 8) + alloc(length=LEN_SMALL(16), extra=48) * 4 + \
        deferred_recent(0) + alloc(length=LEN_SMALL(4)) + commit(4, 1) + alloc(length=LEN_SMALL(4))
    seeds["reserve_all"] = ops_config(200, 0, 0, 8, 8) + reserve(1) + alloc() + alloc(flags=2) + \
        unreserve(4, 9) + alloc(flags=2) + unreserve(2) + unreserve(1) + reserve(2) + reserve(3, 1)
    seeds["reserve_use"] = ops_config(700, 2, 0, 8, 8) + reserve(4, 31) + alloc(length=LEN_SMALL(8), flags=2) * 3 + \
        alloc(length=LEN_SMALL(8)) + unreserve(4, 1)
    seeds["windows"] = ops_config(4000, 7, 0, 256, 8) + window_open(0) + window_open(1) + \
        alloc(rsv=0x80) * 6 + alloc(rsv=0x81) * 6 + window_size(0, 1) + alloc(rsv=0x80) * 4 + \
        window_size(1, 0) + alloc(rsv=0x81) + window_size(0, 2, 0) + window_close(0) + window_close(1)
    seeds["windows_full"] = ops_config(128, 0, 0, 64, 64) + window_open(0) + window_open(1) + \
        window_open(2) + alloc(rsv=0x80) + alloc(rsv=0x81) + alloc(rsv=0x82) + alloc(length=LEN_SMALL(16), extra=64) * 6
    seeds["trim"] = ops_config(1500, 3, 0, 16, 8) + alloc(length=LEN_SMALL(10)) * 5 + free_recent(2) + \
        walk(True) + walk(True) + free_recent(3) + walk(True) + walk(False)
    seeds["trim_ranges"] = ops_config(1500, 3, 1, 16, 8) + alloc(length=LEN_SMALL(10)) * 5 + \
        walk(True, False, BLK_RAND(5) + LEN_SMALL(16)) + walk(False, False, BLK_RAND(100) + LEN_BPG) + \
        bytes([13, 8 | 1, 1]) + bytes([14, 8 | 1 | 16, 2])
    seeds["bad_walks"] = ops_config(500, 1, 0, 16, 8) + walk(False, False, BLK_PAST + LEN_SMALL(1)) + \
        walk(True, False, BLK_RAND(3) + LEN_ZERO) + bytes([13, 4 | 1, 0])
    seeds["bad_config"] = ops_config(100, 0, 0, 8, 8, 0, 15) + bytes([5]) + alloc()
    for i in range(10):
        seeds["bad_config_%d" % i] = ops_config(100 + i, i, 0, 8, 8, 0, 15) + bytes([i, 3, 7]) + alloc()
    seeds["global_lock_atomic"] = ops_config(900, 4, 0, 32, 8, 3) + alloc() * 4 + free_recent(1) + walk()
    seeds["span_groups_free"] = ops_config(256, 0, 0, 8, 8) + alloc(length=LEN_BPG, maxmode=0) * 3 + \
        free_model_run(40, 60)
    seeds["first_data_block"] = ops_config(80, 0, 7, 8, 8) + alloc(goal=BLK_FDB) + \
        free_random(bytes([4, 3]), LEN_SMALL(2)) + alloc(goal=bytes([4, 1]), flags=1)
    # The seeds above are written in the first format (fuzz_ops.c,
    # LEGACY_TAG), which they keep by the tag; the ones below in the
    # second: its config byte (BGA_START_FULL, stripe), then calls of the
    # whole alphabet, each a call byte and arguments drawn at random.
    seeds = {name: (LEGACY_TAG + data if data else data) for name, data in seeds.items()}
    for name, cfgbyte, calls in (("v2_vec", 0, [16, 16, 21, 17, 19, 21]),
                                 ("v2_start_full", 1, [19, 21, 21, 16, 0, 20, 22]),
                                 ("v2_stripe", 2 << 1, [0, 16, 0, 17, 21, 18]),
                                 ("v2_store", 0, [0, 0, 23, 5, 7, 23, 0, 16, 23]),
                                 ("v2_thieves", 0, [11, 0, 0, 19, 20, 0, 24, 29, 23])):
        body = b"".join(bytes([c]) + bytes(rnd.getrandbits(8) for _ in range(10)) for c in calls)
        seeds[name] = ops_config(2000, 3, 0, 64, 16) + bytes([cfgbyte]) + body
    for i in range(12):
        seeds["random_%02d" % i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(16, 600)))
    # The third format (fuzz_ops.c, V3_TAG): the second's, with the calls
    # of 0.3.0 (32, 33 bga_free_deferred_vec, 34 bga_foreach_used, 35
    # bga_group_stats, 36 the clearer names; 23 stores, tagged or not).
    # A generator of its own, so the seeds above stay as they were.
    r3 = random.Random(3)
    for name, calls in (("v3_deferred_vec", [0, 0, 16, 32, 33, 34, 8, 32, 34, 35]),
                        ("v3_walks", [16, 0, 7, 34, 35, 35, 36, 11, 0, 36, 34]),
                        ("v3_tagged_store", [0, 16, 23, 32, 23, 8, 23, 35, 34, 23]),
                        ("v3_names", [36, 36, 0, 36, 11, 36, 35])):
        body = b"".join(bytes([c]) + bytes(r3.getrandbits(8) for _ in range(10)) for c in calls)
        seeds[name] = V3_TAG + ops_config(2000, 3, 0, 64, 16) + bytes([0]) + body
    seeds.update(lazy_seeds())
    return seeds


def lazy_seeds():
    """Third-format seeds whose stores run on lazily loaded (fuzz_ops.c,
    op_store: a store byte with bits 0 and 3), on volumes where a lazy load
    leaves its chunk unread: nblocks a multiple of blocks_per_group and
    first_data_block 0 (bga_create builds a partial group's chunk at once),
    then requests, all or nothing among them, before anything reads it.
    The seeds above use 2000 blocks in groups of 256: never lazy."""
    def cfg(nblocks, bpg_idx, start_full=False):
        # nblocks, groups of 64 * (1 + bpg_idx), first_data_block 0,
        # rsv_max 0, flags 0, START_FULL or not, no bad config
        return V3_TAG + u16(nblocks - 1) + bytes([bpg_idx, 0x80]) + u16(0) + \
            bytes([0, 1 if start_full else 0, 0])

    def alloc_small(n):  # no goal, no unit, min = max = n (1 .. 16)
        return bytes([0, 0, 1, 5, (n - 1) & 15, 0, 0, 0])

    def vec(min_len, wantmode, flags=4, max_out=16, extra=b""):
        # no goal, no unit, min_len 1 .. 16, max_len UINT64_MAX; wantmode 1:
        # want = extra (u16), 2: all that is free (+ extra[0] & 1)
        c = wantmode | 4 | ((max_out - 1) << 3)
        return bytes([16, 0, 1, 5, (min_len - 1) & 15, 3, 0, flags, c]) + extra

    def free_range(start, length):  # bga_free(start, length), length < 2 * bpg + 2
        return bytes([5, 1, 7]) + u16(start) + bytes([4]) + u16(length)

    lazy_store = bytes([23, 9])  # a plain store; the loaded volume runs on, lazily
    deferred = bytes([7, 0, 0, 0, 0, 3, 0])  # the latest extent, in txn last + 1
    seeds = {}
    seeds["v3_lazy_vec"] = cfg(4096, 15) + alloc_small(16) * 2 + lazy_store + vec(8, 1, extra=u16(3000)) + \
        vec(4, 1, 0, extra=u16(300)) + lazy_store + vec(16, 1, extra=u16(500)) + lazy_store + \
        vec(1, 2, extra=b"\1") + vec(1, 2, extra=b"\0")
    seeds["v3_lazy_vec_pending"] = cfg(4096, 3) + alloc_small(16) * 3 + deferred + lazy_store + \
        vec(2, 2, extra=b"\1") + bytes([8, 4, 1]) + lazy_store + vec(2, 2, extra=b"\0")
    seeds["v3_lazy_vec_full"] = cfg(4096, 7, True) + free_range(100, 700) + free_range(1500, 1000) + \
        lazy_store + vec(10, 1, max_out=2, extra=u16(1200)) + vec(10, 1, 0, extra=u16(300)) + \
        lazy_store + vec(5, 2, extra=b"\0")
    return seeds


# --- fuzz_mt ----------------------------------------------------------------

def mt_seeds(rnd):
    seeds = {}

    def cfg(nblocks, bpg_idx, rsv_max, rsv_def, flags, nthreads):
        b = u16(nblocks - 64) + bytes([bpg_idx, 0]) + u16(rsv_max)
        if rsv_max:
            b += u16(rsv_def)
        return b + bytes([flags, nthreads - 2])

    def stream(ops, length):
        out = b""
        while len(out) < length:
            out += bytes([rnd.choice(ops)] + [rnd.getrandbits(8) for _ in range(4)])
        return out[:length]

    churn = [0, 1, 2, 5, 6]
    mixes = {
        "churn": churn,
        "deferred": churn + [7, 7, 8],
        "reserve": churn + [9, 10, 4],
        "windows": churn + [11, 11, 2],
        "trim": churn + [12, 13, 13],
        "everything": list(range(16)),
    }
    for name, ops in mixes.items():
        for n in (2, 3, 4):
            body = b"".join(stream(ops, 300) for _ in range(n))
            seeds["%s_%dthreads" % (name, n)] = cfg(rnd.choice([64, 256, 1000, 4000]), rnd.randrange(16),
                                                     rnd.randrange(200), rnd.randrange(64),
                                                     rnd.getrandbits(8), n) + body
    seeds["small_volume_contention"] = cfg(64, 0, 16, 8, 0, 4) + stream(churn, 1200)
    seeds["global_lock"] = cfg(2000, 5, 32, 8, 1, 4) + stream(churn + [13], 1200)
    for i in range(6):
        seeds["random_%02d" % i] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(32, 1500)))
    return seeds


def write(sub, seeds):
    d = os.path.join(OUT, sub)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print("%s: %d seeds in %s" % (sub, len(seeds), d))


if __name__ == "__main__":
    write("fuzz_ops", ops_seeds(random.Random(1)))
    write("fuzz_mt", mt_seeds(random.Random(2)))
