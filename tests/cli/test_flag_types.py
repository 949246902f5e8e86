"""The whole-number flag type is one parser (``cli._ranges.int_in``) with Python's own digits."""

import argparse

import pytest

from reveal_lab.cli._ranges import int_in
from reveal_lab.cli._types import MAX_COUNT, positive_int


@pytest.mark.parametrize("text, value", [("1", 1), (" 7 ", 7), ("1_000", 1000), (f"{MAX_COUNT}", MAX_COUNT)])
def test_positive_int_accepts(text, value):
    assert positive_int(text) == value


@pytest.mark.parametrize("text", ["0", "-3", "1__0", "1e3", "2.0", "", "ten", f"{MAX_COUNT + 1}"])
def test_positive_int_refuses_naming_the_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected a whole number from 1 to 1,000,000"):
        positive_int(text)


def test_positive_int_is_int_in_of_the_count_range():
    twin = int_in(1, MAX_COUNT)
    for text in ("1", "999", "1_000"):
        assert positive_int(text) == twin(text)
    assert positive_int.range_text == twin.range_text == "1–1,000,000"
