"""Decoding steps to draw: a vocabulary of tokens and a beam search's kept hypotheses over three steps."""

import torch

from transformer.decoding import Beam, DecodeStep

TOKENS = ["PAD", "BOS", "EOS", "a", "<b>", "c", "d"]


def decode_step(step: int, beams: list[Beam]) -> DecodeStep:
    """A decoding step of a beam search that kept `beams`, the first extended by its last token."""
    return DecodeStep(step, [1], torch.zeros(len(TOKENS)), beams[0].tokens[-1], [], [], beams)


def beam_steps() -> list[DecodeStep]:
    """Three steps of a beam search of width 2 over TOKENS, one hypothesis finishing early (EOS at step 1)."""
    return [
        decode_step(0, [Beam([1, 3], -0.1, 0, False), Beam([1, 4], -1.0, 0, False)]),
        decode_step(
            1, [Beam([1, 3, 5], -0.3, 0, False), Beam([1, 4, 6], -1.2, 1, False), Beam([1, 3, 2], -2.0, 0, True)]
        ),
        decode_step(2, [Beam([1, 3, 5, 2], -0.4, 0, True), Beam([1, 4, 6, 2], -1.5, 1, True)]),
    ]
