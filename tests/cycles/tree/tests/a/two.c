/* treecycles fixture: calls one() back. */
int one(void);
int two(void) { return one() + 1; }
