"""A share of held-out sequences or tokens as the lab says it: never 100% short of all, never 0% above none (a model
that gets 998 of 1,000 right has not solved its task; one that gets 1 right has learned something).

One rule, said three ways: `percent` in sentences (a whole percent where it is one, else to a tenth: 12.5%),
`cell_percent` where room is short (a heatmap's cell: a whole percent, to a tenth only at the two ends), and
`shown_share` for a sentence that formats the share itself (`{exact:.1%}`)."""


def _tenths(share: float) -> int:
    """`share` in tenths of a percent, at least 1 above none and at most 999 short of all."""
    return min(max(round(share * 1000), 1 if share > 0 else 0), 999 if share < 1 else 1000)


def percent(share: float) -> str:
    """'90%', '12.5%' (not a rounded 12%), '99.9%' for 0.9996, '0.1%' for 0.0004."""
    tenths = _tenths(share)
    return f"{tenths // 10}%" if tenths % 10 == 0 else f"{tenths / 10:.1f}%"


def cell_percent(share: float) -> str:
    """'13%' for 0.125, but '99.8%' for 0.998 and '0.4%' for 0.004, where a whole percent would read 100% or 0%."""
    whole = round(100 * share)
    if (whole == 100 and share < 1) or (whole == 0 and share > 0):
        return percent(share)
    return f"{whole}%"


def shown_share(share: float) -> float:
    """`share` as a tenth-of-a-percent format shows it: 0.999 at most short of all, 0.001 at least above none."""
    return share if share >= 1 or share <= 0 else min(max(share, 0.001), 0.999)
