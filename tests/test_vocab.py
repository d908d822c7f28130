import json
import time

import pytest
import torch

from transformer.vocab import Vocab, check_symbol


@pytest.fixture
def digits():
    return Vocab.digits(10)


def test_layout(digits):
    assert len(digits) == 13 and digits.n_symbols == 10
    assert (digits.pad_id, digits.bos_id, digits.eos_id) == (0, 1, 2)
    assert digits.itos[:4] == ["PAD", "BOS", "EOS", "0"] and digits.itos[-1] == "9"
    assert digits.symbols == tuple("0123456789")
    assert digits.symbol_id(0) == 3 and digits.symbol_index(12) == 9
    with pytest.raises(ValueError):
        digits.symbol_id(10)
    with pytest.raises(ValueError):
        digits.symbol_index(2)


def test_round_trip(digits):
    ids = digits.encode(" 3 1\t4  1 5\n")
    assert ids == [6, 4, 7, 4, 8]
    assert digits.decode(ids) == "3 1 4 1 5"
    words = Vocab(["cat", "dog", "é"])
    assert words.decode(words.encode("dog é cat")) == "dog é cat"


def test_multi_character_digits_are_single_tokens():
    v = Vocab.digits(12)
    assert v.encode("10 1 0 11") == [13, 4, 3, 14]
    assert not v.spaces_optional and v.input_hint(5) == "at most 5 symbols, separated by spaces"
    with pytest.raises(ValueError, match="unknown symbol '314'; use 0-11, separated by spaces"):
        v.encode("314")  # 3 1 4, or 3 14? Ambiguous, so spaces stay required


def test_spaces_are_optional_when_every_symbol_is_one_character(digits):
    assert digits.spaces_optional and digits.input_hint(63) == "at most 63 symbols, spaces optional"
    assert digits.encode("314") == digits.encode("3 1 4") == digits.encode(" 31  4") == [6, 4, 7]
    with pytest.raises(ValueError, match="has 4 symbols; the most is 3"):
        digits.encode("3141", max_len=3)  # the limit counts symbols, not words
    with pytest.raises(ValueError, match="'BOS' is a special token"):
        digits.encode("1 BOS")  # a special token is not read as the characters B, O, S
    with pytest.raises(ValueError, match="unknown symbol '1BOS'; use 0-9$"):
        digits.encode("1BOS")  # a bad word is named whole
    assert Vocab(["a", "b"]).encode("ab ba") == [3, 4, 4, 3]


@pytest.mark.parametrize(
    "text, max_len, needle",
    [
        ("", None, "at least one symbol"),
        (" \t\n ", None, "at least one symbol"),
        ("1 x 2", None, "'x'"),
        ("1 2x", None, "'2x'"),
        ("1 BOS 2", None, "'BOS'"),
        ("EOS", None, "'EOS'"),
        ("PAD", None, "'PAD'"),
        ("1 2 3", 2, "has 3 symbols; the most is 2"),
    ],
)
def test_encode_errors(digits, text, max_len, needle):
    with pytest.raises(ValueError) as err:
        digits.encode(text, max_len=max_len)
    assert needle in str(err.value)


@pytest.mark.parametrize("text", [None, 3, [1, 2], b"1 2"])
def test_encode_takes_only_text(digits, text):
    with pytest.raises(TypeError, match="text must be a string of space-separated symbols"):
        digits.encode(text)


def test_decode_takes_only_integer_ids(digits):
    with pytest.raises(TypeError, match="float"):
        digits.decode([4, 1.5])


def test_unknown_symbol_message_lists_allowed_symbols(digits):
    with pytest.raises(ValueError, match="0-9"):
        digits.encode("a")
    with pytest.raises(ValueError, match="cat dog"):
        Vocab(["cat", "dog"]).encode("cow")


def test_encode_takes_only_the_symbols_it_is_given():
    vocab = Vocab(["cat", "dog", "chat", "chien"])
    assert vocab.encode("dog cat", symbols=range(2)) == [4, 3]
    with pytest.raises(ValueError, match="unknown symbol 'chat'; use cat dog,"):
        vocab.encode("cat chat", symbols=range(2))


