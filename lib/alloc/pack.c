/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What files showed on a CPU (percpu.h, struct bga_pack): the counts that
 * decide whether a handle's first request is packed (search.c's
 * alloc_packed) or books a window.
 */
#include "pack.h"
#include "chunk.h"
#include "group.h"

/*
 * After ext4's mb_stream_req: a file whose first request is shorter than
 * BGA_LOCAL_MAX_REQ gets no window of its own while files whose first
 * request was as long have seldom asked again (fewer than one in
 * BGA_SHOWN_GREW of the last BGA_SHOWN_DECAY or so on this CPU, once
 * BGA_SHOWN_LEARN of them were seen): such a file is likely whole
 * already, and its request is packed (search.c, alloc_packed: into the
 * first hole of the CPU's home group that holds it, first fit), as ext4
 * packs small files into a CPU's locality group, instead of a
 * window that asks for a run half again as long as a window and leaves
 * holes shorter than that to nobody.  Where files of that first length
 * go on growing (a tar writing a block a call, interleaved writers),
 * they keep their windows, so they stay whole.  The counts halve at
 * BGA_SHOWN_DECAY files of a length, so that they follow the work of
 * the moment (BENCHMARKS.md#placement-on-recorded-histories).
 */
#define BGA_SHOWN_LEARN 16
#define BGA_SHOWN_GREW 4
#define BGA_SHOWN_DECAY 1024

void bga__pack_first(struct bga_percpu *pc, struct bga_rsv *rsv, uint32_t len)
{
	if (len > BGA_SHOWN_LENS) {
		rsv->first = BGA_SHOWN_LONG;
		return;
	}
	rsv->first = (uint8_t)len;
	uint16_t *f = &pc->pack.files[len - 1], *gr = &pc->pack.grew[len - 1];
	uint16_t n = __atomic_load_n(f, __ATOMIC_RELAXED);
	if (n >= BGA_SHOWN_DECAY) {
		/* halve both: the ratio follows what files do now */
		__atomic_store_n(gr, (uint16_t)(__atomic_load_n(gr, __ATOMIC_RELAXED) / 2), __ATOMIC_RELAXED);
		n /= 2;
	}
	__atomic_store_n(f, (uint16_t)(n + 1), __ATOMIC_RELAXED);
}

void bga__pack_grew(struct bga_volume *vol, struct bga_rsv *rsv)
{
	if (rsv->grew || rsv->first == 0 || rsv->first > BGA_SHOWN_LENS)
		return;
	rsv->grew = true;
	uint16_t *gr = &bga__percpu(vol)->pack.grew[rsv->first - 1];
	uint16_t n = __atomic_load_n(gr, __ATOMIC_RELAXED);
	if (n < UINT16_MAX)
		__atomic_store_n(gr, (uint16_t)(n + 1), __ATOMIC_RELAXED);
}

uint64_t bga__pack_next(const struct bga_percpu *pc)
{
	uint64_t next = __atomic_load_n(&pc->pack.next, __ATOMIC_RELAXED);
	return next != 0 ? next : BGA_NO_GOAL;
}

void bga__pack_set_next(struct bga_percpu *pc, uint64_t block)
{
	__atomic_store_n(&pc->pack.next, block, __ATOMIC_RELAXED);
}

bool bga__pack_decides(const struct bga_percpu *pc, uint32_t len)
{
	if (len == 0 || len > BGA_SHOWN_LENS)
		return false;
	uint32_t files = __atomic_load_n(&pc->pack.files[len - 1], __ATOMIC_RELAXED);
	uint32_t grew = __atomic_load_n(&pc->pack.grew[len - 1], __ATOMIC_RELAXED);
	return files >= BGA_SHOWN_LEARN && grew * BGA_SHOWN_GREW < files;
}

/* More often whole than not: a hole of the file's first length then
 * holds it whole more often than its growth splits it there
 * (BENCHMARKS.md#placement-on-recorded-histories). */
