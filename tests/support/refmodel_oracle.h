/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REFMODEL_ORACLE_H
#define BGA_REFMODEL_ORACLE_H

/*
 * The commit-and-retry oracle of bga_alloc_vec, for the model's files
 * (refmodel_alloc_vec_check, beside it in refmodel_oracle.c): what the
 * header says the call answers in the model's state, judged by what the
 * caller can do next.
 */

#include <stddef.h>
#include <stdint.h>

#include "refmodel.h"

/*
 * bga_alloc_vec's answers, from the header's words (bgalloc.h): a request
 * succeeds when want fits as at most max_out extents, each min_len ..
 * max_len blocks and aligned, in the free runs that hold an aligned run
 * of min_len inside one group (the runs a piece can come from), runs of
 * that kind that touch across a group boundary counting as one, without
 * taking blocks promised to reservations; without all or nothing, when
 * one extent of min_len fits so.  -EAGAIN: it would succeed after every
 * pending deferred free commits; -ENOSPC: it would not.
 *
 * The answer the header gives bga_alloc_vec in the model's state: 0 (it
 * succeeds), -EAGAIN or -ENOSPC; want as the call caps it.  The request's
 * arguments must be valid (refmodel_alloc_vec_check rules out -EINVAL
 * first).  Aborts when it has no memory to judge with.
 */
int refm_vec_answer(const struct refmodel *m, const struct bga_request *req, uint64_t want, size_t max_out);

#endif
