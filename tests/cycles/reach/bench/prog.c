/* treecycles fixture: a benchmark including a header of lib/: inside. */
#include "inner.h"
#include "pub.h"
int prog(void) { return pub(); }
