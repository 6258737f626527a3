"""The history plot: a PNG of loss and dev F1, drawn once for saves that ask for the same history."""
from __future__ import annotations

from pathlib import Path

import pytest

from nerservice.training import history as history_mod

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_same_history_is_drawn_once_and_a_new_epoch_draws_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[int] = []
    real = history_mod.render_history

    def counting(h: list[dict]) -> bytes:
        drawn.append(len(h))
        return real(h)

    monkeypatch.setattr(history_mod, "render_history", counting)
    monkeypatch.setattr(history_mod, "_last", None)
    h = [{"epoch": 1, "loss": 9.5, "dev_f1": 0.2}, {"epoch": 2, "loss": 6.0, "dev_f1": 0.4}]
    history_mod.plot_writer(h)(tmp_path / "last.png")  # model-last, then model-best in the same epoch
    history_mod.plot_writer(h)(tmp_path / "best.png")
    assert drawn == [2]
    assert (tmp_path / "best.png").read_bytes() == (tmp_path / "last.png").read_bytes()
    assert (tmp_path / "best.png").read_bytes()[:8] == PNG

    h.append({"epoch": 3, "loss": 5.0, "dev_f1": 0.5})
    history_mod.plot_writer(h)(tmp_path / "last.png")
    assert drawn == [2, 3]
    assert (tmp_path / "last.png").read_bytes() != (tmp_path / "best.png").read_bytes()

    h[-1] = {**h[-1], "dev_f1": 0.6}  # same length, other figures: a new picture, not the kept one
    history_mod.plot_writer(h)(tmp_path / "last.png")
    assert drawn == [2, 3, 3]
