"""lra_kit.reports with the papers' baselines (Reformer as lsh-X, Linformer): the README rows and docs/budget.md's
cost columns appear once a record of them exists, from made-up records in a temporary results/, and one row says
which are not recorded yet."""
from __future__ import annotations

import json
from pathlib import Path

from test_reports import ROW_CHARACTERS

from lra_kit import reports

ROOT = Path(__file__).resolve().parents[1]


def write(results: Path, folder: str, name: str, seed: int = 0, *, wall_s: float = 600.0, steps: int = 2000,
          drop: int = 5, **test) -> None:
    """A record ``results/FOLDER/NAME[-seedN].json`` with the test metrics ``test`` and a training curve at 2.0
    for ``drop`` logs, then at the test loss."""
    loss = test.get("loss", 1.0)
    curve = [{"step": 100 * (i + 1), "loss": 2.0 if i < drop else loss} for i in range(20)]
    record = {"seed": seed, "steps": steps, "wall_s": wall_s, "metrics": {"test": test},
              "curves": {"train": curve}, "config": {}}
    path = results / folder / (name + (f"-seed{seed}" if seed else "") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def empty(tmp_path: Path) -> Path:
    for folder in ("copy", "mnist", "lra"):
        (tmp_path / folder).mkdir()
    return tmp_path


WAITING = ("not recorded yet: copy task lsh-1, lsh-4, lsh-8 (`cpu-20k`); image generation lsh-1, lsh-4 (`cpu-12k`); "
           "Long Range Arena lsh-2, linformer (each task's budget)")


def test_no_baseline_recorded_is_one_row_saying_so(tmp_path):
    rows = reports.baseline_rows(empty(tmp_path))
    assert len(rows) == 1 and rows[0][1:] == [WAITING, "—"], rows


def test_the_copy_baselines_row_and_the_main_row(tmp_path):
    results = empty(tmp_path)
    for seed, loss in enumerate((0.020, 0.022)):
        write(results, "copy", "copy-linear-cpu-20k", seed, loss=loss, accuracy=0.99)
    for seed, loss in enumerate((0.05, 0.06)):
        write(results, "copy", "copy-lsh-4-cpu-20k", seed, loss=loss, accuracy=0.9, wall_s=900.0)
    write(results, "copy", "copy-lsh-1-cpu-20k", loss=0.08, accuracy=0.8)
    rows = reports.baseline_rows(results)
    assert rows[0][0] == ("[copy task](notebooks/copy_task.md): Katharopoulos Fig. 2, Nguyen Fig. 1 (the Reformer "
                          "baseline)")
    assert rows[0][1] == "test loss, `cpu-20k`: lsh-1 0.0800, lsh-4 0.0550 (2)"
    # linear's two seeds below lsh-4's two: decided; lsh-1's one seed: not; no momentum run: claim 5 waits, once
    # for each momentum variant (its rows against lsh-1 and lsh-4 alike, so merged)
    assert rows[0][2] == "holds: linear reaches a lower loss than lsh-4; not decided: 1; waiting for runs: 2", rows
    assert rows[-1][1] == ("not recorded yet: image generation lsh-1, lsh-4 (`cpu-12k`); Long Range Arena lsh-2, "
                           "linformer (each task's budget)")
    main = reports.copy_row(results)
    assert main[1] == "test loss, `cpu-20k`: linear 0.0210 (2)"  # the baselines' numbers are in their own row
    assert "lsh" not in main[2]
    costs = reports.run_costs(results)
    assert costs.splitlines()[0].endswith("| lsh-1 | lsh-4 | core-hours, all runs |")
    copy = next(line for line in costs.splitlines() if line.startswith("| copy"))
    assert copy.endswith("| — | — | 0.30 s (1) | 0.45 s (2) | 1.0 |")  # 600 × 3 + 900 × 2 s; no performer, luna


def test_a_baseline_claim_decided_against_linear_is_named_so(tmp_path):
    results = empty(tmp_path)
    for seed, loss in enumerate((0.050, 0.060)):
        write(results, "copy", "copy-linear-cpu-20k", seed, loss=loss, accuracy=0.9)
    for name in ("copy-lsh-1-cpu-20k", "copy-lsh-8-cpu-20k"):
        for seed, loss in enumerate((0.010, 0.012)):
            write(results, "copy", name, seed, loss=loss, accuracy=0.99)
    verdicts = reports.baseline_rows(results)[0][2]
    assert verdicts.startswith("does not hold: linear reaches a lower loss than lsh-1/lsh-8;"), verdicts


def test_the_mnist_and_lra_baseline_rows(tmp_path):
    results = empty(tmp_path)
    image = {"bits_per_dim_image_std": 0.2, "images": 10_000}
    write(results, "mnist", "mnist-linear-cpu-12k", bits_per_dim=1.00, **image)
    write(results, "mnist", "mnist-lsh-1-cpu-12k", bits_per_dim=1.10, **image)
    for task, count in (("listops", 2000), ("text", 25_000)):
        write(results, "lra", f"{task}-linear-lra-cpu-2h", accuracy=0.174 if task == "listops" else 0.62,
              count=count)
    write(results, "lra", "listops-lsh-2-lra-cpu-2h", accuracy=0.352, count=2000)
    write(results, "lra", "listops-linformer-lra-cpu-2h", accuracy=0.361, count=2000)
    rows = reports.baseline_rows(results)
    assert [row[0].split(": ", 1)[1] for row in rows] == [
        "Katharopoulos Table 1, Fig. 5a (MNIST, the Reformer baseline)",
        "Nguyen Table 4, Luna Table 1 (ListOps: Reformer, Linformer)",
        "the papers' baselines (Reformer as lsh-X, Linformer)"]
    assert rows[0][1:] == ["test bits/dim, `cpu-12k`: lsh-1 1.100",
                           "holds (one seed): linear reaches lower bits/dim than lsh-1"]
    assert rows[1][1] == "test accuracy %, `lra-cpu-2h`: lsh-2 35.2, linformer 36.1"
    # each order named once, the two papers' tables and the two baselines merged; the momentum ones wait
    assert rows[1][2] == "holds (one seed): lsh-2/linformer above linear; waiting for runs: 4", rows[1][2]
    assert rows[2][1] == "not recorded yet: copy task lsh-1, lsh-4, lsh-8 (`cpu-20k`)"
    listops = reports.lra_row(results, "listops")
    assert "lsh-2" not in listops[1] and "linformer" not in listops[1] and "lsh-2" not in listops[2]
    assert "Text" not in " ".join(row[0] for row in rows)  # no baseline recorded on Text: no row


def test_rows_stay_short_with_every_baseline_recorded_and_decided(tmp_path):
    """The README's rows are a front door (tests/test_reports.py): with every baseline recorded on every task, each
    claim decided and named, no baseline row outgrows it."""
    results = empty(tmp_path)
    for seed in (0, 1, 2):
        for name, loss, drop in (("softmax", 0.0003, 1), ("linear", 0.02, 3), ("momentum", 0.015, 2),
                                 ("momentum+adaptive", 0.016, 2), ("momentum+momentum", 0.008, 2),
                                 ("lsh-1", 0.09, 9), ("lsh-4", 0.06, 8), ("lsh-8", 0.05, 7)):
            write(results, "copy", f"copy-{name}-cpu-20k", seed, loss=loss + seed * 1e-4, accuracy=0.9, drop=drop)
        image = {"bits_per_dim_image_std": 0.01, "images": 10_000}
        for name, value in (("softmax", 0.93), ("linear", 1.0), ("momentum", 1.01), ("momentum+adaptive", 1.02),
                            ("lsh-1", 1.2), ("lsh-4", 1.1)):
            write(results, "mnist", f"mnist-{name}-cpu-12k", seed, bits_per_dim=value + seed * 1e-4, **image)
        for task in reports.lra_tasks_of_record():
            preset = reports.lra_budget(task)
            for name, acc in (("softmax", 0.36), ("linear", 0.17), ("performer", 0.30), ("momentum", 0.20),
                              ("momentum+adaptive", 0.21), ("luna", 0.37), ("lsh-2", 0.45), ("linformer", 0.50)):
                write(results, "lra", f"{task}-{name}-{preset}", seed, accuracy=acc + seed * 1e-3, count=10_000)
    rows = reports.baseline_rows(results)
    assert len(rows) == 2 + len(reports.lra_tasks_of_record())  # copy, MNIST, each LRA task; none waits
    for row in rows:
        line = "| " + " | ".join(row) + " |"
        assert len(line) <= ROW_CHARACTERS, f"{len(line)} characters: {line}"
        assert "not recorded" not in line, line
