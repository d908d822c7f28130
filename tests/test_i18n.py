import pickle

from transformer.i18n import Message, Translator, joined, message_of

CATALOGUE = {
    "seed must be in 0..{top}": "种子必须在 0..{top} 之间",
    "could not read {name}: {reason}": "无法读取 {name}：{reason}",
}


def test_an_exception_raised_with_a_message_reads_english_and_translates():
    error = ValueError(Message("seed must be in 0..{top}", top=9))
    assert str(error) == "seed must be in 0..9"
    assert Translator("zh-CN", CATALOGUE).gettext(error) == "种子必须在 0..9 之间"
    assert Translator("en", {}).gettext(error) == "seed must be in 0..9"


def test_a_parameter_that_is_a_message_or_an_exception_is_translated_too():
    inner = ValueError(Message("seed must be in 0..{top}", top=9))
    outer = Message("could not read {name}: {reason}", name="a.pt", reason=inner)
    assert str(outer) == "could not read a.pt: seed must be in 0..9"
    assert Translator("zh-CN", CATALOGUE).gettext(outer) == "无法读取 a.pt：种子必须在 0..9 之间"


def test_any_other_exception_shows_its_english_text():
    assert message_of(RuntimeError("out of memory")) == "out of memory"
    assert Translator("zh-CN", CATALOGUE).gettext(OSError(2, "No such file")) == "[Errno 2] No such file"


def test_an_exception_carrying_a_message_survives_pickling():  # runs cross process boundaries (Ray workers)
    error = pickle.loads(pickle.dumps(ValueError(Message("seed must be in 0..{top}", top=9))))
    assert message_of(error) == Message("seed must be in 0..{top}", top=9)


def test_a_message_is_its_english_sentence_wherever_text_is_read():
    message = Message("{n} of {m} solved", n=2, m=3)
    assert message == "2 of 3 solved" and message.startswith("2 of") and f"[{message}]" == "[2 of 3 solved]"
    assert Translator("zh-CN", {"{n} of {m} solved": "{m} 个中 {n} 个已解出"}).gettext(message) == "3 个中 2 个已解出"
    again = pickle.loads(pickle.dumps(message))
    assert (again, again.template, again.params) == (message, "{n} of {m} solved", {"n": 2, "m": 3})


def test_joined_parts_read_as_english_and_translate_each():
    parts = joined(["d_model 32", Message("seed {seed}", seed=3), "no PE"])
    assert parts == "d_model 32 · seed 3 · no PE"
    chinese = Translator("zh-CN", {"seed {seed}": "种子 {seed}", "no PE": "无位置编码"})
    assert chinese(parts) == "d_model 32 · 种子 3 · 无位置编码"


def test_a_message_made_of_a_message_is_that_message():
    message = Message("seed {seed}", seed=3)
    assert Message(message) is message
    assert Translator("zh-CN", {"seed {seed}": "种子 {seed}"})(Message(message)) == "种子 3"
