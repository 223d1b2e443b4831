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
			lab_xorshift(&x);
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

static void column(const struct lab_cell *c, unsigned reps, int what, double *out)
{
	for (unsigned i = 0; i < reps; i++) {
		const struct lab_sample *x = &c->samples[i];
		out[i] = what == 1 ? x->cpu_share : what == 2 ? (x->cpu_s > 0 ? (double)x->ops / x->cpu_s : 0) : x->ops_per_s;
	}
}

static double spread(const double *x, unsigned n)
{
	double m = lab_median(x, n);
	return m > 0 ? (lab_quantile(x, n, 0.75) - lab_quantile(x, n, 0.25)) / m : 1;
}

/* The statistics of one measure: b's over a's.  `paired`: the spread is
 * that of the repetitions' ratios b[i] / a[i] (both figures of a
 * repetition ran minutes apart at most, under the same load), for both
 * variants; else each variant's own. */
static void measure(const double *a, const double *b, unsigned reps, bool paired, struct lab_measure *m)
{
	double ma = lab_median(a, reps);
	m->ratio = ma > 0 ? lab_median(b, reps) / ma : 0;
	m->ci = reps >= LAB_MIN_REPS;
	if (m->ci)
		lab_ratio_ci(a, b, reps, &m->ci_lo, &m->ci_hi);
	m->p = lab_mwu_p(a, reps, b, reps);
	m->p_holm = m->p;
	m->spread_a = spread(a, reps);
	m->spread_b = spread(b, reps);
	m->paired = paired;
	if (paired) {
		double r[LAB_MAX_REPS];
		for (unsigned i = 0; i < reps; i++)
			r[i] = a[i] > 0 ? b[i] / a[i] : 0;
		m->spread_a = m->spread_b = spread(r, reps);
	}
}

/*
 * Holm's step-down correction: the k-th smallest p (from 0) is multiplied
 * by (m - k), and the adjusted values made non-decreasing, so that
 * "p_holm < alpha" holds the chance of any false "faster" among the m
 * comparisons at alpha.
 */
