"""Live check of server/stats against scipy: generates cases (Welch, paired, one-sample 'less',
CI bounds, Holm, per-variant summaries and time comparisons with none, some and all runs
reaching the target, with n = 1, zero variance, identical samples and huge n; the steps-to-target
and ms/step split; the confound check's one-way ANOVA against scipy.stats.f_oneway; `ablate plan`'s
power against scipy.stats.nct), runs them through stats_probe and compares at 1e-9 relative.
Exit 77 (ctest skip) when scipy is missing.

Usage: stats_vs_scipy.py PATH/TO/stats_probe
"""
import math
import subprocess
import sys
import warnings

try:
    import numpy as np
    from scipy import stats
except ImportError:
    print("SKIP: scipy/numpy not importable by %s; install python3-scipy" % sys.executable)
    sys.exit(77)

REL = 1e-9
# scipy's t.ppf (cephes stdtrit) at non-integer df is off by ~1e-10 in probability
# (special.stdtr(df, t.ppf(0.975, df)) - 0.975 ~ 1.6e-10 at df = 5.26, while Boost's quantile
# round-trips to 0), so Welch CI half-widths are compared at 1e-8.
WELCH_REL = [REL, REL, REL, REL, 1e-8]
# With 90,000 values numpy's pairwise summation and our sequential sum differ at ~1e-11 in t,
# which a p of 1e-141 amplifies by ~t^2.
HUGE_REL = 1e-7


def fmt(xs):
    return " ".join("%.17g" % x for x in xs)


def welch_ref(a, b):
    a, b = np.asarray(a), np.asarray(b)
    qa, qb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff = a.mean() - b.mean()
    if qa + qb == 0:  # documented deviation: scipy gives NaN
        return None if diff != 0 else [0.0, 1.0, len(a) + len(b) - 2, 0.0, 0.0]
    r = stats.ttest_ind(a, b, equal_var=False)
    df = (qa + qb) ** 2 / (qa ** 2 / (len(a) - 1) + qb ** 2 / (len(b) - 1))
    return [r.statistic, r.pvalue, df, diff, stats.t.ppf(0.975, df) * math.sqrt(qa + qb)]


def paired_ref(a, b):
    d = np.subtract(a, b)
    if d.var(ddof=1) == 0:
        return None
    r = stats.ttest_rel(a, b)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return [r.statistic, r.pvalue, len(d) - 1, d.mean(), half]


def holm_ref(p):
    m = len(p)
    out, run = [0.0] * m, 0.0
    for k, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        run = max(run, min(1.0, (m - k) * p[i]))
        out[i] = run
    return out


def ci_ref(x):
    if len(x) == 0:
        return [0]
    if len(x) == 1:
        return [1, x[0]]
    n = len(x)
    return [n, np.mean(x), stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / math.sqrt(n)]


def runs_text(runs):
    return fmt([v for r in runs for v in (r[0], 1.0 if r[1] else 0.0, r[2])])


def variant_ref(runs):
    """n, n_reached, then (n, mean, CI half-width) of final loss over all runs and of time over
    reached runs only: a run that never reached the target has no time to average."""
    out = [len(runs), sum(1 for r in runs if r[1])]
    for xs in ([r[0] for r in runs], [r[2] for r in runs if r[1]]):
        c = ci_ref(xs)
        out += c + [math.nan] * (3 - len(c))
    return out


def cmptime_ref(a, b):
    ta, tb = [r[2] for r in a if r[1]], [r[2] for r in b if r[1]]
    return "none" if len(ta) < 2 or len(tb) < 2 else welch_ref(ta, tb)


def random_runs(rng, n, reach_prob):
    return [(3.28 + 0.003 * rng.standard_normal(), bool(rng.uniform() < reach_prob),
             150000 + 3000 * rng.standard_normal()) for _ in range(n)]


def outcome_cases(rng):
    cases = []
    probs = [0.0, 0.3, 0.7, 1.0]  # none, some, most and all runs reached
    for i in range(12):
        runs = random_runs(rng, int(rng.integers(1, 10)), probs[i % 4])
        cases.append(("variant " + runs_text(runs), variant_ref(runs),
                      "variant reach=%.1f n=%d" % (probs[i % 4], len(runs))))
    for i in range(10):
        a = random_runs(rng, int(rng.integers(2, 10)), probs[i % 4])
        b = random_runs(rng, int(rng.integers(2, 10)), probs[(i + 1) % 4])
        cases.append(("cmptime %s ; %s" % (runs_text(a), runs_text(b)), cmptime_ref(a, b),
                      "cmptime %d" % i, WELCH_REL))
    return cases


