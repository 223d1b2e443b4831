/* treecycles fixture: an example calling an internal name through its own
 * prototype: inside. */
int bga__x(void);
int main(void) { return bga__x(); }
