"""The generator: exact networks become tasks, wrong or tied ones are skipped, bad inputs error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lean_mod_add_proof.dataset.generator import NpzError, generate, main
from lean_mod_add_proof.dataset.network import verify
from lean_mod_add_proof.dataset.tasks import load_tasks


def _save(path: Path, e1, e2, w2, p: int, seed: int = 0, **override) -> Path:
    h = np.asarray(e1).shape[1]
    arrays = dict(
        E1=np.asarray(e1, dtype=np.int64),
        E2=np.asarray(e2, dtype=np.int64),
        W2=np.asarray(w2, dtype=np.int64),
        p=np.int64(p),
        H=np.int64(h),
        seed=np.int64(seed),
        train_fraction=np.float64(1.0),
        train_mask=np.ones((p, p), dtype=bool),
    )
    arrays.update(override)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)
    return path


def _product_pairs(p: int, amp: int = 127) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A hand-built exact network (the H=8 product-pair construction) for generator tests only."""
    t = 2 * np.pi * np.arange(p) / p
    c, s = np.rint(amp * np.cos(t)).astype(np.int64), np.rint(amp * np.sin(t)).astype(np.int64)
    e1 = np.stack([c, c, s, s, c, c, s, s], axis=1)
    e2 = np.stack([c, -c, s, -s, s, -s, c, -c], axis=1)
    w2 = np.stack([c, -c, -c, c, s, -s, s, -s], axis=1)
    return e1, e2, w2


@pytest.fixture
def good(tmp_path: Path) -> Path:
    e1, e2, w2 = _product_pairs(5)
    assert verify(e1, e2, w2).correct
    return _save(tmp_path / "good.npz", e1, e2, w2, p=5, seed=2)


def test_writes_exact_network(tmp_path: Path, good: Path) -> None:
    out = tmp_path / "out"
    report = generate(out, [good])
    assert [r.id for r in report.written] == ["p05_h08_s2"] and not report.skipped
    (record,) = load_tasks(out)
    assert record.split == "eval" and record.n_train_pairs == 25 and record.min_margin > 0
    text_before = (out / "tasks.jsonl").read_bytes()
    generate(out, [good])
    assert (out / "tasks.jsonl").read_bytes() == text_before  # byte-for-byte reproducible
    row = json.loads(text_before)
    assert list(row) == sorted(row)


def test_skips_wrong_network(tmp_path: Path, good: Path) -> None:
    e1, e2, w2 = _product_pairs(5)
    wrong = _save(tmp_path / "wrong.npz", e1, e2, np.roll(w2, 1, axis=0), p=5, seed=1)
    report = generate(tmp_path / "out", [good, wrong])
    assert [r.id for r in report.written] == ["p05_h08_s2"]
    assert len(report.skipped) == 1 and "wrong on" in report.skipped[0][1]


def test_skips_tie(tmp_path: Path, good: Path) -> None:
    # Right on every pair by Lean's first-max rule, yet tied: p = 2, H = 1, hidden value h is
    # (a - b)^2, class 0 scores 0 and class 1 scores h. Where the answer is 0 (h = 0) both classes
    # score 0 and class 0 only wins the tie-break.
    e1, e2, w2 = np.array([[0], [1]]), np.array([[0], [-1]]), np.array([[0], [1]])
    v = verify(e1, e2, w2)
    assert v.n_wrong == 0 and v.n_ties == 2 and not v.correct
    tied = _save(tmp_path / "tie.npz", e1, e2, w2, p=2)
    report = generate(tmp_path / "out", [tied, good])
    assert [r.id for r in report.written] == ["p05_h08_s2"]
    assert len(report.skipped) == 1 and "tie" in report.skipped[0][1]
    assert not (tmp_path / "out" / "p02_h01_s0").exists()


def test_removes_stale_task_folders(tmp_path: Path, good: Path) -> None:
    out = tmp_path / "out"
    (out / "p99_h08_s0").mkdir(parents=True)
    (out / "p99_h08_s0" / "Weights.lean").write_text("stale")
    (out / "notes").mkdir()
    report = generate(out, [good])
    assert report.removed == ["p99_h08_s0"]
    assert not (out / "p99_h08_s0").exists() and (out / "notes").exists()


def test_missing_npz_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.npz"
    assert main([str(tmp_path / "out"), str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "no such file" in err and "Traceback" not in err


def test_not_an_npz_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.npz"
    junk.write_text("hello")
    assert main([str(tmp_path / "out"), str(junk)]) == 2
    err = capsys.readouterr().err
    assert str(junk) in err and "not an .npz" in err


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"W2": None}, "missing array"),
        ({"E1": np.zeros((5, 7), dtype=np.int64)}, "shape"),
        ({"E1": np.full((5, 8), 0.5)}, "integers"),
        ({"E1": np.full((5, 8), 200, dtype=np.int64)}, "outside"),
        ({"train_mask": np.ones((5, 5), dtype=np.int64)}, "boolean"),
        ({"train_fraction": np.float64(0.9)}, "implies 22"),
        ({"H": np.float64(8.0)}, "integer scalar"),
    ],
)
def test_malformed_npz(tmp_path: Path, override: dict, match: str) -> None:
    e1, e2, w2 = _product_pairs(5)
    path = _save(tmp_path / "bad.npz", e1, e2, w2, p=5, **override)
    with pytest.raises(NpzError, match=match) as info:
        generate(tmp_path / "out", [path])
    assert str(path) in str(info.value)


def test_cli_module_runs(tmp_path: Path, good: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lean_mod_add_proof.gen_dataset", str(out), str(good)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "p05_h08_s2" / "Weights.lean").is_file()


def test_rebuild_check_lists_differences(tmp_path: Path, good: Path) -> None:
    from lean_mod_add_proof.dataset.rebuild import diff_sets, generated_files

    a, b = tmp_path / "a", tmp_path / "b"
    generate(a, [good])
    generate(b, [good])
    assert diff_sets(generated_files(a), generated_files(b)) == []
    weights = b / "p05_h08_s2" / "Weights.lean"
    weights.write_text(weights.read_text() + "-- edited\n")
    (b / "p07_h08_s0").mkdir()
    (b / "p07_h08_s0" / "Weights.lean").write_text("extra")
    assert diff_sets(generated_files(a), generated_files(b)) == [
        "p05_h08_s2/Weights.lean: contents differ",
        "p07_h08_s0/Weights.lean: not produced by the rebuild",
    ]
