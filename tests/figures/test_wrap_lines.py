"""Figure labels in lines (`transformer.figures.wrap_lines`): Chinese measured as Chinese is drawn, identifiers and
bracketed words kept whole, brackets and operators kept with their text (避头尾), the lines as even as they can be."""

import pytest

from transformer.figures import CJK_WIDTH, text_width, wrap_lines


@pytest.mark.parametrize(
    ("label", "width", "lines"),
    [
        ("嵌入 × √d_model", 12, ["嵌入", "× √d_model"]),  # the review saw "嵌入 × √ / d_mode / l"
        ("多头注意力（交叉）", 12, ["多头注意力", "（交叉）"]),  # and "多头注意力（ / 交叉）"
        ("线性层（之后接 softmax）", 12, ["线性层（之后接", "softmax）"]),  # a group too wide for a line: "）" stays
        ("残差连接与层归一化", 12, ["残差连接与", "层归一化"]),  # even lines, not 7 + 2
        ("残差连接与层归一化", 16, ["残差连接与层归一化"]),  # 9 characters are 15.3 Latin ones wide
        ("带掩码的多头注意力", 9, ["带掩码的", "多头注意力"]),  # never "带掩码的多 / 头注意力"
        ("第 413 步的交叉注意力，层 0", 14, ["第 413 步的", "交叉注意力，层 0"]),  # Train's map read "交 / 叉注意力"
        (
            "移除一个头后的留出集精确匹配（完整模型：100.0%）",
            40,
            ["移除一个头后的留出集精确匹配", "（完整模型：100.0%）"],
        ),
        ("填充 + 因果：解码器实际使用的掩码", 30, ["填充 + 因果：解码器实际使用的掩码"]),
        ("Embedding × √d_model", 12, ["Embedding", "× √d_model"]),
        ("Multi-Head Attention (cross)", 12, ["Multi-Head", "Attention", "(cross)"]),
        ("Loss of a very long variant name here", 26, ["Loss of a very long", "variant name here"]),
        ("", 12, []),
        ("GRU 编码器-解码器的损失", 12, ["GRU 编码器-", "解码器的损失"]),  # a hyphen never starts a line
    ],
)
def test_labels_break_only_where_chinese_typesetting_allows(label, width, lines):
    assert wrap_lines(label, width) == lines


def test_no_line_is_wider_than_asked_unless_one_piece_is_and_the_text_comes_back_whole():
    label = "相加与层归一化（后置归一化）之后接 softmax，再按 d_model 缩放 × √d_k"
    for width in range(4, 40):
        lines = wrap_lines(label, width)
        assert "".join(lines).replace(" ", "") == label.replace(" ", "")
        for line in lines:
            assert text_width(line) <= width or wrap_lines(line, width) == [line]  # one piece, too wide to break
            assert not line.endswith("（") and not line.startswith(("）", "，"))
        assert any("d_model" in line for line in lines) and any("softmax" in line for line in lines)


def test_a_chinese_character_counts_as_about_two_latin_ones():
    assert text_width("多头注意力") == pytest.approx(5 * CJK_WIDTH)
    assert text_width("d_model（）") == pytest.approx(7 + 2 * CJK_WIDTH)


def test_a_no_break_space_is_kept_and_never_breaks_a_line():
    assert wrap_lines("Sampling distribution (temperature\xa02, top-k\xa03)", 30) == [
        "Sampling distribution",
        "(temperature\xa02, top-k\xa03)",
    ]
    assert all("温度\xa02" in line or "温度" not in line for line in wrap_lines("采样分布（温度\xa02，top-k\xa03）", 8))
