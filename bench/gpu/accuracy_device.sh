#!/usr/bin/env bash
# Session 5's device calls for issues 14, 19 and 20 (BENCHMARKS.md, "Session 5"): `bash bench/gpu/accuracy_device.sh B|C|D`
# from the repo root on the lent H200, with the git-ignored data folder `.devdata/h4` (keras and its pure-Python
# deps as wheels in whl/, seqeval in site/, copies of the four corpora and the GloVe 6B 50d rows of their words
# in data/) named in the call's `carry`.  Results land in $OUT as one .tgz per call.
#   B: default config on NCBI-disease and BC5CDR (seeds 42/1/2) + the multi-corpus model over both (same config)
#   C: --scaling grow, linear rule, N = 2, 4, 8 as one process with the N-times batch (seeds 42/1/2), and the
#      Spark task body (world 1, seed 42), NCBI-disease, default config otherwise
#   D: batch 128, lr 4e-3, 2-epoch warm-up from 0.25x on BC5CDR (seeds 42/1/2)
# Session 6 (issue 14, document context):
#   E: sentences packed into windows of <= 128 tokens (NCBI-disease, BC5CDR) and <= 64 (NCBI-disease), batch 32
#      windows with the learning rate scaled by the tokens per step (x4 / x2) and the 2-epoch warm-up from 1e-3
#   G: the multi-corpus model over all four corpora (corpora.json), the F recipe, seeds 42/1/2
#   F: batch 128, lr 4e-3, 2-epoch warm-up from 0.25x on BC2GM, linnaeus and BC5CDR (seeds 42/1/2)
# Session 8 (issue 14, character language model; session 7 wrote it on CPU):
#   L: pretrain a 512-unit forward + backward character LM (`nerservice charlm`; batch 512 windows of 250
#      characters: at batch 128 the scan over 250 steps leaves the GPU idle, so 4x the batch costs about the same
#      per step) on the train+devel text of NCBI-disease, BC5CDR, BC2GM and linnaeus train, held-out bits per
#      character on linnaeus devel, <= 3.3 min + the epoch that crosses it; the folder comes back in $OUT/lm (weights.npz ~10 MB: a returned
#      file may have 16 MiB)
#   M: the F recipe + `model.char_lm` (L's folder, fetched and copied to .devdata/h4/lm, carried) on
#      NCBI-disease, BC5CDR and linnaeus (seeds 42/1/2), against session 5-6's b128 runs without it; nine
#      processes with the LM did not fit the GPU's memory at once (BC5CDR and linnaeus seeds 1 and 2 failed in
#      their first epoch: a linnaeus step asked for 18.4 GiB more), so run those as their own call of six
#   N: the same on BC2GM (3 processes; session 8 ran it as the equivalent inline command)
#   O: (not run yet) M's missing runs: BC5CDR and linnaeus, seeds 1 and 2 (4 processes)
# Session 9 (issue 14, the gazetteer feature: `model.gazetteer`, text/gazetteer.py):
#   P: the F recipe + `model.gazetteer=true` on NCBI-disease, BC5CDR and linnaeus (seeds 42/1/2; nine processes, as
#      F and M), against session 5-6's b128 runs without it (same code path, seeds and time cap)
#   Q: BC2GM, the F recipe with and without the gazetteer side by side (seeds 42/1/2, six processes): session 6's
#      BC2GM b128 ran beside eight others, and one seed was cut by its time cap, so it gets a fresh baseline
#   R: the four-corpus model (G's corpora.json and recipe) with the gazetteer, seeds 42/1/2, against P and Q's single
#      models with it; beside it the final recipe (train+devel, fixed epochs = each seed's best epoch in P: 23/12/15,
#      model-last) on NCBI-disease with the gazetteer (6 processes)
# Session 10 (issue 14; `.devdata/h4` is built by `bench/gpu/make_devdata.py`):
#   S: the default config of the time (batch 32, lr 1e-3, no warm-up, the gazetteer; pinned below by B32, since the
#      defaults are batch 128 since this session) on BC2GM, seeds 42/1/2 — three processes only, so a batch-32 BC2GM
#      run converges inside one call
#   T: the same on linnaeus and BC5CDR (seeds 42/1/2, six processes): with S and U, the batch-32 side of a
#      same-backend comparison with session 9's b128 + gazetteer runs (P, Q) on dev
#   U: the same on NCBI-disease (seeds 42/1/2), beside the product's final recipe (`nerservice train --final`:
#      phase 1 with early stopping, phase 2 on train+devel) on BC5CDR with the b128 recipe + gazetteer (today's
#      defaults; seeds 42/1/2, each its own phase 1)
# Session 11 (issue 14, the multi-corpus target: BC2GM and NCBI-disease were below their single models in R):
#   V: two four-corpus variants of R (today's defaults = R's recipe), seeds 42/1/2, six processes: a wider shared
#      encoder (`model.lstm_units=256`: four corpora share what one has alone) and corpus weights (`weight` 2 for
#      BC2GM and NCBI-disease in the corpora config: two passes over each per epoch, corpora-w.json)
#   W: V's corpus weights alone (three processes, so the runs get ~2x the steps of V's: V cut them at epoch 9)
#   X: the final recipe's phase 2 for W's model (`multi_corpus.py --final-epochs E`: every corpus on train + devel,
#      E = the seed's best epoch in W, model-last), seed 1 only (E = 14): the last 7.7 device minutes of the session
# Session 12 (issue 14, the final recipe on W's model; X's one run was cut):
#   Y: phase 2 for W's seeds 42 and 2 (E = 15 and 17, W's best epochs), two processes so that 17 epochs + the first
#      epoch's compiles fit one call
#   Z: phase 2 for W's seed 1 (E = 14) beside the product's `--final` on BC5CDR, seed 1 (the seed U's limit cut);
#      run right after Y on the still-warm machine, so the multi run finds Y's compiles in /tmp/jaxcache
#   AA: distillation on BC5CDR with today's defaults (`distil_gpu.py`, the final protocol): three teachers on train +
#      devel for 24 epochs (the mean of the best epochs phase 1 chose in U and Z: 21, 23, 29), their ensemble, one
#      student (gold weight 0) for 20 epochs on BC5CDR train + devel + the train and devel tokens of the other three
#      corpora — session 8's student (12 epochs, NCBI-disease) was still fitting its teacher when it stopped
#      (AA's timeout killed the script before the student's evaluation: no student figure)
#   AB, AC (prepared in session 12, not run yet): AA in two calls on one warm machine (issue AC within the machine's
#      30-s idle release, as Z followed Y): AB trains and scores the teachers and their ensemble (--teachers-only,
#      folders left in /tmp/distil on the device), AC distils 3 students (seeds 42/1/2, 20 epochs as AA) from them with
#      the whole call for the students; AC fails at once if the machine was released in between
# Session 13 (prepared, not run: `nerservice distil --corpora`, a multi-corpus teacher's student, is new):
#   AF: after Y and then "Z" with SEEDS=1 only (the three four-corpus final models of session 12, left in
#      /tmp/multi-final-S on the same warm machine), their ensemble and one multi-corpus student (the product's
#      `nerservice distil --corpora --keep last --dev-in-train`: every corpus's train + devel, every sentence
#      training every head; 16 epochs); the student's and the ensemble's per-corpus test F1 in one JSON
# Session 14 (issue 14: why the BC5CDR student stops at a member's F1):
#   AG: AB again (three BC5CDR teachers on train + devel, 24 epochs, their ensemble; folders left in /tmp/distil on the
#      device) + the ensemble's target confidence (`--target-stats 1 2 3`, bench/gpu/teacher_confidence.py) on its
#      own training text, on the 0.96M unlabelled tokens and on test, at temperatures 1, 2 and 3
#   AH: AC with `distil.temperature=2` (three students, seeds 42/1/2, from AG's teachers on the still-warm machine)
#   AI: AC with a wider student (`model.lstm_units=256`, temperature 1), seeds 42/1/2
#   AK (prepared, not run; the CPU runs of BENCHMARKS session 14 say it is not worth device time): after AG on
#      the same warm machine, AC with synthetic transfer text (`distil.augment=1`: one variant
#      of each labelled sentence, mentions and words swapped, labelled by the teachers), seeds 42/1/2
# Session 15 (issue 14: does self-distillation lift a multi-corpus model? BENCHMARKS session 14's CPU students beat
#   their two-corpus teachers on NCBI-disease test by 1.7-1.9 with dev level, but the teachers were time-capped):
#   AL: W again (three four-corpus teachers, weights 2/1/2/1, train splits, model-best by mean dev F1; folders left
#      in /tmp/multi-w2-S on the device)
#   AM: on the still-warm machine, one four-corpus student per AL teacher (the product's `nerservice distil --corpora
#      --keep best`: the teacher's targets on every corpus's train text train every head; dev held out from both,
#      so dev may say whether the student is better)
#   (AM never ran: the machine passed its 30-s idle release between the two calls and AL's teachers went with it)
#   AN: what fits one call instead, teacher then student per seed (42/1/2, three chains side by side): the
#      two-corpus model of BENCHMARKS session 14 (NCBI-disease + linnaeus, per-corpus batching, today's defaults,
#      `nerservice train --corpora`, train splits, 4-min cap), then its student (`nerservice distil --corpora
#      --keep best`, 3.6-min cap): dev held out from both
# Session 16 (issue 14: the linnaeus default-config target, 85.0; today's defaults give 82.00 GPU / 83.54 CPU, with
#   dev F1 at 95-96 and recall on new species names the loss — BENCHMARKS sessions 10 and 12):
#   AO: word dropout (`model.word_dropout`: a training token's word id becomes <unk> with this probability, so the
#      network learns to tag from characters and context) 0 / 0.1 / 0.25 on linnaeus, seeds 42/1/2, nine processes,
#      with each model's recall on dev / test mentions seen and unseen in train (train_gpu.py --seen-unseen)
#   AP: word dropout 0.1 (AO: dev level on linnaeus, -0.12) on NCBI-disease, BC5CDR and BC2GM (seeds 42/1/2, nine
#      processes), against session 9's P and Q (today's defaults, same seeds): a default is chosen by dev F1 over the
#      four corpora
#   AQ: linnaeus with word dropout 0 and 0.1 on three more seeds (3/4/5; its dev spread is as large as the effect), and
#      NCBI-disease with word dropout 0 (seeds 42/1/2): a same-day baseline for AP's runs (nine processes)
# Session 17 (issue 14: session 16 made word dropout 0.1 a default; the multi-corpus target was met without it):
#   AR: W again with today's defaults (word dropout 0.1; three four-corpus processes, seeds 42/1/2), beside linnaeus
#      with character encoders of twice NerDL's width (CHAR2: 50-d char embeddings, 60 CNN filters, 50 BiLSTM units
#      per direction; seeds 42/1/2) — names never seen in training are where linnaeus loses, and characters are
#      what the network has for them
#   AS: CHAR2 on NCBI-disease, BC5CDR and BC2GM (seeds 42/1/2, nine processes), against session 16's AP (today's
#      defaults, same seeds): a default is chosen by dev F1 over the four corpora
#   AT: AR's four-corpus runs had the GPU shared with AR's linnaeus runs and were cut by their cap at epoch 12 while
#      still improving (session 15's AL, alone, reached 18): W with today's defaults again, alone (seeds 42/1/2)
# Session 18 (issue 14: the BC5CDR one-model target, 88.0; session 14: on its own training text an ensemble's
#   targets are the gold tags again, so a student learns what the ensemble knows beyond gold only on other text):
#   cross-fitted teachers, three calls on one warm machine (each within the 30-s idle release of the last):
#   AU: AG's three BC5CDR teachers on train + devel, 24 epochs (folders in /tmp/distil on the device), their ensemble
#   AV: six cross-fitting teachers, three (seeds 42/1/2) on BC5CDR train only and three on devel only, 24 epochs,
#      model-last (`distil_gpu.py --cross-fit`, `train_gpu.py --fold`; folders in /tmp/cf); each half's ensemble
#      scored on the half it did not see and on test, and how soft its targets are there
#   AW: three students (seeds 42/1/2), session 13's AC recipe (20 epochs, model-last, BC5CDR train + devel + the
#      0.96M unlabelled tokens) with one change: each labelled sentence takes its targets from the ensemble of the
#      half it is not in (AV), mixed with its gold path at weight 0.5 (`distil.gold_weight`, fixed beforehand: the
#      final protocol has no held-out dev to choose it); AU's ensemble labels the unlabelled text as before
# Session 19 (issue 14: AW's half-data fold teachers scored 85.1-86.2 on the half they labelled, against ~87.4 for
#   a model on all of train + devel; fold teachers on more of the text should give better targets): 4-fold
#   cross-fitting (bench/gpu/folds.py: four contiguous blocks of BC5CDR train + devel, ~2,285 sentences each), four
#   calls on one warm machine:
#   AX: fold teachers 1of4 and 2of4 (each on the other three blocks, 75 % of the text; seeds 42/1/2, six processes),
#      24 epochs, model-last (folders in /tmp/kf on the device)
#   AY: fold teachers 3of4 and 4of4 the same way, then (--teachers-only) every fold ensemble scored on its block and
#      on test, and the main teacher — the four seed-42 fold models as one ensemble, each member on 75 % of the
#      text, instead of AU's three teachers on all of it (three more trainings do not fit the device budget)
# Session 34 (issue 14, a frozen pretrained encoder; DEVDATA=.devdata/enc: NCBI-disease and BC5CDR, their GloVe rows,
#   and MiniLM-L6's folder in float16 with the word pieces those corpora use, 10,504 of 30,522, built in session 34):
#   EN: the default config on EN_CORPUS (NCBI-disease), seeds 42/1/2, with and without model.encoder (six processes)
# Session 35 (issue 14: the encoder led NCBI-disease dev for ~8 epochs, then levelled off 1.0 below the defaults):
#   EV: EN_CORPUS (NCBI-disease), seeds 42/1/2: the defaults, and the encoder with model.encoder_dropout 0.5 and 0.75
#       (dropout on its mixed states alone, ELMo's recipe), nine processes; dev chooses
#   EW: EV's encoder_dropout 0.5 runs alone (3 processes): in EV the nine processes kept 16 cores at load 60-70, and
#       the encoder runs spent 420 s of their 7.5-min cap compiling their first epoch (then 1-3 s per epoch)
#   Session 35 ran EV once (H200, 542 s: the defaults 87.75 dev; every encoder run cut at epoch 3-5) and could not
#   start EW (refused starts). Next: `DEVDATA=.devdata/enc bash bench/gpu/accuracy_device.sh EW`, then EF with
#   B_EPOCHS / EF_EPOCHS = the mean best epochs (EV's defaults: 28 / 30 / 34) and EF_SETTINGS = EW's settings
#   EF: the final recipe's phase 2 (train + devel, EF_EPOCHS epochs, model-last; train_gpu.py --train-on-dev) for the
#       defaults and for EF_SETTINGS (EV's dev-chosen encoder variant), seeds 42/1/2, six processes
#   EM: (DEVDATA=.devdata/enc4: the four corpora, GloVe gzipped, the pieces of all four, 16,502) HW's four-corpus
#       model with and without model.encoder, seeds 42/1/2 (six processes)
#   AZ: three students (seeds 42/1/2), AW's recipe (20 epochs, model-last, gold weight 0.5, the 0.96M unlabelled
#      tokens, fixed before the run) with each block's sentences labelled by its fold's 3-model ensemble and the
#      unlabelled text by AY's main teacher; --no-teacher-eval, so the students keep the call for training
#   BA: the control, on the same warm machine right after AZ: AZ with gold weight 0 (the cross-fitted targets alone),
#      so the two differ only in the gold mix (session 19 ran it as AZ with this change made by `sed` in the call)
# Session 20 (issue 14: students plateau at 87.3-87.7 whoever labels the 236k labelled tokens; the text the
#   teachers have not seen is what carries their knowledge, and the only in-domain such text is the held-out fold):
#   cross-fitted synthetic text, three calls on one warm machine:
#   BB: AU's three teachers and AV's six half-data fold teachers in one go (nine processes side by side, 24 epochs,
#      model-last; folders in /tmp/cf20), the main ensemble scored on test
#   BC: three students (seeds 42/1/2), AW's recipe (halves, gold weight 0.5, the 0.96M unlabelled tokens) + one
#      synthetic variant of each labelled sentence (`distil.augment=1`: mentions swapped within their type at 0.5,
#      other words at 0.1), each variant labelled by the fold teacher that never saw its source sentence and mixed
#      with the gold path of its construction; 16 epochs (not AW's 20: the variants add 20 % tokens per epoch and
#      20 epochs would not fit one call)
#   BD: the control: BC without the variants (AW's recipe at 16 epochs), same teachers, same seeds
#   BE: BC at AW's 20 epochs with EPOCHS (20) and AUGMENT (1) from the environment, on BB's teachers (ran in
#      session 24 right after BB: alone on the GPU the three students finished 20 epochs in one call, ~9 min; had
#      --deadline-s stopped them, a second call on the warm machine resumes them from their checkpoints)
# Session 25 (issue 14: NCBI-disease's final one-model target, 87.0): BB + BE, the recipe that met BC5CDR's, moved
#   to NCBI-disease unchanged but for the folds — NCBI-disease's devel is a seventh of train + devel, so the
#   corpus's own halves would give one fold 0.9k sentences to learn from: two contiguous blocks (`--kfold 2`, the
#   product's `--distil` folds) instead. Two calls on one warm machine (the second within the 30-s idle release):
#   NB: 3 teachers on NCBI-disease train + devel and 6 fold teachers (3 per block, each on the other block), nine
#      side by side, 24 epochs, model-last (folders in /tmp/ncf on the device)
#   NE: three students (seeds 42/1/2), BE's settings (20 epochs, gold weight 0.5, one variant per sentence, model-
#      last) with the train + devel text of BC5CDR, BC2GM and linnaeus (1.08M tokens; none of it is an NCBI-disease
#      test sentence — checked) labelled by NB's main teacher; a second NE call resumes students --deadline-s cut
#   BG: what `--jobs` buys on one GPU: `nerservice train --seeds 3 --jobs J` (NCBI-disease, 10 epochs, the defaults)
#      (EPOCHS epochs, default 10) with J = 3 (three JAX worker processes sharing the GPU), then J = 1 (one after another), each with its own
#      empty JAX compilation cache so that neither reuses the other's compiles; wall time of each command
# Session 26 (issue 14): a four-corpus teacher for the NCBI-disease student — NE with its main teacher replaced by
#   three four-corpus final models seen through their ncbi head (`--teacher-head ncbi`, nerservice/distil/head.py),
#   the four-corpus model being +1.22 over single-corpus models on NCBI-disease (session 17). Three calls on one
#   warm machine, each within the previous one's 30-s idle release:
#   MT: the four-corpus model W (weights ncbi 2, bc2gm 2, today's defaults) on train + devel of every corpus for 15
#      epochs (the mean of AT's dev-chosen best epochs 17 / 16 / 12), model-last, seeds 42/1/2 side by side
#      (/tmp/mt-S); a time cap (8.4 min) may cut one short: its JSON says how many epochs ran
#   MF: NE's fold teachers again (3 per block of NCBI-disease train + devel, 24 epochs, single-corpus), six side by
#      side (/tmp/mcf), and MT's ensemble's ncbi head and its members scored on NCBI-disease test
#   MS: three students (seeds 42/1/2), NE's settings exactly, the labelled text's targets from MF's fold teachers,
#      the unlabelled text's from MT's ensemble's ncbi head
# Session 27 (issue 14): four-corpus fold teachers for the NCBI-disease student — MS's students had the four-corpus
#   model's targets on the unlabelled text only; their labelled text's came from single-corpus fold teachers (84.56 /
#   84.64 held out). Here both come from four-corpus models:
#   FK: four-corpus fold teachers side by side (MT's recipe: weights ncbi 2 / bc2gm 2, 15 epochs, model-last;
#      `multi_corpus.py --fold ncbi:IofK`: NCBI-disease trains on the other blocks of its train + devel, the same
#      K blocks `distil_gpu.py --kfold K` hands out, and its dev is the held-out block; the other corpora train on
#      train + devel), folds 1ofK..KofK (K=${K:-2}) x seeds $TSEEDS (default 42/1/2), in /tmp/fk-FOLD-SEED. They
#      may not finish in one call: repeat FK on the warm machine (within its 30-s idle release); each call resumes
#      the unfinished runs from their checkpoints (`--resume`) and skips finished ones
#   FS: three students (seeds 42/1/2), MS's settings exactly; the labelled text's targets from FK's fold teachers
#      (their ncbi head), the unlabelled text's from the ensemble of all of them (each saw every other corpus whole)
#      Run with the same K and TSEEDS as FK. Session 27 ran K=4 TSEEDS=42: four runs, each fold teacher on 3/4 of
#      NCBI-disease (so their ensemble, the unlabelled text's teacher, is near MT's full-data models).
#      FS_DEADLINE (s, default 575) shortens the students' wall-clock budget when less device time is left: they
#      then stop before epoch 20 (their JSON says how many ran) — not MS's settings any more, and reported so
#      Session 28 planned K=3 TSEEDS=42 (three fold teachers, each on 2/3 of NCBI-disease: three processes should
#      finish FK in one call, as MT's three did in 525 s; four would not) — not run: by the time a machine came, the
#      device time left could not pay for FK and FS (~18 min). Session 29 ran it (one H200, FK 530 s, FS 539 s):
#      students 85.83 (sd 0.38), below session 26's MS (86.47); the fold teachers' ensemble 87.18 (BENCHMARKS
#      "Session 29")
# Session 28 (issue 14):
#   PF: the product's final recipe on CORPUS (default NCBI-disease) as a user runs it — `nerservice train --final --seeds 3 --jobs 3`
#      (phase 1 with early stopping on dev, then three final models on train + devel for phase 1's epoch count,
#      side by side, and their ensemble): the product path's own figures for the single final models and the
#      ensemble. Repeat PF on the warm machine until $R/final-seeds-$CORPUS.json is not empty (each call resumes). Session 28
#      ran it on NCBI-disease, BC5CDR and linnaeus (one call each, 3.5-4.3 min; BENCHMARKS "Session 28")
# Session 30 (issue 14): session 26's MS with a better teacher for the unlabelled text. MS (86.47) took the labelled
#   text's targets from single-corpus 3-model fold ensembles (2 blocks) and the unlabelled text's from MT's ensemble
#   (86.64 on test); FS (85.83) took both from FK's one-model four-corpus folds, whose ensemble scored 87.18. GS keeps
#   MS's labelled targets and takes the unlabelled text's from FK's ensemble, so only that teacher changes from MS:
#   GK: FK (K=3 TSEEDS=42: three four-corpus fold teachers, /tmp/fk-IofK-42) and MF's six single-corpus fold teachers
#      (2 blocks x seeds 42/1/2, 24 epochs, model-last, /tmp/mcf/teacher-BofK-S: the command distil_gpu.py
#      --cross-fit runs for each) side by side, nine processes; repeat GK on the warm machine until FK's three JSON
#      files have their per-corpus figures (it resumes FK and skips what finished)
#   GS: three students (seeds 42/1/2), MS's settings exactly: labelled targets from the MF-style fold ensembles, the
#      unlabelled text's from the ensemble of FK's three models (their ncbi head)
#   Session 30 ran GK once on an H100: the nine processes kept 16 CPU cores at load 30-50 and FK reached only 9-10 of
#   its 15 epochs in 580 s (MF's six finished, 313 s each). The repeat of GK then skipped FK (a grep took a partial
#   JSON for a finished run; now `finished`) and, with nothing to wait for, hung on a bare `wait` until the call's
#   limit; GS then ran on the 9-10-epoch FK models with the 8 device minutes left and was cut at epoch 15 of 20,
#   before scoring. No figure (BENCHMARKS "Session 30"). Next time: FK alone in call 1 (as session 29), MF in call 2.
#   GM: GK's second half alone (MF's six fold teachers). Session 31's order, chained on one warm machine:
#   `K=3 TSEEDS=42 ... FK`, then `GM`, then `GS` (GK itself looks for FK's results in its own /tmp/resGK only)
#   Session 31 ran that chain on an H100 (518 + 146 + 507 s): FK's ensemble 87.13 on test, GS's students 85.67 /
#   85.73 / 84.84 (mean 85.41), 1.06 below MS (BENCHMARKS "Session 31"). Next: MS again as it was (MT, MF, MS).
# Session 32 reran MT, MF, MS unchanged on an H100, then `SSEEDS="3 4 5" FS_DEADLINE=535 ... MS` (SSEEDS: MS's
#   student seeds, default 42 1 2): students 85.68 over six seeds, not 86.47; every stage ran lower than in session
#   26 (BENCHMARKS "Session 32"). So: **compare a GPU experiment only with a baseline run in the same session on the
#   same machine** (chain it before or after the experiment); a three-seed mean from another day moved 0.6-0.8.
# Session 33 (issue 14): fine-tuning the four-corpus model on one corpus (`bench/gpu/finetune_head.py`: the whole
#   network goes on training on that corpus alone from the four-corpus weights; every figure paired with the
#   model it started from, scored in the same process). Four calls chained on one warm machine:
#   HW: W phase 1 (AT: weights ncbi 2 / bc2gm 2, train splits, model-best by mean dev F1, 7.0-min cap), seeds
#      42/1/2 side by side, /tmp/multi-w2-S
#   H1: phase 1 of the fine-tuning, twelve processes: heads ncbi and bc5cdr x rates $FT_RATES (default 0.001 0.004)
#      x HW's three models; train split, early stopping on that head's dev F1 (patience 3, <= 12 epochs; epoch 0
#      = the start, which a fine-tuned epoch must beat). Dev chooses, per head, the rate and E (the mean kept epoch)
#   MT: as session 26 (the four-corpus final models, /tmp/mt-S; also the same-session baseline)
#   HD: HW with `model.word_dropout=0` (session 17 saw the four-corpus model's NCBI-disease dev 0.65 higher without
#      word dropout, across sessions; this is the same-session check against HW's dev F1), /tmp/multi-w2wd0-S
#   H2: phase 2: MT's three models fine-tuned on HEAD's train + devel for E epochs at RATE, model-last, for each
#      "HEAD:RATE:E" in $FT_FINAL (e.g. FT_FINAL="ncbi:0.001:4 bc5cdr:0.001:3")
# Session 23 (prepared, not run: no GPU was lent; `nerservice train --final --seeds N --distil --jobs J` is new):
#   BF: the product's one-command recipe on BC5CDR, seed SEED (default 42): phase 1, then the 3 final models and the
#      6 fold teachers (2 blocks of train + devel) as 9 worker processes sharing the GPU, then one student on
#      train + devel + variants + the 0.96M unlabelled tokens of the other corpora — session 20's BC recipe as a
#      user runs it. It takes more than one call: repeat BF on the warm machine (within its 30-s idle release)
#      until $R/final-distil-$SEED.json is not empty; each call resumes every run from its checkpoint. The
#      command runs in its own session (setsid) and the call's end kills the whole group, workers included.
# Session 38 (prepared, not run): the encoder inside the final-distil recipe for NCBI-disease's one-model target
#   (tests/encoder/test_training.py runs this path with a tiny encoder):
#   FE: `nerservice train --final --seeds 3 --distil --jobs 9` on CORPUS with FE_SETTINGS, e.g.
#      `DEVDATA=<make_devdata.py --encoder minilm-l6 folder of the four corpora> FE_SETTINGS="--encoder <it>/encoder"
#      bash bench/gpu/accuracy_device.sh FE`, repeated on the warm machine (~3 calls); then FE without FE_SETTINGS
#      as the same-session baseline (session 32: compare only within a session). Four corpora, their GloVe rows and
#      the encoder may pass the carry's 64 MiB (two corpora made 53 MB): then `--only NCBI-disease BC5CDR linnaeus`
#      (51 MB). Session 39: FE_SETTINGS="--encoder $DD/encoder --student-set model.encoder=null" — encoder teachers,
#      a student without the encoder (the fast model to deploy); fewer device seconds than an encoder student
# Session 39: EE (below): the final recipe's phase 2 on NCBI-disease with and without the encoder, 3 seeds each, and
#   each variant's 3-model ensemble on test (DEVDATA=.devdata/fe2: --only NCBI-disease BC5CDR --encoder, 42 MB)
# Calls B-R ran "the defaults" of their session: batch 32 at 1e-3 without warm-up (and, before session 9, without
# the gazetteer); to reproduce one today, add $B32 (and --set model.gazetteer=false before session 9) to its runs.
# Nine to ten trainings share the GPU in B and C: their tokens/s are not benchmarks; F1 is what they are for.
# Wait for the runs by PID, never a bare `wait`: it also waits for the GPU monitor loop, which never ends, so the
# results are never packed (session 6's call E lost its tar that way).
# Every run's time cap (training.max_minutes) must leave >= 1.5 min before the call's own limit: a run stops
# only after the epoch that crosses its cap, then evaluates test and saves.
set -u
DD=${DEVDATA:-.devdata/h4}  # EN's calls carry .devdata/enc (two corpora and the encoder: the carry holds 64 MiB)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $DD/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/$DD/site:$PWD KERAS_BACKEND=jax PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
D=$DD/data; V="--embeddings $(ls $D/glove50.txt $D/glove50.txt.gz 2> /dev/null | head -1)"; R=/tmp/res$1; mkdir -p $R
CALL=$1
pack() {  # every result file so far, into $OUT: the monitor calls it each minute, so a call killed at its limit still returns
  (cd $R && find . -maxdepth 2 -type f \( -name "*.json" -o -name "*.log" -o -name "*.jsonl" -o -name "*.err" \) \
    | tar czf $OUT/res$CALL.tgz.tmp -T - && mv $OUT/res$CALL.tgz.tmp $OUT/res$CALL.tgz)
}
( while sleep 60; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; uptime; pack; done ) & mon=$!
# Wait for the process group led by PID (a setsid command), killing the whole group, workers included, at 575 s
# into the call so that pack still runs: wait_capped PID
wait_capped() {
  local p=$1 k
  ( sleep $((575 - SECONDS)); kill -TERM -- -$p 2> /dev/null ) & k=$!
  wait $p; kill $k 2> /dev/null
}
# Trainings on CORPUS... for seeds $SEEDS (42/1/2), side by side, each with SETTINGS:
#   run_seeds TIMEOUT_S CAP_MIN TMP_PREFIX RESULT_TAG "SETTINGS" CORPUS...
run_seeds() {
  local timeout_s=$1 cap=$2 tmp=$3 tag=$4 settings=$5 pids="" s c; shift 5
  for s in ${SEEDS:-42 1 2}; do
    for c in "$@"; do
      timeout $timeout_s python3 bench/gpu/train_gpu.py --corpus $D/$c $V --no-ceiling --no-inference $settings \
        --set training.max_minutes=$cap --set training.seed=$s --out /tmp/$tmp-$c-$s \
        --json-out $R/$c-$tag-$s.json > $R/$c-$tag-$s.log 2>&1 &
      pids="$pids $!"
    done
  done
  wait $pids
}
# The b128 recipe (today's default batch, rate and warm-up) + EXTRA: b128 TIMEOUT_S CAP_MIN TMP_PREFIX RESULT_TAG "EXTRA" CORPUS...
B128="--set training.batch_size=128 --set training.learning_rate=0.004 --set training.warmup_epochs=2 --set training.warmup_start_factor=0.25"
b128() { local t=$1 cap=$2 tmp=$3 tag=$4 extra=$5; shift 5; run_seeds $t $cap $tmp $tag "$B128 $extra" "$@"; }
# The batch-32 default config of sessions 4-9 (with session 9's gazetteer): defaults TIMEOUT_S CAP_MIN TMP_PREFIX CORPUS...
B32="--set training.batch_size=32 --set training.learning_rate=0.001 --set training.warmup_epochs=0 --set model.gazetteer=true"
defaults() { local t=$1 cap=$2 tmp=$3; shift 3; run_seeds $t $cap $tmp defaults "$B32" "$@"; }
# The four-corpus model, today's defaults + SETTINGS: multi TIMEOUT_S CAP_MIN TAG CORPORA_JSON "SETTINGS"
multi() {
  local t=$1 cap=$2 tag=$3 cj=$4 settings=$5 pids="" s
  for s in ${SEEDS:-42 1 2}; do
    timeout $t python3 bench/gpu/multi_corpus.py --one multi --seed $s --corpora $cj $V $settings \
      --set training.max_minutes=$cap --out /tmp/multi-$tag-$s --json-out $R/multi4-$tag-$s.json > $R/multi4-$tag-$s.log 2>&1 &
    pids="$pids $!"
  done
  wait $pids
}
# The final recipe's phase 2 for W's model, E = the seed's best epoch in W (42: 15, 1: 14, 2: 17), no time cap
# short of the call's limit (a cut phase 2 has no figure): final_multi TIMEOUT_S
final_multi() {
  local t=$1 pids="" s e
  for s in ${SEEDS:-42 1 2}; do
    case $s in 42) e=15 ;; 1) e=14 ;; 2) e=17 ;; esac
    timeout $t python3 bench/gpu/multi_corpus.py --one multi --seed $s --final-epochs $e --corpora $D/corpora-w.json $V \
      --set training.max_minutes=9.5 --out /tmp/multi-final-$s --json-out $R/multi4-w2-final-$s.json \
      > $R/multi4-w2-final-$s.log 2>&1 &
    pids="$pids $!"
  done
  wait $pids
}
# corpora.json with a weight per corpus: weighted NAME=W... > FILE
weighted() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); w = dict(a.split("=") for a in sys.argv[2:]);
[c.update(weight=float(w[c["name"]])) for c in d["corpora"] if c["name"] in w]; print(json.dumps(d))' $D/corpora.json "$@"
}
# Session 19's 4-fold teachers in /tmp/kf: T = the main teacher's members (each fold's seed 42), FT = --fold-teachers
finished() {  # a multi_corpus.py --json-out file of a run that ended: a top-level per_corpus, not a partial history
  # (session 30: a grep for "per_corpus" also matched the epochs of a partial file, so an unfinished run was skipped)
  python3 -c 'import json, sys; sys.exit(0 if "per_corpus" in json.load(open(sys.argv[1])) else 1)' "$1" 2> /dev/null
}
kf_teachers() {
  local f s m
  T=""; FT=""
  for f in 1of4 2of4 3of4 4of4; do
    T="$T /tmp/kf/teacher-$f-42/model-last"; m=""
    for s in 42 1 2; do m="$m,/tmp/kf/teacher-$f-$s/model-last"; done
    FT="$FT --fold-teachers $f=${m#,}"
    ls ${m//,/ } > /dev/null || exit 1
  done
}
# MF's six single-corpus fold teachers (2 blocks x seeds 42/1/2, 24 epochs, model-last, /tmp/mcf/teacher-BofK-S), the
# runs distil_gpu.py --cross-fit trains, started in the background (PIDs appended to $pids); skips finished folders
mcf_fold_teachers() {
  local f s
  mkdir -p /tmp/mcf
  for f in 1of2 2of2; do
    for s in 42 1 2; do
      [ -d /tmp/mcf/teacher-$f-$s/model-last ] && continue
      timeout $((580 - SECONDS)) python3 bench/gpu/train_gpu.py --corpus $D/NCBI-disease $V --fold $f --no-ceiling \
        --no-inference --set training.seed=$s --set training.epochs=24 --set training.max_minutes=7 \
        --out /tmp/mcf/teacher-$f-$s --json-out $R/mcf-teacher-$f-$s.json > $R/mcf-teacher-$f-$s.log 2>&1 &
      pids="${pids:-} $!"
    done
  done
}
CHAR2="--set model.char_embedding_dim=50 --set model.char_cnn_filters=60 --set model.char_lstm_units=50"
# EV and EW (session 35): the encoder with dropout 0.5 on its mixed states
ENC_D50="--set model.encoder=$DD/encoder --set model.encoder_dropout=0.5"
case $1 in
B)
  runs=()
  for s in 42 1 2; do for c in NCBI-disease BC5CDR; do runs+=(--run "$c-$s: --corpus $D/$c $V --set training.seed=$s"); done; done
  mp=""
  for s in 42 1 2; do
    timeout 540 python3 bench/gpu/multi_corpus.py --one multi --seed $s --corpora $D/corpora2.json $V \
      --set training.max_minutes=7.0 --out /tmp/multi-$s --json-out $R/multi-$s.json > $R/multi-$s.log 2>&1 &
    mp="$mp $!"
  done
  timeout 545 python3 bench/gpu/sweep.py --out $R --per-gpu 6 --deadline-min 9.0 --margin-min 2.0 --min-run-min 1 "${runs[@]}"
  wait $mp ;;
