/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_VOLUME_H
#define BGA_VOLUME_H
/* The internal headers by their old name: internal.h is the one to include. */
#include "internal.h"
#endif