void lab_holm(const double *p, double *p_holm, unsigned m)
{
	unsigned order[LAB_MAX_COMPARISONS];
	if (m > LAB_MAX_COMPARISONS)
		abort();
	/* insertion sort by p: m is a few dozen at most */
	for (unsigned i = 0; i < m; i++) {
		order[i] = i;
		for (unsigned j = i; j > 0 && p[order[j]] < p[order[j - 1]]; j--) {
			unsigned t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	}
	double run = 0;
	for (unsigned k = 0; k < m; k++) {
		double adj = p[order[k]] * (m - k);
		run = adj > run ? adj : run;
		p_holm[order[k]] = run < 1 ? run : 1;
	}
}

/*
 * The outcome of one measure: `blocked` (the run could not measure it),
 * then too few repetitions, then repetitions that disagree (spread over
 * spread_max; for a paired measure, unless the whole CI lies further from
 * 1 than that spread: the difference is larger than the disagreement),
 * each "inconclusive (REASON)".  Only then the statistics:
 * "X faster" needs Holm's p < alpha and the CI on X's side of 1; "no
 * significant difference" needs p >= alpha and the whole CI within 1 -+
 * same_margin (a difference of more than that is ruled out); anything
 * between is inconclusive, saying why.
 */
static void judge(const struct lab_params *p, struct lab_measure *m, const char *na, const char *nb, const char *blocked)
{
	const struct lab_thresholds *th = &p->th;
	double sp = m->spread_a > m->spread_b ? m->spread_a : m->spread_b;
	if (blocked)
		snprintf(m->outcome, sizeof(m->outcome), "%s", blocked);
	else if (!m->ci)
		snprintf(m->outcome, sizeof(m->outcome), "inconclusive (%u repetitions: a verdict needs %d)", p->reps,
			 LAB_MIN_REPS);
	else if (sp > th->spread_max && !(m->paired && (m->ci_lo > 1 + sp || m->ci_hi * (1 + sp) < 1)))
		snprintf(m->outcome, sizeof(m->outcome), "inconclusive (repetitions disagree: spread %.2f > %.2f)", sp,
			 th->spread_max);
	else if (m->p_holm < th->alpha && m->ci_lo > 1)
		snprintf(m->outcome, sizeof(m->outcome), "%s faster", nb);
	else if (m->p_holm < th->alpha && m->ci_hi < 1)
		snprintf(m->outcome, sizeof(m->outcome), "%s faster", na);
	else if (m->p_holm >= th->alpha && m->ci_lo >= 1 - th->same_margin && m->ci_hi <= 1 + th->same_margin)
		snprintf(m->outcome, sizeof(m->outcome), "no significant difference");
	else if (m->p_holm < th->alpha)
		snprintf(m->outcome, sizeof(m->outcome), "inconclusive (p_holm < %.2f but the ci spans 1)", th->alpha);
	else
		snprintf(m->outcome, sizeof(m->outcome), "inconclusive (p_holm >= %.2f, yet the ci leaves %.2f-%.2f: more repetitions)",
			 th->alpha, 1 - th->same_margin, 1 + th->same_margin);
}

/* "ci=LO-HI" or "ci=n/a" below LAB_MIN_REPS repetitions. */
static const char *ci_text(const struct lab_measure *m, char *buf, size_t len)
{
	if (m->ci)
		snprintf(buf, len, "ci=%.2f-%.2f", m->ci_lo, m->ci_hi);
	else
		snprintf(buf, len, "ci=n/a");
	return buf;
}

/*
 * Two verdicts per thread count and variant.  On wall-clock ops/s: first
 * a failed check, then a run that did not get the CPUs (a cell's median
 * share under share_min, or for more than one thread a ceiling under
 * ceiling_min) make it inconclusive.  On ops per CPU-second: valid at 1
 * thread, where CPU time is the thread's work whoever else runs, and at
 * threads <= CPUs when the shares show the threads ran together; at more
 * threads their overlap, not their CPU time, decides, and it says so.
 */
void lab_verdicts(const struct lab_params *p, struct lab_result *r)
{
	unsigned nv = p->nvariants, reps = p->reps;
	double a[LAB_MAX_REPS], b[LAB_MAX_REPS], sa[LAB_MAX_REPS], sb[LAB_MAX_REPS];
	char why[LAB_MAX_THREADS_LIST * LAB_MAX_VARIANTS][2][160];

	r->nverdicts = 0;
	free(r->verdicts);
	r->verdicts = calloc(p->nthreads * (nv ? nv : 1), sizeof(*r->verdicts));
	if (!r->verdicts)
		return;
	struct lab_measure *ms[LAB_MAX_COMPARISONS];
	unsigned nms = 0;
	for (unsigned ti = 0; ti < p->nthreads; ti++)
		for (unsigned vi = 1; vi < nv; vi++) {
			const struct lab_cell *ca = &r->cells[ti * nv], *cb = &r->cells[ti * nv + vi];
			unsigned k = r->nverdicts;
			struct lab_verdict *v = &r->verdicts[r->nverdicts++];
			double sha, shb;

			v->threads = p->threads[ti];
			v->a = 0;
			v->b = vi;
			column(ca, reps, 0, a);
			column(cb, reps, 0, b);
			measure(a, b, reps, false, &v->wall);
			column(ca, reps, 1, sa);
			column(cb, reps, 1, sb);
			sha = lab_median(sa, reps);
			shb = lab_median(sb, reps);
			v->cpu_share = sha < shb ? sha : shb;
			v->ceiling = r->ceilings[ti].n ? r->ceilings[ti].value : 0;
			column(ca, reps, 2, a);
			column(cb, reps, 2, b);
			/* CPU time per operation moves with what shares the core
			 * (caches, the sibling thread) from one repetition to the
			 * next, for both variants alike: the ratios must agree */
			measure(a, b, reps, true, &v->cpu);

			why[k][0][0] = why[k][1][0] = '\0';
			if (r->failed)
				snprintf(why[k][0], sizeof(why[k][0]), "inconclusive (a check failed: see above)");
			else if (v->cpu_share < p->th.share_min)
				snprintf(why[k][0], sizeof(why[k][0]),
					 "inconclusive (cpu_share %.2f < %.2f: the threads did not get the CPUs%s)",
					 v->cpu_share, p->th.share_min, v->threads == 1 ? "; see verdict-cpu" : "");
			else if (v->threads > 1 && r->ceilings[ti].procs > 1 && p->ceiling && v->ceiling < p->th.ceiling_min)
				snprintf(why[k][0], sizeof(why[k][0]),
					 "inconclusive (ceiling %.2fx < %.2fx: the machine did not give %u CPUs)", v->ceiling,
					 p->th.ceiling_min, r->ceilings[ti].procs);
			v->cpu.valid = v->threads == 1 || (v->threads <= r->ncpus && v->cpu_share >= p->th.share_min);
			if (r->failed)
				snprintf(why[k][1], sizeof(why[k][1]), "inconclusive (a check failed: see above)");
			else if (!v->cpu.valid)
				snprintf(why[k][1], sizeof(why[k][1]),
					 "not valid (%u threads: their overlap, not their CPU time, decides; cpu_share %.2f < %.2f)",
					 v->threads, v->cpu_share, p->th.share_min);
			v->wall.valid = true;
			if (!why[k][0][0] && v->wall.ci)
				ms[nms++] = &v->wall;
			if (!why[k][1][0] && v->cpu.ci)
				ms[nms++] = &v->cpu;
		}
	/* Holm over every comparison of the run (each valid measure of each verdict) */
	double p_of[LAB_MAX_COMPARISONS] = {0}, p_holm[LAB_MAX_COMPARISONS];
	for (unsigned k = 0; k < nms; k++)
		p_of[k] = ms[k]->p;
	lab_holm(p_of, p_holm, nms);
	for (unsigned k = 0; k < nms; k++)
		ms[k]->p_holm = p_holm[k];
	for (unsigned k = 0; k < r->nverdicts; k++) {
		struct lab_verdict *v = &r->verdicts[k];
		const char *na = p->variants[v->a].name, *nb = p->variants[v->b].name;
		char ci[48];
		judge(p, &v->wall, na, nb, why[k][0][0] ? why[k][0] : NULL);
		judge(p, &v->cpu, na, nb, why[k][1][0] ? why[k][1] : NULL);
		snprintf(v->wall.line, sizeof(v->wall.line),
			 "verdict threads=%u %s/%s=%.2fx %s p=%.4f p_holm=%.4f cpu_share=%.2f: %s", v->threads, nb, na,
			 v->wall.ratio, ci_text(&v->wall, ci, sizeof(ci)), v->wall.p, v->wall.p_holm, v->cpu_share,
			 v->wall.outcome);
		snprintf(v->cpu.line, sizeof(v->cpu.line),
			 "verdict-cpu threads=%u %s/%s=%.2fx per CPU-second %s p=%.4f p_holm=%.4f: %s", v->threads, nb, na,
			 v->cpu.ratio, ci_text(&v->cpu, ci, sizeof(ci)), v->cpu.p, v->cpu.p_holm, v->cpu.outcome);
		/* the wall-clock figures under their old names (JSON, table) */
		v->ratio = v->wall.ratio;
		v->ci_lo = v->wall.ci_lo;
		v->ci_hi = v->wall.ci_hi;
		v->p = v->wall.p;
		v->spread_a = v->wall.spread_a;
		v->spread_b = v->wall.spread_b;
		snprintf(v->outcome, sizeof(v->outcome), "%s", v->wall.outcome);
		snprintf(v->line, sizeof(v->line), "%s", v->wall.line);
	}
}
