/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Medians, Mann-Whitney U, a bootstrap CI of a ratio, and the verdict that
 * refuses to call a difference it could not have measured.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double lab_quantile(const double *x, unsigned n, double q)
{
	double buf[64], *s = n <= 64 ? buf : malloc(n * sizeof(*s));
	if (n == 0 || !s)
		return 0;
	memcpy(s, x, n * sizeof(*x));
	qsort(s, n, sizeof(*s), cmp_double);
	double pos = q * (n - 1);
	unsigned i = (unsigned)pos;
	double f = pos - i, v = i + 1 < n ? s[i] * (1 - f) + s[i + 1] * f : s[n - 1];
	if (s != buf)
		free(s);
	return v;
}

double lab_median(const double *x, unsigned n)
{
	return lab_quantile(x, n, 0.5);
}

/*
 * Two-sided Mann-Whitney U p-value.  Exact (the distribution of U counted
 * by recursion) when there are no ties and both samples have at most 50
 * values; otherwise the normal approximation with the tie correction and
 * a continuity correction.
 */
double lab_mwu_p(const double *a, unsigned na, const double *b, unsigned nb)
{
	unsigned n = na + nb;
	double v[2 * LAB_MAX_REPS], rank[2 * LAB_MAX_REPS];
	int from_a[2 * LAB_MAX_REPS];
	bool ties = false;

	if (na == 0 || nb == 0)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		v[i] = i < na ? a[i] : b[i - na];
		from_a[i] = i < na;
	}
	/* midranks */
	for (unsigned i = 0; i < n; i++) {
		unsigned lt = 0, eq = 0;
		for (unsigned j = 0; j < n; j++) {
			lt += v[j] < v[i];
			eq += v[j] == v[i];
		}
		rank[i] = lt + (eq + 1) / 2.0;
		if (eq > 1)
			ties = true;
	}
	double ra = 0;
	for (unsigned i = 0; i < n; i++)
		if (from_a[i])
			ra += rank[i];
	double u = ra - na * (na + 1) / 2.0;
	if (!ties && na <= 50 && nb <= 50) {
		/* c[i][j][k]: orderings of i a's and j b's with U = k, by the
		 * last (largest) value: an a adds j to U. */
		unsigned umax = na * nb;
		double *prev = calloc((size_t)(nb + 1) * (umax + 1), sizeof(double));
		double *cur = calloc((size_t)(nb + 1) * (umax + 1), sizeof(double));
		if (!prev || !cur) {
			free(prev);
			free(cur);
			return 1;
		}
#define C(t, j, k) t[(size_t)(j) * (umax + 1) + (k)]
		for (unsigned j = 0; j <= nb; j++)
			C(prev, j, 0) = 1; /* i = 0 */
		for (unsigned i = 1; i <= na; i++) {
			memset(cur, 0, (size_t)(nb + 1) * (umax + 1) * sizeof(double));
			for (unsigned j = 0; j <= nb; j++)
				for (unsigned k = 0; k <= i * j; k++) {
					double x = k >= j ? C(prev, j, k - j) : 0;
					if (j > 0)
						x += C(cur, j - 1, k);
					C(cur, j, k) = x;
				}
			double *t = prev;
			prev = cur;
			cur = t;
		}
		double total = 0, le = 0, ge = 0;
		unsigned ui = (unsigned)u;
		for (unsigned k = 0; k <= umax; k++) {
			double x = C(prev, nb, k);
			total += x;
			if (k <= ui)
				le += x;
			if (k >= ui)
				ge += x;
		}
#undef C
		free(prev);
		free(cur);
		double p = 2 * (le < ge ? le : ge) / total;
		return p > 1 ? 1 : p;
	}
	double mu = na * nb / 2.0, tie = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned eq = 0;
		for (unsigned j = 0; j < n; j++)
			eq += v[j] == v[i];
		tie += eq * (double)eq - 1; /* a group of t, counted t times: t^3 - t */
	}
	double sigma = sqrt(na * nb / 12.0 * ((n + 1) - tie / (n * (double)(n - 1))));
	if (sigma == 0)
		return 1;
	double z = (fabs(u - mu) - 0.5) / sigma;
	if (z < 0)
		z = 0;
	return erfc(z / sqrt(2));
}

/*
 * Percentile bootstrap of median(b) / median(a) over 2000 resamples of the
 * repetitions, resampled as pairs: the repetitions are interleaved, so a
 * pair shares the load of its moment.  A fixed seed: the same samples give
 * the same interval.
 */
void lab_ratio_ci(const double *a, const double *b, unsigned n, double *lo, double *hi)
{
	enum { B = 2000 };
	static double ratios[B];
	double ra[LAB_MAX_REPS], rb[LAB_MAX_REPS];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned k = 0; k < B; k++) {
		for (unsigned i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			unsigned j = (unsigned)(x % n);
			ra[i] = a[j];
			rb[i] = b[j];
		}
		double ma = lab_median(ra, n);
		ratios[k] = ma > 0 ? lab_median(rb, n) / ma : 0;
	}
	*lo = lab_quantile(ratios, B, 0.025);
	*hi = lab_quantile(ratios, B, 0.975);
}

