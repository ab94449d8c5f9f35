"""bench.trusted's calibration objective: of settings meeting as many bars, the one missing
the others by less ranks first, whatever its F1 elsewhere."""

from bench.trusted import bars_met, objective, shortfall


def scores(excerpt_recall: float, partial_precision: float) -> dict:
    return {
        "P near": 0.99,
        ("R", "near"): 0.97,
        "P partial": partial_precision,
        ("R", "partial"): excerpt_recall,
        ("R", "excerpt"): excerpt_recall,
        ("n", "excerpt"): 100,
    }


def test_a_bar_missed_by_far_ranks_below_one_missed_by_a_hair():
    hair = [scores(0.899, 0.96), scores(0.95, 0.93)]  # misses: 0.001 and 0.02
    far = [scores(0.816, 0.99), scores(0.95, 0.94)]  # misses: 0.084 and 0.01, F1 better
    assert sum(map(bars_met, hair)) == sum(map(bars_met, far)) == 6
    assert round(sum(map(shortfall, hair)), 3) == 0.021
    assert objective(hair) > objective(far)


def test_bars_met_come_first():
    assert objective([scores(0.9, 0.95)]) > objective([scores(0.95, 0.949)])
    assert objective([scores(0.9, 0.95)])[:2] == (4, 0.0)
