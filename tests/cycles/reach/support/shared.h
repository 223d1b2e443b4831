/* treecycles fixture: what every folder of programs shares. */
int shared(void);