@pytest.mark.parametrize(
    "text",
    ["٣", "1\u200b2", "\ud800", "😀 1", "1 \x00", "a" * 10_000, "é" * 10_000 + " 1", "1 " * 10_000],
)
def test_hostile_input_fails_fast_with_short_message(digits, text):
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        digits.encode(text, max_len=64)
    assert time.perf_counter() - start < 0.5
    assert len(str(err.value)) < 120


def test_decode(digits):
    assert digits.decode([1, 4, 5, 2, 6, 0]) == "1 2"
    assert digits.decode([4, 0, 5]) == "1 2"
    assert digits.decode(torch.tensor([5, 2, 5])) == "2"
    assert digits.decode([1, 4, 2, 6, 0], strip_special=False) == "BOS 1 EOS 3 PAD"
    assert digits.tokens([1, 3, 2, 0]) == ["BOS", "0", "EOS", "PAD"]
    for bad in ([13], [-1], [4, 99]):
        with pytest.raises(ValueError):
            digits.decode(bad)
        with pytest.raises(ValueError):
            digits.tokens(bad)


def test_dict_round_trip():
    v = Vocab(["a", "b", "c"])
    restored = Vocab.from_dict(json.loads(json.dumps(v.to_dict())))
    assert restored == v and restored.symbols == ("a", "b", "c")
    assert Vocab.from_dict(Vocab.digits(5).to_dict()) == Vocab.digits(5)


@pytest.mark.parametrize(
    "d",
    [
        None,
        ["a", "b"],
        {},
        {"symbols": "abc"},
        {"symbols": ("a", "b")},
        {"symbols": []},
        {"symbols": [1, 2]},
        {"symbols": ["a", None]},
        {"symbols": ["a", "a"]},
        {"symbols": ["a b"]},
        {"symbols": [""]},
        {"symbols": ["BOS"]},
        {"symbols": ["a"], "extra": 1},
    ],
)
def test_from_dict_rejects_malformed(d):
    with pytest.raises(ValueError):
        Vocab.from_dict(d)


@pytest.mark.parametrize("n", [0, 1, 101, 2.0, True, "10"])
def test_digits_range(n):
    with pytest.raises(ValueError):
        Vocab.digits(n)


def test_equality():
    assert Vocab.digits(3) == Vocab(["0", "1", "2"])
    assert hash(Vocab.digits(3)) == hash(Vocab(["0", "1", "2"]))
    assert Vocab.digits(3) != Vocab(["0", "2", "1"])
    assert Vocab.digits(3) != ("0", "1", "2")


@pytest.mark.parametrize(
    "symbol", ["a", "=SUM(A1)", "miko", "x" * 16, "é", "<", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "می\u200cخواهم"]
)
def test_a_symbol_is_printable_text_without_spaces(symbol):
    check_symbol(symbol)
    assert Vocab([symbol]).symbols == (symbol,)


@pytest.mark.parametrize(
    "symbol", ["", "a b", "x" * 17, "\x1b[31m", "a\u200bb", "\u200d", "a\u200d", "a\u202eb", "PAD", "BOS", 3, None]
)
def test_what_cannot_be_a_symbol_is_refused_as_the_vocabulary_refuses_it(symbol):
    with pytest.raises(ValueError) as error:
        check_symbol(symbol)
    with pytest.raises(ValueError) as refused:
        Vocab([symbol])
    assert str(error.value) == str(refused.value)


def test_full_width_characters_from_a_chinese_keyboard_read_as_the_symbols_they_stand_for(digits):
    assert digits.encode("１２３") == digits.encode("１　２　３") == digits.encode("1 2 3")  # and the wide space
    wide = Vocab(["Ａ", "A", "b"])  # a symbol that is itself full-width is kept as typed
    assert wide.encode("Ａ A ｂ") == [wide.symbol_id(0), wide.symbol_id(1), wide.symbol_id(2)]
    with pytest.raises(ValueError, match="unknown symbol"):
        digits.encode("①")  # another compatibility form is no digit


@pytest.mark.parametrize("text, named", [("１ ｗ", "'ｗ'"), ("１ｗ２", "'１ｗ２'"), ("1　ＰＡＤ", "'ＰＡＤ'")])
def test_a_full_width_symbol_the_task_lacks_is_named_as_it_was_typed(digits, text, named):
    with pytest.raises(ValueError) as error:
        digits.encode(text)
    assert f" {named} " in f" {error.value} ".replace(";", " ")