static void column(const struct lab_cell *c, unsigned reps, int share, double *out)
{
	for (unsigned i = 0; i < reps; i++)
		out[i] = share ? c->samples[i].cpu_share : c->samples[i].ops_per_s;
}

static double spread(const double *x, unsigned n)
{
	double m = lab_median(x, n);
	return m > 0 ? (lab_quantile(x, n, 0.75) - lab_quantile(x, n, 0.25)) / m : 1;
}

/*
 * The verdict, in this order: a failed check, then a run that did not
 * get the CPUs (a cell's median share under LAB_SHARE_MIN, or for more
 * than one thread a ceiling under LAB_CEILING_MIN), then repetitions that
 * disagree (spread over LAB_SPREAD_MAX), each "inconclusive (REASON)".
 * Only then the statistics: "X faster" needs p < LAB_ALPHA and the CI on
 * X's side of 1; "no significant difference" needs p >= LAB_ALPHA and the
 * whole CI within 1 -+ LAB_SAME_MARGIN (a difference of more than that is
 * ruled out); anything between is inconclusive, saying why.
 */
void lab_verdicts(const struct lab_params *p, struct lab_result *r)
{
	unsigned nv = p->nvariants, reps = p->reps;
	double a[LAB_MAX_REPS], b[LAB_MAX_REPS], sa[LAB_MAX_REPS], sb[LAB_MAX_REPS];

	r->nverdicts = 0;
	free(r->verdicts);
	r->verdicts = calloc(p->nthreads * (nv ? nv : 1), sizeof(*r->verdicts));
	if (!r->verdicts)
		return;
	for (unsigned ti = 0; ti < p->nthreads; ti++)
		for (unsigned vi = 1; vi < nv; vi++) {
			const struct lab_cell *ca = &r->cells[ti * nv], *cb = &r->cells[ti * nv + vi];
			struct lab_verdict *v = &r->verdicts[r->nverdicts++];
			const char *na = p->variants[0].name, *nb = p->variants[vi].name;
			double sha, shb;

			column(ca, reps, 0, a);
			column(cb, reps, 0, b);
			column(ca, reps, 1, sa);
			column(cb, reps, 1, sb);
			v->threads = p->threads[ti];
			v->a = 0;
			v->b = vi;
			v->ratio = lab_median(a, reps) > 0 ? lab_median(b, reps) / lab_median(a, reps) : 0;
			lab_ratio_ci(a, b, reps, &v->ci_lo, &v->ci_hi);
			v->p = lab_mwu_p(a, reps, b, reps);
			sha = lab_median(sa, reps);
			shb = lab_median(sb, reps);
			v->cpu_share = sha < shb ? sha : shb;
			v->spread_a = spread(a, reps);
			v->spread_b = spread(b, reps);
			v->ceiling = r->ceilings[ti].n ? r->ceilings[ti].value : 0;
			double sp = v->spread_a > v->spread_b ? v->spread_a : v->spread_b;
			if (r->failed)
				snprintf(v->outcome, sizeof(v->outcome), "inconclusive (a check failed: see above)");
			else if (v->cpu_share < LAB_SHARE_MIN)
				snprintf(v->outcome, sizeof(v->outcome),
					 "inconclusive (cpu_share %.2f < %.2f: the threads did not get the CPUs)",
					 v->cpu_share, LAB_SHARE_MIN);
			else if (v->threads > 1 && r->ceilings[ti].procs > 1 && p->ceiling &&
				 v->ceiling < LAB_CEILING_MIN)
				snprintf(v->outcome, sizeof(v->outcome),
					 "inconclusive (ceiling %.2fx < %.2fx: the machine did not give %u CPUs)", v->ceiling,
					 LAB_CEILING_MIN, r->ceilings[ti].procs);
			else if (sp > LAB_SPREAD_MAX)
				snprintf(v->outcome, sizeof(v->outcome),
					 "inconclusive (repetitions disagree: spread %.2f > %.2f)", sp, LAB_SPREAD_MAX);
			else if (v->p < LAB_ALPHA && v->ci_lo > 1)
				snprintf(v->outcome, sizeof(v->outcome), "%s faster", nb);
			else if (v->p < LAB_ALPHA && v->ci_hi < 1)
				snprintf(v->outcome, sizeof(v->outcome), "%s faster", na);
			else if (v->p >= LAB_ALPHA && v->ci_lo >= 1 - LAB_SAME_MARGIN && v->ci_hi <= 1 + LAB_SAME_MARGIN)
				snprintf(v->outcome, sizeof(v->outcome), "no significant difference");
			else if (v->p < LAB_ALPHA)
				snprintf(v->outcome, sizeof(v->outcome), "inconclusive (p < %.2f but the ci spans 1)",
					 LAB_ALPHA);
			else
				snprintf(v->outcome, sizeof(v->outcome),
					 "inconclusive (p >= %.2f, yet the ci leaves %.2f-%.2f: more repetitions)", LAB_ALPHA,
					 1 - LAB_SAME_MARGIN, 1 + LAB_SAME_MARGIN);
			snprintf(v->line, sizeof(v->line), "verdict threads=%u %s/%s=%.2fx ci=%.2f-%.2f p=%.4f cpu_share=%.2f: %s",
				 v->threads, nb, na, v->ratio, v->ci_lo, v->ci_hi, v->p, v->cpu_share, v->outcome);
		}
}