#define BGA_SHOWN_WHOLE 2

bool bga__pack_mostly_whole(const struct bga_percpu *pc, uint32_t len)
{
	if (len == 0 || len > BGA_SHOWN_LENS)
		return false;
	uint32_t files = __atomic_load_n(&pc->pack.files[len - 1], __ATOMIC_RELAXED);
	uint32_t grew = __atomic_load_n(&pc->pack.grew[len - 1], __ATOMIC_RELAXED);
	return files >= BGA_SHOWN_LEARN && grew * BGA_SHOWN_WHOLE < files;
}

/*
 * The place follows a booking that says where the CPU's writing goes on:
 * a goal-less one (it went where the place or the home sent it), or a
 * new file's first one that landed in its goal's group.  Not an old
 * file's later booking at its goal (a database file grown in place: the
 * files written next would go on among its blocks and outlive it), nor a
 * new file's that the walk moved out of its goal's group (near full, it
 * went to whatever run had room; the files after it would follow it
 * there).  But an old file's later booking in a group before the place's
 * takes the place back with it: room there, below the groups written
 * since, is filled before the place's group is spent, as ext2 fills the
 * lowest groups first (dox's end score: a site rebuilt in place, its
 * pages' later windows back in the lower groups); one ahead of the place
 * does not drag it on (xapian's database).
 * docs/HISTORY.md#the-next-fit-place-on-recorded-histories-2026-12-06,
 * docs/HISTORY.md#placement-on-recorded-histories-an-old-files-booking-before-the-place-on-dox-2026-12-06.
 */
void bga__pack_booked(struct bga_volume *vol, struct bga_percpu *pc, uint64_t goal, bool first_req,
		      const struct bga_extent *ext)
{
	uint64_t next = __atomic_load_n(&pc->pack.next, __ATOMIC_RELAXED);
	uint64_t g = bga__gpos(vol, ext->start).g;
	bool back = next != 0 && g < bga__gpos(vol, next).g;
	if (goal != BGA_NO_GOAL && (first_req ? bga__gpos(vol, goal).g != g : !back))
		return;
	bga__pack_set_next(pc, ext->start + ext->len);
}

/*
 * A packed file goes first fit in its home's group instead of at the
 * place when the place has moved on to the group right after the home's
 * and the home's group is under 1/BGA_HOME_FIRST_FREE_PART free (a group
 * next fit has left, as search.c's next_fit_off): the holes its deleted
 * files left, among files that live on, are filled before the place's
 * group is spent, as ext2 fills the lowest groups first (archive's end
 * score).  Not a file of BGA_HOME_FIRST_LEN blocks or fewer: a round's
 * one-block files, written in order and deleted together, stay at the
 * place (debs); nor with the place further on (a first window the walk
 * sent far: the home's holes lie among files still churning, xapian).
 * docs/HISTORY.md#placement-on-recorded-histories-packed-files-at-the-next-fit-place-on-archive-ccache-and-squashfs-and-rules-tried-2026-12-06.
 */
#define BGA_HOME_FIRST_LEN 1
#define BGA_HOME_FIRST_FREE_PART 4

bool bga__pack_home_first(struct bga_volume *vol, const struct bga_geom *geo, uint64_t home, uint64_t next,
			  uint32_t len)
{
	if (len <= BGA_HOME_FIRST_LEN || home >= geo->nblocks || next >= geo->nblocks)
		return false;
	uint64_t g = bga__group_of(vol, home);
	uint32_t bpg = vol->cfg.blocks_per_group, off, run;
	int rc;
	struct bga_group *grp;
	if (bga__group_of(vol, next) != g + 1 || (grp = bga__group_ensure_lock(vol, g, true, &rc)) == NULL)
		return false;
	bool first = grp->free < bpg / BGA_HOME_FIRST_FREE_PART &&
		     bga__group_find_locked(vol, grp, g, 0, len, bpg, &off, &run);
	bga__group_unlock(vol, g);
	return first;
}
