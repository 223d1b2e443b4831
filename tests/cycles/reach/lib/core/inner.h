/* treecycles fixture: a header of lib/, not public. */
int bga__inner(void);
