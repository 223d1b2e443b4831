/* treecycles fixture: a tool including a header of lib/ through an include
 * path: inside all the same. */
#include <inner.h>
int angled(void) { return 0; }
