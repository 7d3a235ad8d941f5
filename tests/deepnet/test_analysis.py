

def test_observed_k_max_range_leaves_open_the_k_the_errors_do_not_resolve():
    from grpo_theory.deepnet.analysis import observed_k_max_range, observed_k_max_words

    def rows(*mse):
        return [{"k": k, "multiplier": m, "se": se} for k, (m, se) in enumerate(mse, start=4)]

    # 4, 5, 6 resolved stable, 7 within one SE of 1, 8 resolved unstable: 6 to 7
    r = rows((0.54, 0.1), (0.71, 0.09), (0.87, 0.08), (1.03, 0.11), (1.31, 0.09))
    assert observed_k_max_range(r) == (6, 7)
    assert observed_k_max_words(6, (6, 7)) == "6-7 (7 unresolved)"
    # resolved on both sides: the point verdict
    assert observed_k_max_range(rows((0.5, 0.1), (0.8, 0.1), (1.3, 0.1))) == (5, 5)
    assert observed_k_max_words(5, (5, 5)) == "5"
    # the smallest k tried already unresolved, the next resolved unstable: at most 4
    assert observed_k_max_range(rows((1.02, 0.17), (1.88, 0.3))) == (None, 4)
    assert observed_k_max_words(None, (None, 4)) == "<= 4 (4 unresolved)"
    # no k resolved unstable: no range (the sweep does not bracket the transition)
    assert observed_k_max_range(rows((0.5, 0.1), (0.98, 0.1))) == (None, None)
    # an unresolved k breaks the run of resolved-stable ones
    assert observed_k_max_range(rows((0.5, 0.1), (0.95, 0.1), (0.8, 0.1), (1.5, 0.1))) == (4, 6)