def split_ref(a, b):
    """Steps to target (reached runs) and ms/step (all runs) of A, then A-vs-B Welch for each."""
    out = []
    for key, pick in ((3, lambda r: r[1]), (4, lambda r: True)):
        c = ci_ref([r[key] for r in a if pick(r)])
        out += c + [math.nan] * (3 - len(c))
    for key, pick in ((3, lambda r: r[1]), (4, lambda r: True)):
        xa, xb = [r[key] for r in a if pick(r)], [r[key] for r in b if pick(r)]
        w = welch_ref(xa, xb) if len(xa) >= 2 and len(xb) >= 2 else None
        out += w if w is not None else [math.nan] * 5
    return out


def split_runs(rng, n, reach_prob, step_ms, steps):
    runs = []
    for _ in range(n):
        ms = step_ms + 1.5 * rng.standard_normal()
        st = float(round(steps + 40 * rng.standard_normal()))
        runs.append((3.28 + 0.003 * rng.standard_normal(), bool(rng.uniform() < reach_prob),
                     ms * st, st, ms))
    return runs


def split_text(runs):
    return fmt([v for r in runs for v in (r[0], 1.0 if r[1] else 0.0, r[2], r[3], r[4])])


def split_cases(rng):
    cases = []
    probs = [0.0, 0.5, 1.0, 1.0]
    for i in range(10):
        a = split_runs(rng, int(rng.integers(2, 9)), probs[i % 4], 130 + i, 1400 - 20 * i)
        b = split_runs(rng, int(rng.integers(2, 9)), probs[(i + 2) % 4], 130, 1400)
        cases.append(("split %s ; %s" % (split_text(a), split_text(b)), split_ref(a, b),
                      "split %d" % i, [REL] * 6 + [REL, REL, REL, REL, 1e-8] * 2))
    return cases


def anova_cases(rng):
    cases = []
    for i in range(10):
        k = int(rng.integers(2, 6))
        groups = [110 + (i % 3) * rng.uniform(0, 5) * g + 2 * rng.standard_normal(int(rng.integers(1, 9)))
                  for g in range(k)]
        if sum(len(g) for g in groups) - k < 1:
            continue
        r = stats.f_oneway(*groups)
        n = sum(len(g) for g in groups)
        cases.append(("anova " + " ; ".join(fmt(g) for g in groups),
                      [r.statistic, r.pvalue, k - 1, n - k], "anova %d" % i))
    # The demo: 109 ms/step for the baseline drifting to 203 for the last variant.
    drift = [[109, 111, 108], [140, 138, 150], [203, 199, 207]]
    r = stats.f_oneway(*drift)
    cases.append(("anova " + " ; ".join(fmt(g) for g in drift), [r.statistic, r.pvalue, 2, 6],
                  "anova drift"))
    single = stats.f_oneway([1, 2], [3])  # a group of one value still counts (N - k = 1)
    cases.append(("anova 1 2 ; 3", [single.statistic, single.pvalue, 1, 1], "anova singleton"))
    cases.append(("anova 1 2 3", "none", "anova one group"))
    return cases


def power_ref(n, d, alpha=0.05):
    df = 2 * n - 2
    crit = stats.t.ppf(1 - alpha / 2, df)
    ncp = d * math.sqrt(n / 2)
    with warnings.catch_warnings():  # scipy's nct warns at df = 2 but returns the right value
        warnings.simplefilter("ignore", RuntimeWarning)
        return stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp)


def simulated_power(n, d, sims=200000):
    """Power by simulation, independent of the noncentral t: the share of two-sample t-tests on
    normal data (means d apart, sd 1) with p < 0.05."""
    rng = np.random.default_rng(16)
    a = rng.standard_normal((sims, n)) + d
    b = rng.standard_normal((sims, n))
    return float(np.mean(stats.ttest_ind(a, b, axis=1).pvalue < 0.05))


def seeds_ref(d, power=0.8):
    n = 2
    while power_ref(n, d) < power:
        n += 1
    return n


