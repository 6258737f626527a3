"""Random-weight models saved to disk (fast: no training), exported once per session."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import save_random_model

VARIANTS = {
    "tiny": {},
    # first BiLSTM not residual (dense width != 2 x units), no char CNN, even CNN width elsewhere
    "no-cnn": {"model.dense_units": 40, "model.char_cnn_filters": 0},
    "cnn-only": {"model.char_lstm_units": 0, "model.char_cnn_width": 4, "model.lstm_layers": 1},
}


@pytest.fixture(scope="session")
def random_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("random-models")
    return {name: save_random_model(root / name, ov, seed=i) for i, (name, ov) in enumerate(VARIANTS.items())}


@pytest.fixture(scope="session")
def exports(random_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from nerservice.runtime.export import export_onnx

    root = tmp_path_factory.mktemp("exports")
    return {name: export_onnx(d, root / name) for name, d in random_models.items()}
