import numpy as np
import pytest

from reveal_lab.studies import (
    hit_rate_count,
    hit_rate_length,
    intersection_length,
    interval_iou,
    merge_intervals,
    merge_windows,
    total_length,
)


def test_merge_windows_3s_1s_stride():
    starts = np.arange(10.0)
    ends = starts + 3
    flags = np.zeros(10, bool)
    flags[[2, 3, 4, 8]] = True
    assert merge_windows(starts, ends, flags).tolist() == [[2.0, 7.0], [8.0, 11.0]]
    assert merge_windows(starts, ends, np.zeros(10, bool)).shape == (0, 2)


def test_iou_of_known_intervals():
    a = np.array([[0.0, 10.0], [20.0, 30.0]])
    b = np.array([[5.0, 25.0]])
    # intersection 5 + 5 = 10; union 0..30 = 30
    assert intersection_length(a, b) == 10.0
    assert interval_iou(a, b) == pytest.approx(1 / 3)
    assert interval_iou(a, a) == 1.0
    assert interval_iou(a, np.array([[40.0, 50.0]])) == 0.0
    assert np.isnan(interval_iou(np.empty((0, 2)), np.empty((0, 2))))


def test_hit_rates_by_count_and_length():
    ref = np.array([[0.0, 10.0], [20.0, 30.0], [40.0, 42.0]])
    other = np.array([[8.0, 12.0], [41.0, 50.0]])
    assert hit_rate_count(ref, other) == pytest.approx(2 / 3)
    assert hit_rate_length(ref, other) == pytest.approx((2 + 1) / 22)
    assert hit_rate_count(ref, np.empty((0, 2))) == 0.0
    assert np.isnan(hit_rate_length(np.empty((0, 2)), other))


def test_overlapping_input_is_merged_first():
    a = np.array([[0.0, 5.0], [3.0, 8.0]])
    assert total_length(a) == 8.0
    assert merge_intervals(a).tolist() == [[0.0, 8.0]]
    with pytest.raises(ValueError, match="ends before"):
        merge_intervals([(3.0, 1.0)])
