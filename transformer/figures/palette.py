"""The figures' colours: the Okabe-Ito palette, safe for colour-blind viewers, and the sets of colours each figure
shows together. Where colours must be told apart, figures add a second cue (a dash or a marker symbol: `DASHES`,
`SYMBOLS`), so that no reading rests on colour alone.

`tests/figures/test_palette.py` checks that every two colours of a set stay apart for a viewer with deuteranopia,
protanopia or tritanopia: `simulate` (Machado, Oliveira and Fernandes 2009, severity 1), then `ciede2000` (Sharma, Wu
and Dalal 2005) at least `LEAST_DIFFERENCE`.
"""

import math
from collections.abc import Sequence

# Okabe and Ito (2008), "Color Universal Design": eight colours that stay apart in the common colour visions.
BLACK, ORANGE, SKY_BLUE, BLUISH_GREEN = "#000000", "#e69f00", "#56b4e9", "#009e73"
YELLOW, BLUE, VERMILLION, REDDISH_PURPLE = "#f0e442", "#0072b2", "#d55e00", "#cc79a7"
GREY, LIGHT_GREY = "#595959", "#d9d9d9"  # reference lines (7:1 on white); what is blocked

SERIES = (BLUE, VERMILLION, BLACK, SKY_BLUE)  # groups, variants: one each, in their order
DASHES = ("solid", "dash", "dot", "dashdot")  # the second cue of the series of the same place
SYMBOLS = ("circle", "square", "diamond", "triangle-up")  # the same, for markers

TRAIN, VALID = SERIES[0], SERIES[1]  # a run's training and held-out curves (held-out: dashed)
MARKER = GREY  # a line marking a step or a reference level
LIVE, FINISHED, BEST_PATH, EXTENDS = BLACK, BLUISH_GREEN, VERMILLION, GREY  # the beam tree: circles, squares, thick
CHOSEN, OTHER = VERMILLION, SKY_BLUE  # the chosen next token's bar (also labelled), every other bar
MAY_ATTEND, BLOCKED = BLUE, LIGHT_GREY  # a mask's cells
HIGHLIGHT = VERMILLION  # an outline or arrow that must stand out on blues and greys


def series_line(index: int, width: float) -> dict:
    """A Plotly line of the series at `index`: its colour and its dash."""
    return dict(color=SERIES[index % len(SERIES)], dash=DASHES[index % len(DASHES)], width=width)


def dash_of(colour: str) -> str:
    """The dash drawn with `colour`: a series colour's own, else solid."""
    return DASHES[SERIES.index(colour)] if colour in SERIES else "solid"


# Every set of colours a figure shows together (figures -> their colours), for the test of their differences.
SHOWN_TOGETHER: dict[str, tuple[str, ...]] = {
    "series: board groups, compare variants": (*SERIES, MARKER),
    "training curves, length test, alignment": (TRAIN, VALID, MARKER),
    "decoding beam tree": (LIVE, FINISHED, BEST_PATH, EXTENDS),
    "decoding next-token bars": (CHOSEN, OTHER),
    "attention mask": (MAY_ATTEND, BLOCKED),
}
LEAST_DIFFERENCE = 15.0  # CIEDE2000 between two colours shown together, in every simulated colour vision

# Machado et al. (2009), severity 1.0, applied to linear sRGB.
DEFICIENCIES: dict[str, tuple[tuple[float, float, float], ...]] = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}

Lab = tuple[float, float, float]


def _linear(hex_colour: str) -> list[float]:
    """A "#rrggbb" colour as linear sRGB in 0..1."""
    channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two "#rrggbb" colours: (L1 + 0.05) / (L2 + 0.05), L their relative luminances, the
    lighter first; 1 to 21."""
    luminances = (sum(w * c for w, c in zip((0.2126, 0.7152, 0.0722), _linear(x))) for x in (a, b))
    light, dark = sorted(luminances, reverse=True)
    return (light + 0.05) / (dark + 0.05)


def simulate(hex_colour: str, deficiency: str | None = None) -> Lab:
    """CIELAB (D65) of `hex_colour` as a viewer with `deficiency` (a key of DEFICIENCIES; None: normal vision)
    sees it."""
    rgb = _linear(hex_colour)
    if deficiency is not None:
        rgb = [min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb)))) for row in DEFICIENCIES[deficiency]]
    r, g, b = rgb
    xyz = (
        (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
        0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
        (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(lab1: Lab, lab2: Lab) -> float:
    """The CIEDE2000 difference of two CIELAB colours (kL = kC = kH = 1), as Sharma, Wu and Dalal (2005) state it."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh = dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    dh_big = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    h_mean = h1p + h2p
    if c1p * c2p:
        h_mean = (h_mean + (360 if h_mean < 360 else -360)) / 2 if abs(h1p - h2p) > 180 else h_mean / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_mean - 30))
        + 0.24 * math.cos(math.radians(2 * h_mean))
        + 0.32 * math.cos(math.radians(3 * h_mean + 6))
        - 0.20 * math.cos(math.radians(4 * h_mean - 63))
    )
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_mean, 1 + 0.015 * cp_mean * t
    r_c = 2 * math.sqrt(cp_mean**7 / (cp_mean**7 + 25**7))
    r_t = -r_c * math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2))))
    dl, dc, dh = (l2 - l1) / s_l, (c2p - c1p) / s_c, dh_big / s_h
    return math.sqrt(dl**2 + dc**2 + dh**2 + r_t * dc * dh)


def closest_pair(colours: Sequence[str]) -> tuple[float, str, str, str]:
    """The two of `colours` least apart in any simulated deficiency: (CIEDE2000, deficiency, colour, colour)."""
    return min(
        (ciede2000(simulate(a, kind), simulate(b, kind)), kind, a, b)
        for kind in DEFICIENCIES
        for i, a in enumerate(colours)
        for b in colours[i + 1 :]
    )
