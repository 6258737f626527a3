"""Everything about model folders on disk: their layout, their manifests, the formats that can be loaded,
and which folder a model reference names.

    layout.py           the fixed names: run folders (model-best, model-last, checkpoint) and model files
    files.py            sha256, JSON, the staged (all-or-nothing) folder write, manifest write and check
    model_folder.py     one trained tagger's folder: save_model, load_model_folder, LoadedModel
    ensemble_folder.py  several taggers in one folder: save_ensemble, load_ensemble, LoadedEnsemble
    formats.py          the {format: loader} table; load_model / verify_manifest dispatch through it
    resolve.py          a reference (folder, run folder, store ``name@alias``) -> pinned path, name, version

Kept import-light on purpose (no submodule imported here): the store imports ``files``/``layout`` and
``resolve`` reaches the store lazily.
"""
