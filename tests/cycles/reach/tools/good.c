/* treecycles fixture: a tool on what all share: passes. */
#include "shared.h"
int good(void) { return shared(); }
