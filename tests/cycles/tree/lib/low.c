/* treecycles fixture: the library including a test's file: up a layer. */
#include "../tests/a/one.c"
