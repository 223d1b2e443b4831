/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab's statistics and verdict rules (tools/lab/lab_stats.c) on
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
	f->p.th = (struct lab_thresholds){LAB_SHARE_MIN, LAB_SPREAD_MAX, LAB_CEILING_MIN, LAB_ALPHA, LAB_SAME_MARGIN};
	f->r.ncpus = 2;
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
			/* a 1 s cell: ops per CPU-second is ops_per_s / share */
			f->s[v][i].wall_s = 1;
			f->s[v][i].ops = (uint64_t)(f->s[v][i].ops_per_s * 1000);
			f->s[v][i].cpu_s = share * (threads < 2 ? threads : 2) * 1000;
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
	cr_expect_str_eq(l, "verdict threads=2 percpu/atomic=3.00x ci=3.00-3.00 p=0.0000 p_holm=0.0001 cpu_share=0.97: percpu faster");
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
	cr_expect(strstr(l, ": inconclusive (p_holm >= 0.01, yet the ci leaves 0.90-1.10"), "%s", l);
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
	fake_init(&f, 1, 3, A, B3, 0.97, 0); /* 3 reps: the least p is 0.1, and no CI */
	l = verdict(&f);
	cr_expect(strstr(l, "ci=n/a p=0.1000") && strstr(l, ": inconclusive (3 repetitions: a verdict needs 5)"), "%s",
		  l);
	free(f.r.verdicts);
}

/* At 1 thread on a busy machine the wall clock cannot tell, CPU time can. */
Test(lab_stats, verdict_on_cpu_time_at_one_thread)
{
	struct fake f;
	fake_init(&f, 1, 9, A, B3, 0.40, 0);
	lab_verdicts(&f.p, &f.r);
	const struct lab_verdict *v = &f.r.verdicts[0];
	cr_expect(strstr(v->wall.line, ": inconclusive (cpu_share 0.40 < 0.80"), "%s", v->wall.line);
	cr_expect(v->cpu.valid);
	cr_expect(strstr(v->cpu.line, "verdict-cpu threads=1 percpu/atomic=3.00x per CPU-second") &&
		  strstr(v->cpu.line, ": percpu faster"), "%s", v->cpu.line);
	free(f.r.verdicts);
	/* at 2 threads that did not run together, CPU time does not stand for speed */
	fake_init(&f, 2, 9, A, B3, 0.40, 1.9);
	lab_verdicts(&f.p, &f.r);
	v = &f.r.verdicts[0];
	cr_expect(!v->cpu.valid);
	cr_expect(strstr(v->cpu.line, ": not valid (2 threads"), "%s", v->cpu.line);
	free(f.r.verdicts);
	/* at 2 threads that got the CPUs, it does */
	fake_init(&f, 2, 9, A, B3, 0.95, 1.9);
	lab_verdicts(&f.p, &f.r);
	cr_expect(strstr(f.r.verdicts[0].cpu.line, ": percpu faster"), "%s", f.r.verdicts[0].cpu.line);
	free(f.r.verdicts);
}

/* Per CPU-second, the repetitions must agree on the ratio, not on each
 * variant's level: a load that moves both alike is no disagreement. */
Test(lab_stats, verdict_cpu_spread_is_the_ratios)
{
	double a[9], b[9];
	struct fake f;
	for (int i = 0; i < 9; i++) {
		a[i] = 100 * (1 + 0.2 * (i % 3)); /* each variant's spread 0.4 */
		b[i] = 2 * a[i];
	}
	fake_init(&f, 1, 9, a, b, 0.40, 0);
	lab_verdicts(&f.p, &f.r);
	const struct lab_verdict *v = &f.r.verdicts[0];
	cr_expect(strstr(v->cpu.line, ": percpu faster"), "%s", v->cpu.line);
	cr_expect(v->wall.spread_a > 0.25, "wall spread %g", v->wall.spread_a);
	free(f.r.verdicts);
	f.r.verdicts = NULL;
	for (int i = 0; i < 9; i++)
		b[i] = a[(i + 1) % 9] * 1.1; /* unpaired, and a 10% difference: the ratios disagree more */
	fake_init(&f, 1, 9, a, b, 0.40, 0);
	lab_verdicts(&f.p, &f.r);
	cr_expect(strstr(f.r.verdicts[0].cpu.line, ": inconclusive (repetitions disagree"), "%s",
		  f.r.verdicts[0].cpu.line);
	free(f.r.verdicts);
	f.r.verdicts = NULL;
	for (int i = 0; i < 9; i++)
		b[i] = a[(i + 1) % 9] * 3; /* as much disagreement, a difference larger than it */
	fake_init(&f, 1, 9, a, b, 0.40, 0);
	lab_verdicts(&f.p, &f.r);
	cr_expect(strstr(f.r.verdicts[0].cpu.line, ": percpu faster"), "%s", f.r.verdicts[0].cpu.line);
	free(f.r.verdicts);
}

/* Holm over the run's comparisons: a p under alpha alone is not enough
 * when two comparisons were made (here wall clock and CPU time). */
Test(lab_stats, verdict_holm_correction)
{
	double b[9];
	struct fake f;
	for (int i = 0; i < 9; i++)
		b[i] = A[i] + 4.5; /* exact two-sided p = 0.00564 */
	fake_init(&f, 1, 9, A, b, 0.97, 0);
	lab_verdicts(&f.p, &f.r);
	const struct lab_verdict *v = &f.r.verdicts[0];
	cr_expect(fabs(v->wall.p - 0.005636) < 1e-5, "p %g", v->wall.p);
	cr_expect(fabs(v->wall.p_holm - 2 * v->wall.p) < 1e-12, "p_holm %g", v->wall.p_holm);
	cr_expect(fabs(v->cpu.p_holm - 2 * v->cpu.p) < 1e-12, "p_holm %g", v->cpu.p_holm);
	cr_expect(strstr(v->wall.line, ": no significant difference"), "%s", v->wall.line);
	free(f.r.verdicts);
	f.r.verdicts = NULL;
	f.p.th.alpha = 0.02; /* a threshold of the user's (--alpha) */
	lab_verdicts(&f.p, &f.r);
	cr_expect(strstr(f.r.verdicts[0].wall.line, ": percpu faster"), "%s", f.r.verdicts[0].wall.line);
	free(f.r.verdicts);
}
