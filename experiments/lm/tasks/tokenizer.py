"""The character-level tokenizer every task shares: one id per character, plus PAD, BOS
and EOS.

The vocabulary is fixed (digits, ``+ - * ( ) = , >`` and ``x``) so that the model's
embedding table does not depend on the task; a task's prompts and solutions use a
subset of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
_CHARS = "0123456789+-*()=,>x"
_SPECIAL = ("<pad>", "<bos>", "<eos>")
VOCAB_SIZE = len(_SPECIAL) + len(_CHARS)
_CHAR_TO_ID = {c: i + len(_SPECIAL) for i, c in enumerate(_CHARS)}
# Special tokens decode to a character no verifier accepts.
_ID_TO_CHAR = np.array(["?"] * len(_SPECIAL) + list(_CHARS))


def encode(text: str) -> list[int]:
  """Character-level token ids of ``text`` (no BOS/EOS)."""
  try:
    return [_CHAR_TO_ID[c] for c in text]
  except KeyError as e:
    raise ValueError(f"Character {e} is not in the vocabulary {_CHARS!r}.") from None


def decode_completion(ids: Sequence[int] | np.ndarray) -> str:
  """Text of a completion: the tokens before the first EOS (or all of them)."""
  ids_array = np.asarray(ids)
  eos = np.flatnonzero(ids_array == EOS_ID)
  if eos.size:
    ids_array = ids_array[: eos[0]]
  return "".join(_ID_TO_CHAR[ids_array].tolist())


def encode_prompts(prompts: Sequence[str]) -> np.ndarray:
  """``[P, 1 + prompt_len]`` int32 ids, BOS first; all prompts must share a length."""
  lengths = {len(p) for p in prompts}
  if len(lengths) != 1:
    raise ValueError(f"Prompts must share one length, got lengths {sorted(lengths)}.")
  return np.array([[BOS_ID] + encode(p) for p in prompts], dtype=np.int32)


def encode_completions(completions: Sequence[str], length: int) -> np.ndarray:
  """``[B, length]`` int32 ids: each completion, EOS, then PAD."""
  out = np.full((len(completions), length), PAD_ID, dtype=np.int32)
  for row, text in enumerate(completions):
    ids = encode(text) + [EOS_ID]
    if len(ids) > length:
      raise ValueError(f"Completion {text!r} needs {len(ids)} tokens > length={length}.")
    out[row, : len(ids)] = ids
  return out
