"""Trajectory drift (issue 33.4): a version that changes the path it takes through a case is
flagged by a chi-square test of homogeneity, decided across cases with Benjamini-Hochberg."""

from __future__ import annotations

import random

import pytest

from otel_eval.drift import benjamini_hochberg, chi_square_sf, compare_paths, drift, path_text


@pytest.mark.parametrize("statistic, dof, p", [  # printed chi-square tables (upper tail)
    (3.841459, 1, 0.05), (6.634897, 1, 0.01), (5.991465, 2, 0.05), (9.210340, 2, 0.01),
    (11.070498, 5, 0.05), (18.307038, 10, 0.05), (0.454936, 1, 0.5), (0.0, 3, 1.0), (40.0, 1, 2.539e-10),
])
def test_the_chi_square_tail_matches_the_tables(statistic, dof, p):
    assert chi_square_sf(statistic, dof) == pytest.approx(p, rel=1e-3)


def test_a_version_that_changes_its_path_is_flagged_and_the_moved_paths_named():
    before = {"get_weather": 40, "get_forecast → get_weather": 10}
    after = {"get_weather": 12, "get_forecast → get_weather": 38}
    result = compare_paths("weather_tokyo", before, after)
    assert result.p_value < 1e-6 and result.dof == 1
    assert result.changed_paths[0]["path"] in before and abs(result.changed_paths[0]["change"]) == pytest.approx(0.56)
    same = compare_paths("weather_tokyo", before, {"get_weather": 39, "get_forecast → get_weather": 11})
    assert same.p_value > 0.5


def test_rare_paths_are_pooled_and_one_path_is_not_tested():
    result = compare_paths("c", {"a": 50, "b": 1, "c": 1}, {"a": 50, "d": 1})
    assert result.p_value is None and "one path" in result.reason
    few = compare_paths("c", {"a": 3}, {"b": 3})
    assert few.p_value is None and "fewer than 10 sessions" in few.reason


def test_benjamini_hochberg_steps_up():
    # Ranked p-values are held to q·rank/m: 0.04 at rank 4 meets 0.04, so all four smallest go...
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005, 0.5], 0.05) == [True, True, True, True, False]
    # ...0.045 does not, and the step-up stops at rank 3 (0.03 <= 0.03).
    assert benjamini_hochberg([0.01, 0.045, 0.03, 0.005, 0.5], 0.05) == [True, False, True, True, False]
    # Step-up: a p-value above its own line is rejected when a larger one meets its line.
    assert benjamini_hochberg([0.03, 0.04], 0.05) == [True, True]  # 0.03 > 0.025, but 0.04 <= 0.05


def test_across_many_unchanged_cases_few_are_flagged_by_chance():
    rng = random.Random(3)
    per_case = {}
    for n in range(200):
        def sample():
            counts: dict[str, int] = {}
            for _ in range(60):
                path = rng.choices(["a", "a → b", "c"], [0.6, 0.3, 0.1])[0]
                counts[path] = counts.get(path, 0) + 1
            return counts
        per_case[f"case-{n}"] = (sample(), sample())
    flagged = [r for r in drift(per_case) if r.significant]
    assert len(flagged) <= 2  # none changed: BH at 5% keeps false flags rare
    per_case["moved"] = ({"a": 50, "c": 10}, {"a": 10, "c": 50})
    results = drift(per_case)
    assert results[0].key == "moved" and results[0].significant


def test_path_text_names_every_turn():
    assert path_text([["get_weather"], [], ["get_forecast", "get_weather"]]) == \
        "get_weather | (no tools) | get_forecast → get_weather"
