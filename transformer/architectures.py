"""Which model a `ModelConfig` builds: the paper's Transformer or the recurrent baseline it replaced.

`ModelConfig.architecture` is the switch and `transformer.recurrent.build_model` the one place that reads it to
pick a model class. No package imports, so the config can name the architectures without importing the models.
"""

from typing import Literal

Architecture = Literal["transformer", "gru", "gru-attention"]
RECURRENT = ("gru", "gru-attention")  # the RNN encoder-decoder of transformer.recurrent, without or with attention
