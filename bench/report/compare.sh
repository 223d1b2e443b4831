#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Compare two bga-scale results (build/demo/runs/*.json): per-cell change
# and its significance (Mann-Whitney U on the raw repetitions).
#   bench/report/compare.sh OLD.json NEW.json [--alpha 0.05] [--fail-on-regression PCT]
# Exit status: 0, or 1 with --fail-on-regression when some cell got
# significantly slower by more than PCT percent, so it can drive
#   git bisect run sh -c 'cmake --build build/release --target bga-scale &&
#     bench/scale/demo.sh build/release -w churn -t 2,64 -r 7 &&
#     bench/report/compare.sh good.json build/demo/scale.json --fail-on-regression 10'
# 2 for bad usage.
if [ $# -lt 2 ]; then
	echo "usage: bench/report/compare.sh OLD.json NEW.json [--alpha A] [--fail-on-regression PCT]" >&2
	exit 2
fi
here=$(dirname "$0")
old=$1
new=$2
shift 2
# Debian's scipy lives with the system python; one earlier on PATH may lack it.
for py in /usr/bin/python3 python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import scipy' 2>/dev/null; then
		exec "$py" "$here/report.py" --compare "$old" "$new" "$@"
	fi
done
echo "compare: no python3 with scipy (Debian: apt-get install python3-scipy)" >&2
exit 2
