"""Performance gates: the scheduler under test against a baseline in the same run, budgets as ratios.

    from schedgate.perf import Budget, Side, Workload, compare, check
    result = compare(cluster, Side(UNDER_TEST, mine), Side(BASELINE, theirs, binary), workload)
    check(result, Budget(throughput=0.8, p99=1.5, extension_points={"Filter": {"p99": 3.0}}))
"""

from schedgate.perf.budget import Budget, Figures, broken, check, figures
from schedgate.perf.measure import BASELINE, UNDER_TEST, Comparison, Side, Turn, Workload, compare
from schedgate.perf.report import perf_files

__all__ = ["BASELINE", "UNDER_TEST", "Budget", "Comparison", "Figures", "Side", "Turn", "Workload", "broken", "check",
           "compare", "figures", "perf_files"]
