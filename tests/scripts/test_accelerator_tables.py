"""Tests of chapters/figures/fig_accelerators.py against the accelerators chapter it draws from.

The module holds the numbers of the chapter's comparison table and MAMF table with their sources, and
derives the per-accelerator dense figures from the vendors' board, rack and "with sparsity" figures. These
tests check the derivations against values worked out by hand, and check that every number the chapter
prints is the number the module draws, so that the tables and the figures cannot drift apart.
"""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "chapters" / "figures"
CHAPTER = REPO / "chapters" / "compute" / "accelerator" / "README.md"

pytest.importorskip("matplotlib")

# Row labels of the chapter's table -> names in fig_accelerators.ACCELERATORS.
TABLE_NAMES = {
    "NVIDIA A100 SXM (80 GB)": "A100 SXM", "NVIDIA H100 SXM": "H100 SXM", "NVIDIA H200 SXM": "H200 SXM",
    "NVIDIA B200 (HGX B200)": "B200 (HGX)", "NVIDIA B300 (HGX B300)": "B300 (HGX)",
    "NVIDIA GB200 (per GPU, GB200 NVL72)": "GB200 (per GPU)", "NVIDIA GB300 (per GPU, GB300 NVL72)": "GB300 (per GPU)",
    "AMD Instinct MI300X": "MI300X", "AMD Instinct MI325X": "MI325X", "AMD Instinct MI355X": "MI355X",
    "Intel Gaudi 3 (OAM)": "Gaudi 3", "Google TPU v5e (per chip)": "TPU v5e", "Google TPU v5p (per chip)": "TPU v5p",
    "Google TPU v6e, Trillium (per chip)": "TPU v6e", "Google TPU7x, Ironwood (per chip)": "TPU7x",
    "AWS Trainium2 (per chip)": "Trainium2", "AWS Trainium3 (per chip)": "Trainium3",
}
MAMF_NAMES = {"NVIDIA A100 SXM": "A100 SXM", "NVIDIA H100 SXM": "H100 SXM", "NVIDIA H200 SXM": "H200 SXM",
              "NVIDIA B200 (HGX)": "B200 (HGX)", "NVIDIA B300 (HGX)": "B300 (HGX)", "NVIDIA GB200": "GB200 (per GPU)",
              "AMD MI300X": "MI300X", "AMD MI325X": "MI325X", "AMD MI355X": "MI355X", "Intel Gaudi 3": "Gaudi 3"}
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def fig():
    sys.path.insert(0, str(FIGURES))
    try:
        importlib.import_module("make_figures")  # loads every fig_<topic>.py beside it
        return importlib.import_module("fig_accelerators")
    finally:
        sys.path.remove(str(FIGURES))


def table_rows(first_header: str) -> list[list[str]]:
    """The body rows of the chapter's table whose first header cell is `first_header`."""
    lines = CHAPTER.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def first_number(cell: str) -> float | None:
    if cell.startswith("no "):
        return None
    match = NUMBER.search(cell)
    assert match, cell
    return float(match[0].replace(",", ""))


def test_sparse_and_board_figures_are_divided_as_the_notes_say(fig):
    # note 1: 1,979 / 2 and 3,958 / 2; note 2: 36,000 / 8 / 2, 72,000 / 8 / 2, 144,000 / 8 / 2;
    # notes 4 and 5: 360,000 / 72 / 2, 720,000 / 72 / 2, 1,440,000 / 72 / 2 and 1,080,000 / 72 (already dense)
    expected = {"H100/H200 BF16": 989.5, "H100/H200 FP8": 1979, "B200 BF16": 2250, "B200 FP8": 4500,
                "B200 FP4": 9000, "B300 BF16": 2250, "B300 FP8": 4500, "GB200 BF16": 2500, "GB200 FP8": 5000,
                "GB200 FP4": 10_000, "GB300 BF16": 2500, "GB300 FP8": 5000, "GB300 FP4": 15_000}
    assert set(expected) == set(fig.DERIVED)
    for key, value in expected.items():
        assert fig.derived(key) == pytest.approx(value), key
    assert fig.per_gpu_dense(100, gpus=4, sparse=True) == 12.5


def test_every_accelerator_of_the_chapter_is_drawn(fig):
    rows = table_rows("Accelerator | Dense FP4 TFLOPS")
    assert [TABLE_NAMES[row[0]] for row in rows] == [acc[0] for acc in fig.ACCELERATORS]


@pytest.mark.parametrize("column, index", [(1, 1), (2, 2), (3, 3)])  # FP4, FP8, BF16 cells; module fields
def test_compute_columns_match_the_module(fig, column, index):
    for row in table_rows("Accelerator | Dense FP4 TFLOPS"):
        acc = fig.spec(TABLE_NAMES[row[0]])
        printed = first_number(row[column])
        if row[column].startswith("no FP8 rate listed"):
            printed = None
        assert printed == (None if acc[index] is None else pytest.approx(acc[index])), (row[0], row[column])


def test_memory_bandwidth_and_power_match_the_module(fig):
    for row in table_rows("Accelerator | Dense FP4 TFLOPS"):
        acc = fig.spec(TABLE_NAMES[row[0]])
        size, unit = re.match(r"(\d+) (GB|GiB)", row[4]).groups()
        assert (int(size), unit) == (acc[4], acc[5]), row[0]
        bandwidth = first_number(row[5]) / (1000 if row[5].endswith("GB/s") else 1)
        assert bandwidth == pytest.approx(acc[6]), row[0]
        power = None if row[6] == "not published" else first_number(row[6])
        assert power == acc[7], row[0]


def test_tpu_v5p_memory_is_in_gib(fig):
    # the earlier edition printed "95 GB"; Google's current pages give 95 GiB, which is 102.0 GB
    assert fig.spec("TPU v5p")[4:6] == (95, "GiB")
    assert fig.memory_gb(fig.spec("TPU v5p")) == pytest.approx(102.0, abs=0.05)


def test_mamf_table_matches_the_module_and_its_arithmetic(fig):
    rows = table_rows("Accelerator | dtype | MAMF (TFLOPS)")
    assert len(rows) == len(fig.MAMF)
    printed = {(MAMF_NAMES[row[0]], row[1].lower()): row for row in rows}
    for name, dtype, mamf, shape, torch_version in fig.MAMF:
        row = printed[(name, dtype)]
        assert first_number(row[2]) == mamf
        assert row[3] == shape.replace("x", "×")
        assert torch_version.startswith(row[4])
        assert first_number(row[5]) == pytest.approx(fig.peak(name, dtype))
        percent = float(re.search(r"= ([\d.]+)%", row[6])[1])
        assert percent == round(100 * fig.efficiency(name, dtype, mamf), 1), (name, dtype)


def test_hand_computed_efficiencies(fig):
    # 794.5 / 989.5 = 0.8029; 668.4 / 1,307.4 = 0.5112; 3,615.6 / 5,000 = 0.7231
    assert fig.efficiency("H100 SXM", "bf16", 794.5) == pytest.approx(0.8029, abs=1e-4)
    assert fig.efficiency("MI300X", "bf16", 668.4) == pytest.approx(0.5112, abs=1e-4)
    assert fig.efficiency("GB200 (per GPU)", "fp8", 3615.6) == pytest.approx(0.7231, abs=1e-4)