def power_cases():
    cases = []
    for n, d in [(2, 1.0), (3, 2.0), (8, 1.0), (16, 1.0), (16, 0.5), (50, 0.3), (200, 0.25)]:
        cases.append(("power %d %.17g" % (n, d), [power_ref(n, d)], "power n=%d d=%g" % (n, d),
                      1e-7))
    for d in [2.0, 1.0, 0.8, 0.5, 0.3, 0.2]:
        cases.append(("seeds %.17g" % d, [seeds_ref(d)], "seeds d=%g" % d))
    # And against simulation (sd of a 200,000-test estimate is at most 0.0011).
    for n, d in [(8, 1.0), (17, 1.0)]:
        cases.append(("power %d %.17g" % (n, d), [simulated_power(n, d)],
                      "power n=%d d=%g by simulation" % (n, d), 0.01))
    return cases


def contrast_ref(terms):
    """A linear contrast of independent means with Welch-Satterthwaite df (decomposition.h)."""
    est = sum(w * np.mean(x) for w, x in terms)
    qs = [w * w * np.var(x, ddof=1) / len(x) for w, x in terms]
    se2 = sum(qs)
    df = se2 ** 2 / sum(q * q / (len(x) - 1) for q, (_, x) in zip(qs, terms))
    t = est / math.sqrt(se2)
    return [t, 2 * stats.t.sf(abs(t), df), df, est, stats.t.ppf(0.975, df) * math.sqrt(se2)]


def contrast_text(terms):
    return "contrast " + " ; ".join(fmt([w] + list(x)) for w, x in terms)


def decomp_ref(k, groups):
    """Add-one-in (FROM + c vs FROM) and leave-one-out (TO vs TO - c) Welch tests by scipy,
    Holm over the 2k p-values, and the interaction TO + (k-1) FROM - sum(FROM + c)."""
    frm, to, adds, drops = groups[0], groups[1], groups[2:2 + k], groups[2 + k:]
    tests = [stats.ttest_ind(a, frm, equal_var=False) for a in adds]
    tests += [stats.ttest_ind(to, d, equal_var=False) for d in drops]
    holm = holm_ref([t.pvalue for t in tests])
    out = []
    for c in range(k):
        for j, (a, b) in ((c, (adds[c], frm)), (k + c, (to, drops[c]))):
            w = welch_ref(a, b)
            out += [np.mean(a) - np.mean(b), w[4], tests[j].pvalue, holm[j]]
    singles = sum(np.mean(a) - np.mean(frm) for a in adds)
    inter = contrast_ref([(1.0, to), (k - 1.0, frm)] + [(-1.0, a) for a in adds])
    return out + [inter[3], inter[4], inter[1], np.mean(to) - np.mean(frm), singles]


def decomposition_cases(rng):
    cases = []
    for i in range(12):
        terms = [(float(w), 150000 + 3000 * rng.standard_normal(rng.integers(2, 9)))
                 for w in rng.choice([-1.0, 1.0, 2.0, 3.0], size=rng.integers(2, 6))]
        cases.append((contrast_text(terms), contrast_ref(terms), "contrast %d" % i, 1e-8))
    # Two groups with weights 1, -1: exactly scipy's Welch test.
    a, b = 1000 + 30 * rng.standard_normal(6), 1040 + 20 * rng.standard_normal(5)
    r = stats.ttest_ind(a, b, equal_var=False)
    cases.append((contrast_text([(1.0, a), (-1.0, b)]), [r.statistic, r.pvalue] +
                  welch_ref(a, b)[2:], "contrast = welch", WELCH_REL))
    cases.append(("contrast 1 5 5 5 ; -1 5 5", [0.0, 1.0, 3, 0.0, 0.0], "contrast zero noise"))
    cases.append(("contrast 1 5 ; -1 5 5", "none", "contrast n=1"))
    for k in (2, 3, 4):
        for i in range(3):
            n = int(rng.integers(3, 9))
            groups = [list(1000 + rng.uniform(-100, 0) * (j > 0) + 20 * rng.standard_normal(n))
                      for j in range(2 + 2 * k)]
            text = "decomp %d ; " % k + " ; ".join(fmt(g) for g in groups)
            cases.append((text, decomp_ref(k, groups), "decomp k=%d %d" % (k, i), 1e-8))
    return cases


