"""Distillation: one student model trained on a teacher's (an ensemble's) CRF distribution over all the text
you have — labelled corpora and unlabelled text alike — so users get ensemble accuracy at one model's cost.

    config.py    DistilConfig: the gold-tag weight, temperature and input bounds (saved in the lineage)
    targets.py   the teacher's exact posteriors (node and pairwise marginals), precomputed in NumPy
    student.py   the student tagger: a NerTagger whose training loss is the cross-entropy against them
    run.py       ``distil()``: teacher + corpora -> a normal model folder (through ``training.trainer.train``)
    folds.py     cross-fitting folds: K contiguous blocks of the labelled text
    recipe.py    ``nerservice train --final --seeds N --distil``: final ensemble, fold teachers, student in one go
    options.py   the recipe's --teacher / --teacher-head, declared once for ``nerservice train`` and Spark
    teacher_ref.py  which teacher a reference names (resolved, loaded, one head): every shell's --teacher

The loss is sequence-level knowledge distillation, exact for linear-chain CRFs (``CRF.cross_entropy``).
"""
