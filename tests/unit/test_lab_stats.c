/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab's statistics and verdict rules (examples/lab/lab_stats.c) on
 * made-up samples: the Mann-Whitney p against scipy's values, the
 * bootstrap CI, and each verdict outcome, including every way a run must
 * come out inconclusive rather than significant.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "lab.h"

Test(lab_stats, mann_whitney_against_scipy)
{
	double a[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[] = {2.5, 3.5, 10, 11, 12, 13, 14, 15, 16};
	double c[] = {1, 2, 3, 4, 5}, d[] = {6, 7, 8, 9, 10};
	double e[] = {1, 1, 2, 3, 5}, f[] = {2, 4, 4, 6, 7};

	/* scipy.stats.mannwhitneyu(..., method="exact") and, with ties,
	 * method="asymptotic" (continuity and tie corrections) */
	cr_expect(fabs(lab_mwu_p(a, 9, b, 9) - 0.014191690662278898) < 1e-9);
	cr_expect(fabs(lab_mwu_p(b, 9, a, 9) - 0.014191690662278898) < 1e-9);
	cr_expect(fabs(lab_mwu_p(c, 5, d, 5) - 2.0 / 252) < 1e-12);
	cr_expect(fabs(lab_mwu_p(e, 5, f, 5) - 0.11384629800665805) < 1e-9);
	cr_expect_eq(lab_mwu_p(a, 9, a, 9), 1.0);
	cr_expect_eq(lab_mwu_p(a, 0, b, 9), 1.0);
}

Test(lab_stats, quantiles_and_ci)
{
	double a[] = {5, 1, 3, 2, 4}, b[] = {10, 2, 6, 4, 8}, lo, hi, lo2, hi2;

	cr_expect_eq(lab_median(a, 5), 3);
	cr_expect_eq(lab_quantile(a, 5, 0.25), 2);
	cr_expect_eq(lab_quantile(a, 4, 0.5), 2.5); /* 5 1 3 2: between 2 and 3 */
	lab_ratio_ci(a, b, 5, &lo, &hi);
	lab_ratio_ci(a, b, 5, &lo2, &hi2);
	/* b is exactly 2a, pair by pair: every resample's ratio is 2 */
	cr_expect(fabs(lo - 2) < 1e-12 && fabs(hi - 2) < 1e-12, "ci %g-%g", lo, hi);
	cr_expect(lo == lo2 && hi == hi2, "the same samples give the same interval");
}

/* A run of two variants at one thread count, with made-up samples. */
struct fake {
	struct lab_params p;
	struct lab_result r;
	struct lab_cell cells[2];
	struct lab_ceiling ceil;
	struct lab_sample s[2][LAB_MAX_REPS];
};

static void fake_init(struct fake *f, unsigned threads, unsigned reps, const double *a, const double *b,
		      double share, double ceiling)
{
	memset(f, 0, sizeof(*f));
	f->p.command = "counter";
	f->p.threads[0] = threads;
	f->p.nthreads = 1;
	f->p.reps = reps;
	f->p.ceiling = true;
	f->p.variants[0].name = "atomic";
	f->p.variants[1].name = "percpu";
	f->p.nvariants = 2;
	for (unsigned v = 0; v < 2; v++) {
		f->cells[v].variant = v;
		f->cells[v].threads = threads;
		f->cells[v].samples = f->s[v];
		for (unsigned i = 0; i < reps; i++) {
			f->s[v][i].ops_per_s = (v ? b : a)[i];
			f->s[v][i].cpu_share = share;
		}
	}
	f->ceil.threads = threads;
	f->ceil.procs = threads > 1 ? 2 : 1;
	f->ceil.n = threads > 1 ? reps : 0;
	f->ceil.value = ceiling;
	f->r.cells = f->cells;
	f->r.ncells = 2;
	f->r.ceilings = &f->ceil;
	f->r.nceilings = 1;
}

static const char *verdict(struct fake *f)
{
	lab_verdicts(&f->p, &f->r);
	cr_assert_eq(f->r.nverdicts, 1);
	return f->r.verdicts[0].line;
}

static const double A[9] = {100, 101, 102, 103, 104, 105, 106, 107, 108};
static const double B3[9] = {300, 303, 306, 309, 312, 315, 318, 321, 324}; /* 3 x A, pair by pair */

Test(lab_stats, verdict_faster_in_the_documented_form)
{
	struct fake f;
	fake_init(&f, 2, 9, A, B3, 0.97, 1.9);
	const char *l = verdict(&f);
	cr_expect_str_eq(l, "verdict threads=2 percpu/atomic=3.00x ci=3.00-3.00 p=0.0000 cpu_share=0.97: percpu faster");
	free(f.r.verdicts);
	fake_init(&f, 1, 9, B3, A, 0.97, 0);
	l = verdict(&f);
	cr_expect(strstr(l, "percpu/atomic=0.33x") && strstr(l, ": atomic faster"), "%s", l);
	free(f.r.verdicts);
}

Test(lab_stats, verdict_no_difference_needs_a_narrow_ci)
{
	double b[9] = {100.5, 101.5, 102.5, 103.5, 104.5, 105.5, 106.5, 107.5, 108.5}, wide[9];
	struct fake f;
	const char *l;
	fake_init(&f, 1, 9, A, b, 0.95, 0);
	l = verdict(&f);
	cr_expect(strstr(l, ": no significant difference"), "%s", l);
	free(f.r.verdicts);
	/* p near 0.7 again, repetitions within the spread allowed, but the ci
	 * (0.86-1.21) leaves 0.90-1.10: no claim either way */
	double a2[9];
	for (int i = 0; i < 9; i++)
		a2[i] = 100 + 5 * i;
	for (int i = 0; i < 9; i++)
		wide[i] = 1.02 * a2[(4 * i + 3) % 9];
	fake_init(&f, 1, 9, a2, wide, 0.95, 0);
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (p >= 0.01, yet the ci leaves 0.90-1.10"), "%s", l);
	free(f.r.verdicts);
}

Test(lab_stats, verdict_inconclusive_whenever_the_run_cannot_tell)
{
	struct fake f;
	const char *l;

	fake_init(&f, 2, 9, A, B3, 0.79, 1.9); /* the threads did not get the CPUs */
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (cpu_share 0.79 < 0.80"), "%s", l);
	free(f.r.verdicts);
	fake_init(&f, 2, 9, A, B3, 0.97, 1.2); /* the machine gave no second CPU */
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (ceiling 1.20x < 1.40x"), "%s", l);
	free(f.r.verdicts);
	fake_init(&f, 1, 9, A, B3, 0.97, 0);
	f.r.failed = 1; /* a counter's sum or a lock's counts were wrong */
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (a check failed"), "%s", l);
	free(f.r.verdicts);
	double spread[9] = {300, 100, 500, 250, 400, 600, 200, 350, 450};
	fake_init(&f, 1, 9, A, spread, 0.97, 0); /* repetitions disagree */
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (repetitions disagree"), "%s", l);
	free(f.r.verdicts);
	fake_init(&f, 1, 3, A, B3, 0.97, 0); /* 3 reps: the least p is 0.1 */
	l = verdict(&f);
	cr_expect(strstr(l, ": inconclusive (") && strstr(l, "p=0.1000"), "%s", l);
	free(f.r.verdicts);
}
