/* treecycles fixture: a tool including the benchmarks' support (the ext2
 * peer's old home): across. */
#include "peer.h"
int tool(void) { return peer(); }
