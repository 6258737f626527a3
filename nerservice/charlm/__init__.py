"""Character language models (contextual string embeddings, Akbik et al. 2018): a forward and a backward
character LSTM pretrained on unlabelled text, whose states at word boundaries become per-token features of
the tagger (``model.char_lm``).  ``nerservice charlm`` pretrains one; ``train()`` copies its weights into the
tagger's layer (``model/char_lm_layer.py``, frozen) so the tagger's folder stays self-contained.
"""