def build_cases(rng):
    cases = []  # (line, expected list or None for "check by rule", label)
    for i in range(20):
        na, nb = rng.integers(2, 12, size=2)
        sa, sb = rng.uniform(1e-4, 3e-3, size=2)
        a = 3.279 + sa * rng.standard_normal(na)
        b = 3.280 + sb * rng.standard_normal(nb)
        cases.append(("welch %s ; %s" % (fmt(a), fmt(b)), welch_ref(a, b), "welch %d" % i))
        t = 150000 + 4000 * rng.standard_normal(na)
        u = 152000 + 9000 * rng.standard_normal(nb)
        cases.append(("welch %s ; %s" % (fmt(t), fmt(u)), welch_ref(t, u), "welch ms %d" % i))
    for i in range(12):
        n = int(rng.integers(2, 16))
        b = 3.28 + 0.002 * rng.standard_normal(n)
        a = b - 0.0005 + 0.0007 * rng.standard_normal(n)
        cases.append(("paired %s ; %s" % (fmt(a), fmt(b)), paired_ref(a, b), "paired %d" % i))
    for i, n in enumerate([2, 3, 5, 8, 32, 100, 20000]):
        x = 3.2787 + 0.0018 * rng.standard_normal(n)
        r = stats.ttest_1samp(x, 3.28, alternative="less")
        cases.append(("less 3.28 ; %s" % fmt(x), [r.statistic, r.pvalue], "less n=%d" % n))
        cases.append(("ci %s" % fmt(x), ci_ref(x), "ci n=%d" % n))
    for i in range(8):
        p = list(rng.uniform(0, 0.2, size=int(rng.integers(1, 10))))
        cases.append(("holm %s" % fmt(p), holm_ref(p), "holm %d" % i))
    flat = [3.2801] * 4
    cases += [
        ("ci 3.27", [1, 3.27], "ci n=1"),
        ("ci", [0], "ci n=0"),
        ("ci %s" % fmt(flat), [4, 3.2801, 0.0], "ci zero variance"),
        ("welch 3.27 ; %s" % fmt(flat), "none", "welch n=1"),
        ("welch %s ; %s" % (fmt(flat), fmt(flat)), [0.0, 1.0, 6, 0.0, 0.0], "welch identical"),
        ("welch 3.279 3.279 3.279 ; %s" % fmt(flat), [-math.inf, 0.0, 5, -0.0011, 0.0],
         "welch both zero variance, apart"),
        ("paired %s ; %s" % (fmt(flat), fmt(flat)), [0.0, 1.0, 3, 0.0, 0.0], "paired identical"),
        ("less 3.28 ; 3.279 3.279", [-math.inf, 0.0], "less zero variance below"),
        ("less 3.28 ; 3.281 3.281", [math.inf, 1.0], "less zero variance above"),
        ("less 3.28 ; 3.2", "none", "less n=1"),
        ("holm", [], "holm empty"),
    ]
    cases += outcome_cases(rng)
    cases += split_cases(rng)
    cases += anova_cases(rng)
    cases += power_cases()
    cases += decomposition_cases(rng)
    big_a = 3.2787 + 0.0018 * rng.standard_normal(50000)
    big_b = 3.2790 + 0.0017 * rng.standard_normal(40000)
    cases.append(("welch %s ; %s" % (fmt(big_a), fmt(big_b)), welch_ref(big_a, big_b), "welch huge n",
                  HUGE_REL))
    cases = [c if len(c) == 4 else c + (WELCH_REL if c[0].startswith("welch") else REL,)
             for c in cases]
    return [c for c in cases if c[1] is not None]


def close(got, want, rel):
    if isinstance(want, str) or isinstance(got, str):
        return got == want
    if len(got) != len(want):
        return False
    rels = rel if isinstance(rel, list) else [rel] * len(want)
    for g, w, r in zip(got, want, rels):
        if math.isnan(w) or math.isnan(g):
            if not (math.isnan(w) and math.isnan(g)):
                return False
        elif math.isinf(w) or w == 0:
            if not (g == w or abs(g - w) <= 1e-15):
                return False
        elif abs(g - w) > r * abs(w) + 1e-300:
            return False
    return True


def main():
    cases = build_cases(np.random.default_rng(8))
    lines = "\n".join(c[0] for c in cases) + "\n"
    out = subprocess.run([sys.argv[1]], input=lines, capture_output=True, text=True, check=True)
    answers = out.stdout.splitlines()
    assert len(answers) == len(cases), (len(answers), len(cases))
    failures = 0
    for (_, want, label, rel), answer in zip(cases, answers):
        got = answer if answer == "none" else [float(v) for v in answer.split()]
        if not close(got, want, rel):
            failures += 1
            print("MISMATCH %s: got %s want %s" % (label, got, want))
    print("%d cases, %d mismatches" % (len(cases), failures))
    if len(cases) < 50:
        print("too few cases: %d < 50" % len(cases))
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
