"""The README.md written into every ONNX export: what a user without nerservice needs to run it."""
from __future__ import annotations

from typing import Any

TEMPLATE = """# nerservice ONNX export

Exported from `{ref}` (manifest sha256 `{sha}`). Tags: {tags}.
Runs on ONNX Runtime (CPU) and NumPy; no TensorFlow, Keras or nerservice needed.

## Files
- `words.onnx`: per distinct word. Inputs `word_ids` int32 (U,), `word_chars` int32 (U, C). Output
  `features` float32 (U, {dim}). Its word-vector table is ONNX external data in `words.onnx.data` (keep
  the two files together; ONNX Runtime memory-maps the table when it loads `words.onnx` from a path).
- `context.onnx`: per batch of sentences. Inputs `features` float32 (U, {dim}) (the output above),
  `word_index` int32 (B, T) (row of `features` for each token; any row for padding), `lengths` int32 (B,)
  (real tokens per sentence){gazetteer_input}. Output `emissions` float32 (B, T, {k}): one score per tag
  (column order of `crf.json` "tags"); positions at or past a sentence's length are padding.
- `vocab.json`: `words.items`, `chars.items` (id = position in the list + 2; 0 = padding, 1 = unknown),
  `tags.tags`{gazetteer_vocab}. `crf.json`: `transitions` [from][to], `start`, `end`, `tags`. `config.json`:
  the training config (`model.max_word_length` = {maxlen}). `manifest.json`: sha256 of every file.

## Inputs from tokens
For each token w (any tokenizer; nerservice splits on whitespace and punctuation):
- word id: `words.items.index(normalize(w)) + 2`, else 1, where normalize = lower-case, then every Unicode
  decimal digit replaced by "0" ("BRCA1" -> "brca0").
- chars: the token itself (not normalised); if longer than {maxlen} characters keep the first {head} and
  the last {tail}. Char ids `chars.items.index(c) + 2`, else 1; right-padded with 0 to a common width C.
- Give each distinct (word id, chars) pair one row u of `word_ids`/`word_chars` (one row per token works
  too, it is only slower); `word_index[b, t]` = the row of sentence b's token t.
{gazetteer_recipe}
## Decode (linear-chain CRF)
For a sentence of n tokens with emissions E (n, K), the tag path y maximises
`start[y0] + sum_t E[t, y_t] + sum_t transitions[y_(t-1), y_t] + end[y_(n-1)]` (Viterbi).
Tags are IOB2; an entity is a `B-X` followed by `I-X`s (an `I-X` without a preceding `B-X`/`I-X` of the
same type starts an entity too). Its score is the mean over its tokens of the marginal probability
p(y_t = chosen tag | sentence) from forward-backward with the same scores.
"""


# Only for a model with a gazetteer (model.gazetteer): the README of every other export stays as it was.
GAZETTEER_INPUT = ", `gazetteer` int32 (B, T) (each token's gazetteer id, below; 0 for padding)"
GAZETTEER_VOCAB = (', `gazetteer` (`types`, `max_tokens`, `entries`: [[normalised tokens...], type index]'
                   ' pairs)')
GAZETTEER_RECIPE = """- gazetteer id (one per token, sentence by sentence): normalise every token as above, then from
  the first token on, find the longest run of at most `gazetteer.max_tokens` tokens starting here that is an
  entry (of type index k): its first token gets 2 + 2k, the others 3 + 2k, and matching resumes after
  the run; a token that starts no entry gets 1 and matching moves on by one token.
"""


def readme_text(loaded: Any, source: dict[str, Any]) -> str:
    maxlen = int(loaded.config.model.max_word_length)
    gaz = getattr(loaded.vocabs, "gazetteer", None) is not None
    return TEMPLATE.format(
        ref=source["ref"], sha=source["manifest_sha256"], tags=", ".join(loaded.vocabs.tags.tags),
        dim=int(loaded.config.model.dense_units), k=len(loaded.vocabs.tags), maxlen=maxlen,
        head=maxlen // 2, tail=maxlen - maxlen // 2, gazetteer_input=GAZETTEER_INPUT if gaz else "",
        gazetteer_vocab=GAZETTEER_VOCAB if gaz else "", gazetteer_recipe=GAZETTEER_RECIPE if gaz else "")
