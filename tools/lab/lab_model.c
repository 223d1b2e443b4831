// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bga-lab's count verdict: the variants it just timed, counted on the
 * model of N cores (bench/model, `make model`), which runs the library's
 * own code on modelled cores that take turns, so that the count is the
 * same on a busy machine as on a quiet one.  Per variant, the cache
 * lines moved per operation (a counter add, or a lock hold and release)
 * at 2 and 64 modelled cores, and which of the first two moves fewer.
 * The model is a separate build (bga-model, not installed): found at
 * $BGA_MODEL_BIN, else build/model/bench/model/bga-model from the
 * current directory; without it this says so and nothing else.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab.h"

void lab_model_verdict(const struct lab_params *p);

/* The model's name for a lab variant: counter modes by their family
 * (percpu, percpu-cas: both add to a per-CPU slot), lock kinds
 * as they are; NULL when the model has no such variant. */
static const char *model_variant(const char *name, bool counter)
{
	static const char *const kinds[] = {"fas", "ticket", "mcs", "mutex"};

	if (counter)
		return !strncmp(name, "percpu", 6) ? "percpu" : !strncmp(name, "atomic", 6) ? "atomic" : NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(name, kinds[i]))
			return kinds[i];
	return NULL;
}

/* Lines moved per op at 2 and 64 modelled cores into l[0], l[1]; 0 or -1. */
static int count(const char *bin, const char *wl, const char *v, double l[2])
{
	char cmd[1024], line[1 << 16];
	int k = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' -w %s -v %s -t 2,64", bin, wl, v);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (k < 2 && fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		double ops = j ? json_number_value(json_object_get(j, "ops")) : 0;
		if (ops > 0)
			l[k++] = (json_number_value(json_object_get(j, "rmoves")) +
				  json_number_value(json_object_get(j, "wmoves"))) / ops;
		json_decref(j);
	}
	return pclose(f) == 0 && k == 2 ? 0 : -1;
}

void lab_model_verdict(const struct lab_params *p)
{
	const char *bin = getenv("BGA_MODEL_BIN");
	bool counter = !strcmp(p->command, "counter");
	const char *what = counter ? "add" : "hold";
	double l[LAB_MAX_VARIANTS][2];
	int have[LAB_MAX_VARIANTS] = {0};

	if (!bin)
		bin = "build/model/bench/model/bga-model";
	if (access(bin, X_OK) != 0) {
		printf("model: %s is not built (make model, or set BGA_MODEL_BIN): no count verdict\n", bin);
		return;
	}
	for (unsigned i = 0; i < p->nvariants; i++) {
		const char *v = model_variant(p->variants[i].name, counter);
		if (!v) {
			printf("model: %s has no modelled form\n", p->variants[i].name);
			continue;
		}
		if (count(bin, counter ? "counter" : "lock", v, l[i]) != 0) {
			printf("model: %s could not be counted (%s)\n", p->variants[i].name, bin);
			continue;
		}
		have[i] = 1;
		printf("model %s lines/%s: %.4f at 2 modelled cores, %.4f at 64 (counted, whatever the load)\n",
		       p->variants[i].name, what, l[i][0], l[i][1]);
	}
	if (p->nvariants >= 2 && have[0] && have[1]) {
		double a = l[0][1], b = l[1][1];
		printf("model-verdict cores=64 %s/%s lines per %s=%.4f/%.4f: %s moves %s\n", p->variants[0].name,
		       p->variants[1].name, what, a, b, a == b ? "neither" : a < b ? p->variants[0].name : p->variants[1].name,
		       a == b ? "fewer" : "fewer lines");
	}
}