C)
  C="--corpus $D/NCBI-disease $V"
  timeout 545 python3 bench/gpu/scaling_gpu.py task-body --world 1 $C --set training.max_minutes=6.6 --set training.seed=42 \
    --out /tmp/tb --json-out $R/taskbody.json > $R/taskbody.log 2>&1 & tb=$!
  timeout 545 python3 bench/gpu/scaling_gpu.py sweep $C --set training.max_minutes=6.6 --workers 2 4 8 --rules linear \
    --seeds 42 1 2 --out $R/grow > $R/grow.jsonl 2> $R/grow.err
  wait $tb ;;
D)
  B="--corpus $D/BC5CDR $V --no-ceiling --no-inference --set training.batch_size=128 --set training.learning_rate=0.004"
  B="$B --set training.warmup_epochs=2 --set training.warmup_start_factor=0.25 --set training.max_minutes=2.4"
  for s in 42 1 2; do
    timeout 215 python3 bench/gpu/train_gpu.py $B --set training.seed=$s --out /tmp/d$s --json-out $R/bc5cdr-b128-$s.json \
      > $R/bc5cdr-b128-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
E)
  W="--no-ceiling --no-inference --set training.warmup_epochs=2 --set training.max_minutes=7.0"
  for s in 42 1 2; do
    for job in "NCBI-disease 128 0.004 0.25" "NCBI-disease 64 0.002 0.5" "BC5CDR 128 0.004 0.25"; do
      read -r c w lr f <<< "$job"
      timeout 560 python3 bench/gpu/train_gpu.py --corpus $D/$c $V $W --window-tokens $w --set training.learning_rate=$lr \
        --set training.warmup_start_factor=$f --set training.seed=$s --out /tmp/e-$c-$w-$s \
        --json-out $R/$c-w$w-$s.json > $R/$c-w$w-$s.log 2>&1 &
      pids="${pids:-} $!"
    done
  done
  wait $pids ;;
