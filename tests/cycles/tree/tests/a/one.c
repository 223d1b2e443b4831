/* treecycles fixture: calls two(), which calls one(): a circle. */
int two(void);
int one(void) { return two(); }
