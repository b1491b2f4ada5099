"""The reference figures of grader/compare_test.go, computed outside aa-grade.

Run with a Python that has numpy and SciPy (Debian bookworm: /usr/bin/python3 with
python3-scipy, SciPy 1.10.1):  python3 grader/testdata/compare_reference.py
"""
from collections import Counter

import numpy as np
from scipy import stats


def paired_mean(x, y, axis):
    return np.mean(x - y, axis=axis)


def exact_sign_flip_p(d):
    """Two-sided p of the sign-flip test over integer differences, by the distribution of
    their signed sum (dynamic programming): every one of the 2^n patterns, counted."""
    dist = Counter({0: 1})
    for x in d:
        nxt = Counter()
        for s, c in dist.items():
            nxt[s + x] += c
            nxt[s - x] += c
        dist = nxt
    observed = abs(sum(d))
    return sum(c for s, c in dist.items() if abs(s) >= observed) / sum(dist.values())


# 12 tasks: SciPy's exact permutation test and its percentile bootstrap.
a = np.array([0.0, 1.0, 0.5, 1 / 3, 1.0, 0.0, 2 / 3, 0.0, 1.0, 0.5, 0.0, 0.25])
b = np.array([0.5, 1.0, 1.0, 2 / 3, 1.0, 0.0, 1.0, 1 / 3, 2 / 3, 1.0, 0.5, 0.25])
res = stats.permutation_test((b, a), paired_mean, permutation_type="samples", n_resamples=np.inf,
                             alternative="two-sided", vectorized=True)
ci = stats.bootstrap((b - a,), np.mean, confidence_level=0.95, n_resamples=200000, method="percentile",
                     random_state=np.random.default_rng(1)).confidence_interval
print("12 tasks: mean %.10f, p %.10f, 95%% CI %.6f-%.6f" % ((b - a).mean(), res.pvalue, ci.low, ci.high))

# 20 tasks (scores in thirds): SciPy's exact test, and the dynamic programme agrees.
a = np.array([3, 2, 2, 3, 2, 3, 3, 0, 0, 1, 1, 3, 3, 0, 1, 3, 0, 3, 0, 1])
b = np.array([3, 2, 2, 3, 3, 3, 3, 0, 0, 2, 2, 3, 3, 2, 3, 3, 1, 3, 0, 3])
res = stats.permutation_test((b / 3, a / 3), paired_mean, permutation_type="samples", n_resamples=np.inf,
                             alternative="two-sided", vectorized=True)
print("20 tasks: mean %.10f, p %.10f (by sums %.10f)" % ((b - a).mean() / 3, res.pvalue, exact_sign_flip_p(b - a)))

# 25 tasks: 2^25 patterns, too many for SciPy's enumeration; the dynamic programme is exact.
a = np.array([0, 0, 3, 1, 2, 2, 2, 0, 1, 0, 1, 3, 2, 0, 2, 0, 3, 3, 3, 2, 3, 1, 0, 2, 1])
b = np.array([1, 2, 3, 3, 1, 2, 3, 0, 2, 0, 2, 3, 3, 2, 3, 2, 3, 2, 2, 2, 3, 3, 0, 3, 1])
print("25 tasks: mean %.10f, p %.10f" % ((b - a).mean() / 3, exact_sign_flip_p(b - a)))
