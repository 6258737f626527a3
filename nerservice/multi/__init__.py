"""One model for several corpora, each with its own label set: a shared encoder and one CRF head per corpus.

    config.py      the corpora config file (names, splits, label maps, batching) and its checks
    corpora.py     reading and relabelling the corpora; the model's per-head tag set
    tagger.py      the network (the single-corpus tagger whose emissions hold every head's columns)
    trainer.py     train_multi(): batches per corpus, early stopping on the mean dev F1 over corpora
    evaluation.py  each corpus scored on its own head, and the mean over corpora

Decoding every head and merging their entities lives with the other decoders, in
``nerservice/model/heads.py``; the saved format (``nerservice.multi.v1``) in ``nerservice/artifacts/``
(layout.py, formats.py).
"""
