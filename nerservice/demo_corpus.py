"""A small synthetic biomedical corpus for the quickstart and the tests.

DEMO DATA, NOT A BENCHMARK.  Sentences are generated from templates with disease and chemical names we
wrote ourselves, so a fresh machine with no network can train, register and serve a model in minutes.
Figures on it say nothing about real text; benchmarks use NCBI-disease and BC5CDR (see README).
"""
from __future__ import annotations

import random
from pathlib import Path

from nerservice.data import Sentence
from nerservice.data.writers import write_corpus
from nerservice.text.tokenizer import tokenize

DISEASES = [
    "breast cancer", "colorectal cancer", "hepatitis", "Alzheimer disease", "type 2 diabetes", "asthma",
    "hypertension", "cystic fibrosis", "Huntington disease", "renal failure", "myocardial infarction",
    "leukemia", "Parkinson disease", "nephrotoxicity", "cardiomyopathy", "seizures", "hepatotoxicity",
    "ataxia - telangiectasia", "Duchenne muscular dystrophy", "melanoma", "schizophrenia", "neutropenia",
]
CHEMICALS = [
    "cisplatin", "doxorubicin", "lithium", "tamoxifen", "metformin", "haloperidol", "aspirin", "caffeine",
    "cyclophosphamide", "5 - fluorouracil", "dexamethasone", "nicotine", "ethanol", "morphine",
    "gentamicin", "vitamin D", "warfarin", "paracetamol", "ketamine", "insulin",
]
TEMPLATES = [
    "Patients with {D} were treated with {C} .",
    "{C} - induced {D} was observed in 12 of 40 rats .",
    "The risk of {D} increased after long - term {C} therapy .",
    "We report a case of {D} associated with {C} .",
    "Mutations in the APC gene cause {D} in humans .",
    "{C} reduced the incidence of {D} ( p < 0.05 ) .",
    "No cases of {D} were reported in the control group .",
    "Treatment with {C} and {C2} was well tolerated .",
    "The association between {D} and {D2} remains unclear .",
    "Serum levels of {C} were measured in all subjects .",
    "These findings suggest that {C} may prevent {D} .",
    "A 45 - year - old woman with {D} developed {D2} after receiving {C} .",
]


def _tagged(template: str, fills: dict[str, tuple[str, str]]) -> Sentence:
    tokens: list[str] = []
    tags: list[str] = []
    for part in template.split():
        if part.startswith("{") and part.endswith("}"):
            name, label = fills[part[1:-1]]
            words = [t.text for t in tokenize(name)]
            tokens += words
            tags += [f"B-{label}"] + [f"I-{label}"] * (len(words) - 1)
        else:
            tokens.append(part)
            tags.append("O")
    return Sentence(tuple(tokens), tuple(tags))


def generate(n: int, *, seed: int) -> list[Sentence]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d, d2 = rng.sample(DISEASES, 2)
        c, c2 = rng.sample(CHEMICALS, 2)
        fills = {"D": (d, "Disease"), "D2": (d2, "Disease"), "C": (c, "Chemical"), "C2": (c2, "Chemical")}
        out.append(_tagged(rng.choice(TEMPLATES), fills))
    return out


def write_demo_corpus(folder: str | Path, *, sizes: tuple[int, int, int] = (600, 120, 120),
                      seed: int = 7) -> dict[str, Path]:
    """Write train/dev/test TSV files (token<TAB>tag) and return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (split, n) in enumerate(zip(("train", "dev", "test"), sizes)):
        paths[split] = folder / f"{split}.tsv"
        write_corpus(generate(n, seed=seed * 100 + i), paths[split], fmt="tsv")
    return paths
