/* treecycles fixture: a public header. */
int pub(void);
