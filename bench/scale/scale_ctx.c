/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bga-scale's one context (scale_ctx.h): what every part reads. */
#define _GNU_SOURCE
#include "scale_ctx.h"

struct scale_ctx scale = {
	.xfer_ns = {-1, -1},
	.timer_policy_fifo = true, /* until refused once */
};
