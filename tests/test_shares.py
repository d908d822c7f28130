"""A share said in the lab's three ways, one rule: never 100% short of all, never 0% above none."""

from transformer.shares import cell_percent, percent, shown_share

SHARES = (0.0, 0.0004, 0.004, 0.125, 0.62, 0.9, 0.998, 0.9994, 0.9996, 1.0)


def test_a_sentence_says_a_whole_percent_where_it_is_one_else_a_tenth():
    assert [percent(x) for x in SHARES] == [
        "0%", "0.1%", "0.4%", "12.5%", "62%", "90%", "99.8%", "99.9%", "99.9%", "100%"
    ]  # fmt: skip


def test_a_cell_says_a_whole_percent_but_at_the_two_ends():
    assert [cell_percent(x) for x in SHARES] == [
        "0%", "0.1%", "0.4%", "12%", "62%", "90%", "99.8%", "99.9%", "99.9%", "100%"
    ]  # fmt: skip


def test_a_share_formatted_to_a_tenth_by_its_sentence_keeps_the_rule():
    assert [f"{shown_share(x):.1%}" for x in SHARES] == [
        "0.0%", "0.1%", "0.4%", "12.5%", "62.0%", "90.0%", "99.8%", "99.9%", "99.9%", "100.0%"
    ]  # fmt: skip