F)
  b128 565 7.2 f b128 "--set model.gazetteer=false" BC2GM linnaeus BC5CDR ;;
G)
  B="--set training.batch_size=128 --set training.learning_rate=0.004"
  B="$B --set training.warmup_epochs=2 --set training.warmup_start_factor=0.25 --set training.max_minutes=7.2"
  for s in 42 1 2; do
    timeout 565 python3 bench/gpu/multi_corpus.py --one multi --seed $s --corpora $D/corpora.json $V $B \
      --out /tmp/multi4-$s --json-out $R/multi4-b128-$s.json > $R/multi4-b128-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
L)
  T=""; for c in NCBI-disease BC5CDR BC2GM; do T="$T $D/$c/train.tsv $D/$c/devel.tsv"; done
  timeout 300 python3 -m nerservice.cli.main charlm --text $T $D/linnaeus/train.tsv --dev $D/linnaeus/devel.tsv \
    --out /tmp/lm --set units=512 --set batch_size=512 --set learning_rate=0.003 --set epochs=200 \
    --set max_minutes=3.3 > $R/charlm.log 2>&1
  mkdir -p $OUT/lm && cp /tmp/lm/* $OUT/lm/ ;;
M)
  b128 565 7.2 m lm "--set model.char_lm=.devdata/h4/lm" NCBI-disease BC5CDR linnaeus ;;
N)
  b128 500 6.0 n lm "--set model.char_lm=.devdata/h4/lm" BC2GM ;;
O)
  SEEDS="1 2" b128 565 7.2 o lm "--set model.char_lm=.devdata/h4/lm" BC5CDR linnaeus ;;
P)
  b128 565 7.2 p gaz "--set model.gazetteer=true" NCBI-disease BC5CDR linnaeus ;;
Q)
  b128 565 7.2 q gaz "--set model.gazetteer=true" BC2GM & g=$!
  b128 565 7.2 q0 b128 "--set model.gazetteer=false" BC2GM & b=$!
  wait $g $b ;;
R)
  B="--set training.batch_size=128 --set training.learning_rate=0.004 --set model.gazetteer=true"
  B="$B --set training.warmup_epochs=2 --set training.warmup_start_factor=0.25 --set training.max_minutes=7.2"
  for s in 42 1 2; do
    timeout 565 python3 bench/gpu/multi_corpus.py --one multi --seed $s --corpora $D/corpora.json $V $B \
      --out /tmp/multi4g-$s --json-out $R/multi4-gaz-$s.json > $R/multi4-gaz-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  for job in "42 23" "1 12" "2 15"; do
    read -r s e <<< "$job"
    timeout 565 python3 bench/gpu/train_gpu.py --corpus $D/NCBI-disease $V --no-ceiling --no-inference $B --train-on-dev \
      --set training.epochs=$e --set training.seed=$s --out /tmp/rf-$s --json-out $R/NCBI-disease-final-gaz-$s.json \
      > $R/NCBI-disease-final-gaz-$s.log 2>&1 &
    pids="$pids $!"
  done
  wait $pids ;;
S)
  defaults 575 7.9 s BC2GM ;;
T)
  defaults 575 7.6 t linnaeus BC5CDR ;;
U)
  defaults 520 6.6 u NCBI-disease & n=$!
  C=$D/BC5CDR
  for s in 42 1 2; do
    timeout 525 python3 -m nerservice.cli.main train --train $C/train.tsv --dev $C/devel.tsv --test $C/test.tsv $V \
      --final --out /tmp/u-final-$s --no-resume --quiet --json --set training.seed=$s $B128 \
      > $R/BC5CDR-final-b128-$s.json 2> $R/BC5CDR-final-b128-$s.log &
    pids="${pids:-} $!"
  done
  wait $n $pids ;;
V)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 570 7.4 u256 $D/corpora.json "--set model.lstm_units=256" & a=$!
  multi 570 7.4 w2 $D/corpora-w.json "" & b=$!
  wait $a $b ;;
W)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 575 7.7 w2 $D/corpora-w.json "" ;;
X)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  timeout 330 python3 bench/gpu/multi_corpus.py --one multi --seed 1 --final-epochs 14 --corpora $D/corpora-w.json $V \
    --set training.max_minutes=4.3 --out /tmp/multi-final-1 --json-out $R/multi4-w2-final-1.json > $R/multi4-w2-final-1.log 2>&1 ;;
Y)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  SEEDS="42 2" final_multi 575 ;;
Z)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  SEEDS="1" final_multi 575 & m=$!
  C=$D/BC5CDR
  timeout 575 python3 -m nerservice.cli.main train --train $C/train.tsv --dev $C/devel.tsv --test $C/test.tsv $V \
    --final --out /tmp/z-final-1 --no-resume --quiet --json --set training.seed=1 \
    > $R/BC5CDR-final-1.json 2> $R/BC5CDR-final-1.log & f=$!
  wait $m $f ;;
AA)
  timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
    --unlabelled-corpora NCBI-disease BC2GM linnaeus --train-teachers 3 --teacher-set training.epochs=24 \
    --teacher-set training.max_minutes=3.5 --set training.bucket_size=32 --set training.epochs=20 --gold-weights 0 \
    --deadline-s 570 --out /tmp/distil --json-out $R/distil-bc5cdr.json > $R/distil-bc5cdr.log 2>&1 ;;
AB|AU)  # AU (session 18) is AB again
  timeout 560 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR --train-teachers 3 \
    --teacher-set training.epochs=24 --teacher-set training.max_minutes=6 --teachers-only --out /tmp/distil \
    --json-out $R/distil-bc5cdr-teachers.json > $R/distil-bc5cdr-teachers.log 2>&1 ;;
AC)
  T=""; for s in 42 1 2; do T="$T /tmp/distil/teacher-$s/model-last"; done
  ls $T > /dev/null || exit 1
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --unlabelled-corpora NCBI-disease BC2GM linnaeus --teachers $T --set training.bucket_size=32 \
      --set training.epochs=20 --set training.seed=$s --gold-weights 0 --deadline-s 575 --out /tmp/distil-s$s \
      --json-out $R/distil-bc5cdr-student-$s.json > $R/distil-bc5cdr-student-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
AG)
  timeout 570 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR --train-teachers 3 \
    --unlabelled-corpora NCBI-disease BC2GM linnaeus --teacher-set training.epochs=24 --teacher-set training.max_minutes=6 \
    --teachers-only --target-stats 1 2 3 --out /tmp/distil --json-out $R/distil-bc5cdr-teachers.json \
    > $R/distil-bc5cdr-teachers.log 2>&1 ;;
AH|AI|AK)
  T=""; for s in 42 1 2; do T="$T /tmp/distil/teacher-$s/model-last"; done
  ls $T > /dev/null || exit 1
  case $1 in AH) X="--set distil.temperature=2" ;; AI) X="--set model.lstm_units=256" ;; AK) X="--set distil.augment=1" ;; esac
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --unlabelled-corpora NCBI-disease BC2GM linnaeus --teachers $T --set training.bucket_size=32 $X \
      --set training.epochs=20 --set training.seed=$s --gold-weights 0 --deadline-s 575 --out /tmp/distil-$1-s$s \
      --json-out $R/distil-bc5cdr-student-$s.json > $R/distil-bc5cdr-student-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
AL)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 565 7.5 w2 $D/corpora-w.json "" ;;
AM)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  for s in 42 1 2; do
    ls /tmp/multi-w2-$s/model-best > /dev/null || exit 1
    timeout 575 python3 -m nerservice.cli.main distil --teacher /tmp/multi-w2-$s/model-best --corpora $D/corpora-w.json \
      $V --keep best --set training.seed=$s --set training.bucket_size=32 --set training.max_minutes=7.0 \
      --out /tmp/multi-student-$s --no-resume --quiet --json > $R/multi4-student-$s.json 2> $R/multi4-student-$s.log &
    pids="${pids:-} $!"
  done
  wait $pids ;;
AN)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["corpora"] = [c for c in d["corpora"]
if c["name"] in ("ncbi", "linnaeus")]; print(json.dumps(d))' $D/corpora.json > $D/corpora-nl.json
  for s in 42 1 2; do
    ( python3 -m nerservice.cli.main train --corpora $D/corpora-nl.json $V --set training.seed=$s \
        --set training.max_minutes=4.0 --out /tmp/nl-$s/teacher --no-resume --quiet --json \
        > $R/nl-teacher-$s.json 2> $R/nl-teacher-$s.log \
      && python3 -m nerservice.cli.main distil --teacher /tmp/nl-$s/teacher/model-best --corpora $D/corpora-nl.json \
        $V --keep best --set training.seed=$s --set training.bucket_size=32 --set training.max_minutes=3.6 \
        --out /tmp/nl-$s/student --no-resume --quiet --json > $R/nl-student-$s.json 2> $R/nl-student-$s.log ) &
    pids="${pids:-} $!"
  done
  end=$((SECONDS + 565))  # the chains run untimed: the call's end (not a timeout) cuts a slow student
  while [ $SECONDS -lt $end ]; do
    alive=0; for p in $pids; do kill -0 $p 2>/dev/null && alive=1; done
    [ $alive = 1 ] || break; sleep 5
  done ;;
AO)
  for wd in 0 0.1 0.25; do
    run_seeds 565 7.2 ao-$wd wd$wd "--seen-unseen --set model.word_dropout=$wd" linnaeus &
    pids="${pids:-} $!"
  done
  wait $pids ;;
AP)
  run_seeds 570 7.2 ap wd0.1 "--seen-unseen --set model.word_dropout=0.1" NCBI-disease BC5CDR BC2GM ;;
AQ)
  SEEDS="3 4 5" run_seeds 565 7.2 aq-0 wd0 "--seen-unseen --set model.word_dropout=0" linnaeus & pids="$!"
  SEEDS="3 4 5" run_seeds 565 7.2 aq-0.1 wd0.1 "--seen-unseen --set model.word_dropout=0.1" linnaeus & pids="$pids $!"
  run_seeds 565 7.2 aq-n wd0 "--seen-unseen --set model.word_dropout=0" NCBI-disease & pids="$pids $!"
  wait $pids ;;
AR)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 570 7.7 w2 $D/corpora-w.json "" & pids="$!"
  run_seeds 565 7.2 ar char2 "--seen-unseen $CHAR2" linnaeus & pids="$pids $!"
  wait $pids ;;
AT)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 520 7.0 w2 $D/corpora-w.json "" ;;
AS)
  run_seeds 570 7.2 as char2 "--seen-unseen $CHAR2" NCBI-disease BC5CDR BC2GM ;;
AV)
  T=""; for s in 42 1 2; do T="$T /tmp/distil/teacher-$s/model-last"; done
  ls $T > /dev/null || exit 1
  timeout 570 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR --teachers $T \
    --train-teachers 3 --cross-fit --teacher-jobs 6 --teacher-set training.epochs=24 --teacher-set training.max_minutes=6.5 \
    --teachers-only --out /tmp/cf --json-out $R/distil-bc5cdr-folds.json > $R/distil-bc5cdr-folds.log 2>&1 ;;
AW)
  T=""; F=""; G=""
  for s in 42 1 2; do T="$T /tmp/distil/teacher-$s/model-last"; F="$F,/tmp/cf/teacher-train-$s/model-last"
    G="$G,/tmp/cf/teacher-devel-$s/model-last"; done
  ls $T ${F//,/ } ${G//,/ } > /dev/null || exit 1
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --unlabelled-corpora NCBI-disease BC2GM linnaeus --teachers $T --fold-teachers train=${F#,} \
      --fold-teachers devel=${G#,} --set training.bucket_size=32 --set training.epochs=20 --set training.seed=$s \
      --gold-weights 0.5 --deadline-s 575 --out /tmp/distil-cf-s$s \
      --json-out $R/distil-bc5cdr-student-cf-$s.json > $R/distil-bc5cdr-student-cf-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
AF)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  T=""; for s in 42 1 2; do T="$T /tmp/multi-final-$s/model-last"; done
  ls $T > /dev/null || exit 1
  python3 -m nerservice.cli.main ensemble $T --out /tmp/multi-ens > $R/multi-ens.log 2>&1 || exit 1
  timeout 560 python3 -m nerservice.cli.main distil --teacher /tmp/multi-ens --corpora $D/corpora-w.json $V \
    --keep last --dev-in-train --set training.epochs=16 --set training.bucket_size=32 --set training.max_minutes=6 \
    --out /tmp/multi-student --quiet --json > $R/multi-student.json 2> $R/multi-student.log ;;
AX|AY)
  case $1 in AX) FS="1of4 2of4" ;; AY) FS="3of4 4of4" ;; esac
  for f in $FS; do
    for s in 42 1 2; do
      timeout 480 python3 bench/gpu/train_gpu.py --corpus $D/BC5CDR $V --no-ceiling --no-inference --fold $f \
        --set training.epochs=24 --set training.max_minutes=6.5 --set training.seed=$s --out /tmp/kf/teacher-$f-$s \
        --json-out $R/kfold-teacher-$f-$s.json > $R/kfold-teacher-$f-$s.log 2>&1 &
      pids="${pids:-} $!"
    done
  done
  wait $pids
  if [ $1 = AY ]; then
    kf_teachers
    left=$((580 - SECONDS)); [ $left -gt 30 ] || left=30  # SECONDS: since the call's start, the install included
    timeout $left python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --teachers $T --kfold 4 $FT --teachers-only --out /tmp/kf-eval --json-out $R/distil-bc5cdr-kfold.json \
      > $R/distil-bc5cdr-kfold.log 2>&1
  fi ;;
BB)
  timeout 570 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR --train-teachers 3 \
    --cross-fit --teacher-jobs 9 --teacher-set training.epochs=24 --teacher-set training.max_minutes=7.5 \
    --teachers-only --no-teacher-eval --out /tmp/cf20 --json-out $R/distil-bc5cdr-teachers.json \
    > $R/distil-bc5cdr-teachers.log 2>&1 ;;
NB)
  timeout 570 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus NCBI-disease \
    --train-teachers 3 --cross-fit --kfold 2 --teacher-jobs 9 --teacher-set training.epochs=24 \
    --teacher-set training.max_minutes=7.5 --teachers-only --no-teacher-eval --out /tmp/ncf \
    --json-out $R/distil-ncbi-teachers.json > $R/distil-ncbi-teachers.log 2>&1 ;;
NE)
  T=""; F=""; G=""
  for s in 42 1 2; do T="$T /tmp/ncf/teacher-$s/model-last"; F="$F,/tmp/ncf/teacher-1of2-$s/model-last"
    G="$G,/tmp/ncf/teacher-2of2-$s/model-last"; done
  ls $T ${F//,/ } ${G//,/ } > /dev/null || exit 1
  TAG=NE-$(date +%H%M)
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus NCBI-disease \
      --unlabelled-corpora BC5CDR BC2GM linnaeus --teachers $T --kfold 2 --fold-teachers 1of2=${F#,} \
      --fold-teachers 2of2=${G#,} --no-teacher-eval --set training.bucket_size=32 --set distil.augment=1 \
      --set training.epochs=20 --resume --set training.seed=$s --gold-weights 0.5 --deadline-s 575 --margin-s 120 \
      --out /tmp/distil-NE-s$s --json-out $R/distil-ncbi-student-$TAG-$s.json \
      > $R/distil-ncbi-student-$TAG-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
MT)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  for s in 42 1 2; do
    timeout 580 python3 bench/gpu/multi_corpus.py --one multi --seed $s --final-epochs 15 --corpora $D/corpora-w.json $V \
      --set training.max_minutes=8.4 --out /tmp/mt-$s --json-out $R/multi4-final15-$s.json > $R/multi4-final15-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
MF)
  T=""; for s in 42 1 2; do T="$T /tmp/mt-$s/model-last"; done
  ls $T > /dev/null || exit 1
  timeout 570 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus NCBI-disease \
    --teachers $T --teacher-head ncbi --train-teachers 3 --cross-fit --kfold 2 --teacher-jobs 6 \
    --teacher-set training.epochs=24 --teacher-set training.max_minutes=7 --teachers-only --out /tmp/mcf \
    --json-out $R/distil-ncbi-mteachers.json > $R/distil-ncbi-mteachers.log 2>&1 ;;
MS|GS)
  T=""; F=""; G=""
  case $1 in  # the unlabelled text's teachers: MT's three final models (MS) or FK's three fold models (GS)
    MS) for s in 42 1 2; do T="$T /tmp/mt-$s/model-last"; done ;;
    GS) for f in 1of3 2of3 3of3; do T="$T /tmp/fk-$f-42/model-last"; done ;;
  esac
  for s in 42 1 2; do F="$F,/tmp/mcf/teacher-1of2-$s/model-last"; G="$G,/tmp/mcf/teacher-2of2-$s/model-last"; done
  ls $T ${F//,/ } ${G//,/ } > /dev/null || exit 1
  TAG=$1-$(date +%H%M)
  for s in ${SSEEDS:-42 1 2}; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus NCBI-disease \
      --unlabelled-corpora BC5CDR BC2GM linnaeus --teachers $T --teacher-head ncbi --kfold 2 \
      --fold-teachers 1of2=${F#,} --fold-teachers 2of2=${G#,} --no-teacher-eval --set training.bucket_size=32 \
      --set distil.augment=1 --set training.epochs=20 --resume --set training.seed=$s --gold-weights 0.5 \
      --deadline-s ${FS_DEADLINE:-575} --margin-s 120 --out /tmp/distil-$1-s$s \
      --json-out $R/distil-ncbi-student-$TAG-$s.json > $R/distil-ncbi-student-$TAG-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
HW)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi 520 7.0 w2 $D/corpora-w.json "" ;;
HD)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi ${HD_TIMEOUT:-520} ${HD_CAP:-7.0} w2wd0 $D/corpora-w.json "--set model.word_dropout=0" ;;
H1)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json  # the carried data folder replaces what an earlier call wrote
  for h in ${FT_HEADS:-ncbi bc5cdr}; do for r in ${FT_RATES:-0.001 0.004}; do for s in 42 1 2; do
    timeout $((580 - SECONDS)) python3 bench/gpu/finetune_head.py --model /tmp/multi-w2-$s/model-best \
      --corpora $D/corpora-w.json --head $h --set training.learning_rate=$r --set training.epochs=12 \
      --set training.patience=3 --json-out $R/ft1-$h-$r-$s.json > $R/ft1-$h-$r-$s.log 2>&1 &
    pids="${pids:-} $!"
  done; done; done
  wait $pids ;;
H2)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  for x in ${FT_FINAL:?HEAD:RATE:E ...}; do IFS=: read h r e <<< "$x"; for s in 42 1 2; do
    timeout $((580 - SECONDS)) python3 bench/gpu/finetune_head.py --model /tmp/mt-$s/model-last --train-on-dev \
      --corpora $D/corpora-w.json --head $h --set training.learning_rate=$r --set training.epochs=$e \
      --json-out $R/ft2-$h-$r-$e-$s.json > $R/ft2-$h-$r-$e-$s.log 2>&1 &
    pids="${pids:-} $!"
  done; done
  wait $pids ;;
FK)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  for i in $(seq 1 ${K:-2}); do
    f=${i}of${K:-2}
    for s in ${TSEEDS:-42 1 2}; do
      finished $R/multi4-fold-$f-$s.json && continue  # finished in an earlier call
      timeout $((580 - SECONDS)) python3 bench/gpu/multi_corpus.py --one multi --seed $s --final-epochs 15 \
        --fold ncbi:$f --resume --corpora $D/corpora-w.json $V --set training.max_minutes=60 --out /tmp/fk-$f-$s \
        --json-out $R/multi4-fold-$f-$s.json >> $R/multi4-fold-$f-$s.log 2>&1 &
      pids="${pids:-} $!"
    done
  done
  [ -n "${pids:-}" ] && wait $pids ;;
FS)
  T=""; FT=""
  for i in $(seq 1 ${K:-2}); do
    f=${i}of${K:-2}; m=""
    for s in ${TSEEDS:-42 1 2}; do T="$T /tmp/fk-$f-$s/model-last"; m="$m,/tmp/fk-$f-$s/model-last"; done
    FT="$FT --fold-teachers $f=${m#,}"
  done
  ls $T > /dev/null || exit 1
  TAG=FS-$(date +%H%M)
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus NCBI-disease \
      --unlabelled-corpora BC5CDR BC2GM linnaeus --teachers $T --teacher-head ncbi --kfold ${K:-2} $FT \
      --no-teacher-eval --set training.bucket_size=32 \
      --set distil.augment=1 --set training.epochs=20 --resume --set training.seed=$s --gold-weights 0.5 \
      --deadline-s ${FS_DEADLINE:-575} --margin-s 120 --out /tmp/distil-FS-s$s \
      --json-out $R/distil-ncbi-student-$TAG-$s.json > $R/distil-ncbi-student-$TAG-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
GK)
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  for f in 1of3 2of3 3of3; do
    finished $R/multi4-fold-$f-42.json && continue  # finished in an earlier call
    timeout $((580 - SECONDS)) python3 bench/gpu/multi_corpus.py --one multi --seed 42 --final-epochs 15 \
      --fold ncbi:$f --resume --corpora $D/corpora-w.json $V --set training.max_minutes=60 --out /tmp/fk-$f-42 \
      --json-out $R/multi4-fold-$f-42.json >> $R/multi4-fold-$f-42.log 2>&1 &
    pids="${pids:-} $!"
  done
  mcf_fold_teachers
  [ -n "${pids:-}" ] && wait $pids ;;
GM)
  mcf_fold_teachers
  [ -n "${pids:-}" ] && wait $pids ;;
BG)
  for J in 3 1; do
    t0=$EPOCHREALTIME
    JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache-bg$J python3 -m nerservice.cli.main train \
      --train $D/NCBI-disease/train.tsv --dev $D/NCBI-disease/devel.tsv --test $D/NCBI-disease/test.tsv $V \
      --seeds 3 --jobs $J --set training.epochs=${EPOCHS:-10} --quiet --json --out /tmp/bg-j$J > $R/jobs-$J.json 2> $R/jobs-$J.log
    echo "{\"jobs\": $J, \"rc\": $?, \"wall_s\": $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")}" > $R/jobs-$J-wall.json
    cat $R/jobs-$J-wall.json
  done ;;
BF)
  S=${SEED:-42}; U=""
  for c in NCBI-disease BC2GM linnaeus; do U="$U $D/$c/train.tsv $D/$c/devel.tsv"; done
  setsid python3 -m nerservice.cli.main train --train $D/BC5CDR/train.tsv --dev $D/BC5CDR/devel.tsv \
    --test $D/BC5CDR/test.tsv $V --final --seeds 3 --distil --jobs 9 --unlabelled $U --set training.seed=$S \
    --set training.bucket_size=32 --quiet --json --out /tmp/fd-$S > $R/final-distil-$S.json 2> $R/final-distil-$S.log &
  wait_capped $! ;;
FE)  # session 38 (prepared): BF on CORPUS (default NCBI-disease) with FE_SETTINGS (e.g. "--encoder $DD/encoder"),
  # the unlabelled text = the train + devel of every other corpus in $D; repeat on the warm machine until
  # $R/final-distil-$C-$S.json is not empty (each call resumes every run from its checkpoint)
  C=${CORPUS:-NCBI-disease}; S=${SEED:-42}; U=""; export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  for c in $(ls $D); do [ -d $D/$c ] && [ $c != $C ] && U="$U $D/$c/train.tsv $D/$c/devel.tsv"; done
  setsid python3 -m nerservice.cli.main train --train $D/$C/train.tsv --dev $D/$C/devel.tsv --test $D/$C/test.tsv \
    $V --final --seeds 3 --distil --jobs ${FE_JOBS:-9} ${U:+--unlabelled $U} --set training.seed=$S \
    --set training.bucket_size=32 ${FE_SETTINGS:-} --quiet --json --out /tmp/fe-$C-$S \
    > $R/final-distil-$C-$S.json 2>> $R/final-distil-$C-$S.log &
  wait_capped $! ;;
ES)  # session 40: the final-distil recipe on CORPUS (default NCBI-disease) with GloVe teachers, twice from the same
  # teachers: first a student with the encoder (--student-set model.encoder=$DD/encoder; kept as
  # /tmp/es-C-S/student-enc), then, where device time is left, its GloVe student. Repeat on the warm machine until
  # $R/es-enc-$C-$S.json (then es-glove) is not empty: each call resumes every run from its checkpoint; finished
  # teachers are read back, not trained again. The unlabelled text: every other corpus's train + devel in $D
  # (ES_UNLABELLED=0: none, the labelled text and its variants only).
  C=${CORPUS:-NCBI-disease}; S=${SEED:-42}; U=""; O=/tmp/es-$C-$S; export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  [ "${ES_UNLABELLED:-1}" = 0 ] || for c in $(ls $D); do [ -d $D/$c ] && [ $c != $C ] && U="$U $D/$c/train.tsv $D/$c/devel.tsv"; done
  es() {  # es TAG [--student-set ...]
    local tag=$1; shift
    setsid python3 -m nerservice.cli.main train --train $D/$C/train.tsv --dev $D/$C/devel.tsv --test $D/$C/test.tsv \
      $V --final --seeds 3 --distil --jobs ${ES_JOBS:-9} ${U:+--unlabelled $U} --set training.seed=$S \
      --set training.bucket_size=32 "$@" --quiet --json --out $O > $R/es-$tag-$C-$S.json 2>> $R/es-$tag-$C-$S.log &
    wait_capped $!
  }
  [ -s $R/es-enc-$C-$S.json ] || es enc --student-set model.encoder=$PWD/$DD/encoder
  if [ -s $R/es-enc-$C-$S.json ] && [ ! -s $R/es-glove-$C-$S.json ]; then
    [ -d $O/student-enc ] || mv $O/student $O/student-enc
    es glove
  fi
  for f in $(find $O -name metrics.json -not -path '*checkpoint*'); do g=${f#/tmp/}; cp $f $R/${g//\//-}; done ;;
PF)
  C=${CORPUS:-NCBI-disease}
  setsid python3 -m nerservice.cli.main train --train $D/$C/train.tsv --dev $D/$C/devel.tsv --test $D/$C/test.tsv \
    $V --final --seeds 3 --jobs 3 --set training.bucket_size=32 --quiet --json --out /tmp/pf-$C \
    > $R/final-seeds-$C.json 2>> $R/final-seeds-$C.log &
  wait_capped $!
  for f in $(find /tmp/pf-$C -name metrics.json -not -path '*checkpoint*'); do  # each model's own dev / test figures
    g=${f#/tmp/}; cp $f $R/${g//\//-}; done ;;
BC|BD|BE)
  T=""; F=""; G=""
  for s in 42 1 2; do T="$T /tmp/cf20/teacher-$s/model-last"; F="$F,/tmp/cf20/teacher-train-$s/model-last"
    G="$G,/tmp/cf20/teacher-devel-$s/model-last"; done
  ls $T ${F//,/ } ${G//,/ } > /dev/null || exit 1
  TAG=$1
  case $1 in
    BC) X="--set distil.augment=1 --set training.epochs=16" ;;
    BD) X="--set training.epochs=16" ;;
    BE) X="--set distil.augment=${AUGMENT:-1} --set training.epochs=${EPOCHS:-20} --resume"; TAG=BE-$(date +%H%M) ;;
  esac
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --unlabelled-corpora NCBI-disease BC2GM linnaeus --teachers $T --fold-teachers train=${F#,} \
      --fold-teachers devel=${G#,} --no-teacher-eval --set training.bucket_size=32 $X \
      --set training.seed=$s --gold-weights 0.5 --deadline-s 575 --margin-s 120 --out /tmp/distil-$1-s$s \
      --json-out $R/distil-bc5cdr-student-$TAG-$s.json > $R/distil-bc5cdr-student-$TAG-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
EM)  # session 34: HW's four-corpus model (phase 1) with model.encoder (DEVDATA=.devdata/enc4), beside it without
  weighted ncbi=2 bc2gm=2 > $D/corpora-w.json
  multi ${EM_TIMEOUT:-560} ${EM_CAP:-7.5} w2 $D/corpora-w.json "" & p1=$!
  multi ${EM_TIMEOUT:-560} ${EM_CAP:-7.5} w2enc $D/corpora-w.json "--set model.encoder=$DD/encoder" & p2=$!
  wait $p1 $p2 ;;
EV)  # session 35: encoder dropout on NCBI-disease, beside the defaults
  C=${EN_CORPUS:-NCBI-disease}
  run_seeds ${EN_TIMEOUT:-565} ${EN_CAP:-7.5} ev-base base "" $C & p1=$!
  run_seeds ${EN_TIMEOUT:-565} ${EN_CAP:-7.5} ev-d50 enc-d50 "$ENC_D50" $C & p2=$!
  run_seeds ${EN_TIMEOUT:-565} ${EN_CAP:-7.5} ev-d75 enc-d75 "--set model.encoder=$DD/encoder --set model.encoder_dropout=0.75" $C & p3=$!
  wait $p1 $p2 $p3 ;;
EW)  # session 35: EV's encoder_dropout 0.5 runs alone. Session 36: without XLA's GEMM autotuning, which compiles
  # hundreds of Triton kernel variants per new shape (the suspect for EV's 420-s first epochs)
  export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  run_seeds ${EN_TIMEOUT:-560} ${EN_CAP:-7.5} ev-d50 enc-d50 "$ENC_D50" ${EN_CORPUS:-NCBI-disease} ;;
EB)  # session 36: EV without its 0.75 runs, on EN_CORPUS (BC5CDR), without GEMM autotuning as in EW
  C=${EN_CORPUS:-BC5CDR}; export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  run_seeds ${EN_TIMEOUT:-565} ${EN_CAP:-7.5} eb-base base "" $C & p1=$!
  run_seeds ${EN_TIMEOUT:-565} ${EN_CAP:-7.5} eb-d50 enc-d50 "$ENC_D50" $C & p2=$!
  wait $p1 $p2 ;;
EF)  # session 35: phase 2 of the final recipe, defaults and EF_SETTINGS, EF_EPOCHS (B_EPOCHS for the defaults)
  C=${EN_CORPUS:-NCBI-disease}; export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  run_seeds ${EN_TIMEOUT:-565} 9 ef-base final-base "--train-on-dev --set training.epochs=${B_EPOCHS:?}" $C & p1=$!
  run_seeds ${EN_TIMEOUT:-565} 9 ef-enc final-enc "--train-on-dev --set training.epochs=${EF_EPOCHS:?} ${EF_SETTINGS:?}" $C & p2=$!
  wait $p1 $p2 ;;
EE)  # session 39: EF on NCBI-disease in one call (31 epochs without, 21 with the encoder, the mean best epochs of
  # sessions 35-36) and then each variant's three models as one ensemble scored on test: the teacher the
  # final-distil recipe would distil (FE), measured where FE itself did not fit the session's device time
  C=NCBI-disease; export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
  run_seeds ${EN_TIMEOUT:-430} 6.5 ef-base final-base "--train-on-dev --set training.epochs=31" $C & p1=$!
  run_seeds ${EN_TIMEOUT:-430} 6.5 ef-enc final-enc "--train-on-dev --set training.epochs=21 $ENC_D50" $C & p2=$!
  wait $p1 $p2
  for v in base enc; do
    timeout $((590 - SECONDS)) python3 -m nerservice.cli.main ensemble /tmp/ef-$v-$C-{42,1,2}/model-last \
      --out /tmp/ee-$v --test $D/$C/test.tsv --json > $R/ensemble-$v.json 2> $R/ensemble-$v.log
  done ;;
EN)  # session 34: a frozen pretrained encoder (model.encoder, MiniLM-L6) beside the same defaults without it
  C=${EN_CORPUS:-NCBI-disease}
  run_seeds ${EN_TIMEOUT:-560} ${EN_CAP:-8} en-base base "" $C & p1=$!
  run_seeds ${EN_TIMEOUT:-560} ${EN_CAP:-8} en-enc enc "--set model.encoder=$DD/encoder" $C & p2=$!
  wait $p1 $p2 ;;
AZ|BA)
  kf_teachers
  case $1 in AZ) GW=0.5 X=kf ;; BA) GW=0 X=kf0 ;; esac
  for s in 42 1 2; do
    timeout 585 python3 bench/gpu/distil_gpu.py --data $D --embeddings $D/glove50.txt --corpus BC5CDR \
      --unlabelled-corpora NCBI-disease BC2GM linnaeus --teachers $T --kfold 4 $FT --no-teacher-eval \
      --set training.bucket_size=32 --set training.epochs=20 --set training.seed=$s \
      --gold-weights $GW --deadline-s 570 --out /tmp/distil-$X-s$s \
      --json-out $R/distil-bc5cdr-student-$X-$s.json > $R/distil-bc5cdr-student-$X-$s.log 2>&1 &
    pids="${pids:-} $!"
  done
  wait $pids ;;
esac
kill $mon
pack
