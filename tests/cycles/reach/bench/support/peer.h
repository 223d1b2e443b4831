/* treecycles fixture: what the benchmarks alone share. */
int peer(void);
