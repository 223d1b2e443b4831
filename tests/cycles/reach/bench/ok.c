/* treecycles fixture: the same, listed in reach.txt: passes. */
#include "inner.h"
int ok(void) { return bga__inner(); }
