"""The PyTorch dependability bench's arithmetic: the Wilson interval, and its second
implementation of the model's loss recursion, which must give the plan's own figures."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import pytorch_dependability as bench  # noqa: E402

KUBECTL_DEPL = Path(os.environ.get("DEPL_BINARY_DIR", REPO / "build")) / "bin" / "kubectl-depl"
needs_cli = pytest.mark.skipif(not KUBECTL_DEPL.exists(), reason=f"{KUBECTL_DEPL} is not built")


def test_wilson_interval_matches_the_recorded_figures():
    # docs/benchmarks.md's reference-worker table: 40/40 -> [0.912, 1.000], 31/40 -> [0.625, 0.877].
    assert [round(x, 3) for x in bench.wilson(40, 40)] == [0.912, 1.0]
    assert [round(x, 3) for x in bench.wilson(31, 40)] == [0.625, 0.877]
    with pytest.raises(ValueError, match="successes"):
        bench.wilson(5, 4)


def plan_of(job_path: Path, pools: Path) -> dict:
    out = subprocess.run([str(KUBECTL_DEPL), "plan", "-f", str(job_path), "--pools", str(pools),
                          "-o", "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@needs_cli
def test_the_recursion_gives_the_evaluators_figures_across_a_switch():
    job = yaml.safe_load((REPO / "examples" / "pytorch" / "job.yaml").read_text())
    plan = plan_of(REPO / "examples" / "pytorch" / "job.yaml", REPO / "examples" / "pytorch" / "pools.yaml")
    assert [p["model"] for p in plan["phases"]] == ["half", "full"]  # the job's plan switches
    spec = job["spec"]
    bench.check_prediction(bench.predict(spec, plan), plan)
    wrong = copy.deepcopy(plan)
    wrong["phases"][-1]["lossMean"] += 1e-6
    with pytest.raises(RuntimeError, match="the plan says"):
        bench.check_prediction(bench.predict(spec, wrong), wrong)
    # A switch's jump adds its mean to the loss and its variance to the spread.
    jumped = copy.deepcopy(spec)
    jumped["switching"][0]["lossJump"] = {"mean": 0.05, "stddev": 0.02}
    before, after = bench.predict(spec, plan), bench.predict(jumped, plan)
    first = plan["phases"][0]["epochs"]
    assert after[first - 1].mean == before[first - 1].mean
    assert after[first].mean > before[first].mean and after[first].sd > before[first].sd


def test_a_plan_that_promises_almost_nothing_gets_the_hopeless_seeds():
    def plan(p):
        return {"predicted": {"probability": p}}
    assert bench.seeds_for(plan(0.904), 40, 10) == 40
    assert bench.seeds_for(plan(0.54), 40, 10) == 40  # EXP's best effort still promises something
    assert bench.seeds_for(plan(bench.HOPELESS), 40, 10) == 40
    assert bench.seeds_for(plan(1e-5), 40, 10) == 10


@pytest.mark.parametrize("flag", ["--seeds", "--hopeless-seeds", "--parallel"])
def test_run_counts_below_one_are_refused_naming_the_flag(flag, capsys):
    with pytest.raises(SystemExit):
        bench.main([flag, "0"])
    assert f"{flag}: want at least 1, got 0" in capsys.readouterr().err


def test_the_deadline_choice_names_the_flag_on_bad_input():
    job = {"spec": {"target": {"loss": 0.4, "deadlineSeconds": 9.5}}}
    assert bench.deadline_of(job, "none") is None
    assert bench.deadline_of(job, "job") == 9.5
    assert bench.deadline_of(job, "12") == 12.0
    for bad in ("soon", "0", "-3", "inf", "nan"):
        with pytest.raises(ValueError, match="--deadline"):
            bench.deadline_of(job, bad)
    with pytest.raises(ValueError, match="deadlineSeconds"):
        bench.deadline_of({"spec": {"target": {"loss": 0.4}}}, "job")


@needs_cli
def test_the_copies_drop_the_jobs_deadline_unless_asked(tmp_path):
    # The job's deadline buys a second worker for `full`; without it (the bench's default) every
    # algorithm plans one worker per phase (FULL's plan is a best effort: its noisy shards keep it
    # from the target).
    job = yaml.safe_load((REPO / "examples" / "pytorch" / "job.yaml").read_text())
    pools = REPO / "examples" / "pytorch" / "pools.yaml"
    deadline = bench.deadline_of(job, "job")
    timed = bench.make_plan(job, pools, "depl", 0.42, 0.9, deadline, tmp_path)
    assert timed["feasible"]
    assert [p["workers"] for p in timed["phases"]] == [1, 2]
    assert bench.describe(timed) == "half x7 -> full x1 (2 workers)"
    for algorithm in ("depl", "full"):
        plan = bench.make_plan(job, pools, algorithm, 0.42, 0.9, None, tmp_path)
        assert plan["feasible"] == (algorithm == "depl"), algorithm
        assert all(p["workers"] == 1 for p in plan["phases"]), algorithm
        assert "(2 workers)" not in bench.describe(plan)


def test_the_recursion_counts_clean_samples_and_raises_the_floor_with_wrong_labels():
    # shard0-shard4 of the PyTorch job: 8,000 clean images and 2,000 with 30% wrong labels, so
    # E = 9,400 and 600 of 10,000 labels are wrong; after many epochs the mean is the floor.
    job = yaml.safe_load((REPO / "examples" / "pytorch" / "job.yaml").read_text())
    spec = job["spec"]
    plan = {"datasets": ["shard0", "shard1", "shard2", "shard3", "shard4"],
            "phases": [{"model": "half", "epochs": 40, "workers": 1}]}
    profile = next(m for m in spec["models"] if m["name"] == "half")["lossProfile"]
    assert profile["labelNoiseFloor"] > 0
    floor = (profile["floorLoss"] * (8000 / 9400) ** profile["dataExponent"]
             + profile["labelNoiseFloor"] * 0.06)
    assert bench.predict(spec, plan)[-1].mean == pytest.approx(floor, abs=1e-9)
    clean = copy.deepcopy(spec)
    for d in clean["datasets"]:
        d.pop("labelNoise", None)
    assert bench.predict(clean, plan)[-1].mean < floor - 0.05


def test_a_run_reaches_the_target_at_its_first_epoch_at_or_below_it():
    # The operator ends the job there (docs/depl-model.md section 2, "What is promised").
    assert bench.epochs_to_stop([0.6, 0.45, 0.41, 0.43], 0.42) == 3
    assert bench.epochs_to_stop([0.6, 0.42], 0.42) == 2
    assert bench.epochs_to_stop([0.6, 0.45], 0.42) is None


def test_the_row_counts_runs_that_passed_the_target_and_rose_again():
    plan = {"datasets": ["a"], "feasible": True, "phases": [{"epochs": 3}],
            "predicted": {"probability": 0.95, "lossMean": 0.38, "lossStddev": 0.02, "cost": 0.007}}
    runs = [[0.5, 0.41, 0.44],   # passed at epoch 2, ended above: reached for the operator
            [0.5, 0.45, 0.41],   # passed at its last epoch
            [0.5, 0.45, 0.43]]   # never
    line = bench.row(0.42, 0.95, "depl", "half x3", plan, runs, [1.0, 2.0, 3.0], ["a", "b"])
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[4] == "b"                    # dropped
    assert cells[8] == "2.0"                  # CPU s per run
    assert cells[9] == "2/3 = 0.667"          # reached, stopping at the target
    assert cells[11] == "2.7 of 3"            # epochs to stop: 2, 3 and the whole plan
    assert cells[12] == "1/3 = 0.333"         # reached at the plan's end
    assert cells[13] == "0.4267"              # mean last loss
    stopped = [r[:bench.epochs_to_stop(r, 0.42) or 3] for r in runs]  # as the bench runs them
    cells = [c.strip() for c in bench.row(0.42, 0.95, "depl", "half x3", plan, stopped,
                                          [1.0, 2.0, 3.0], ["a"]).strip("|").split("|")]
    assert cells[9] == "2/3 = 0.667" and cells[11] == "2.7 of 3"
    assert cells[12] == "-"                   # no loss at the plan's end for stopped runs


@needs_cli
def test_the_report_of_a_curves_file_plans_again_and_refuses_a_plan_that_differs(tmp_path):
    job = yaml.safe_load((REPO / "examples" / "pytorch" / "job.yaml").read_text())
    pools = REPO / "examples" / "pytorch" / "pools.yaml"
    plan = bench.make_plan(job, pools, "depl", 0.44, 0.9, None, tmp_path)
    epochs = sum(int(p["epochs"]) for p in plan["phases"])
    prediction = bench.predict(job["spec"], plan)
    entry = {"target": 0.44, "probability": 0.9, "algorithm": "depl", "plan": bench.describe(plan),
             "datasets": plan["datasets"],
             "predicted": [[p.epoch, p.mean, p.sd] for p in prediction],
             "runs": {"1001": [0.5] * (epochs - 1) + [0.43], "1002": [0.45] * epochs},
             "cpuSeconds": {"1001": 10.0, "1002": 12.0}}
    text = bench.report(job, pools, None, [entry])
    assert "| 1/2 = 0.500 |" in text and "| 11.0 |" in text
    entry["plan"] = "full x1"
    with pytest.raises(RuntimeError, match="planning gives"):
        bench.report(job, pools, None, [entry])


def test_the_held_out_table_compares_the_runs_last_validation_loss_with_the_held_out_one():
    curves = [{"target": 0.42, "probability": 0.95, "algorithm": "depl", "plan": "half x3",
               "runs": {"1": [0.5, 0.41], "2": [0.5, 0.45, 0.43], "3": [0.5, 0.4]},
               "heldOut": {"1": 0.43, "2": 0.44}},
              {"target": 0.42, "probability": 0.9, "algorithm": "exp", "plan": "half x2",
               "runs": {"1": [0.5, 0.41]}}]
    lines = bench.held_out_table(curves).splitlines()
    assert len(lines) == 3  # the plan run without --held-out has no row
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[4] == "2" and cells[5] == "0.4200" and cells[6] == "0.4350"
    assert cells[7] == "+0.0150 ± 0.0071" and cells[8] == "0/2"
    assert bench.held_out_table(curves[1:]) == ""


def test_held_out_below_zero_is_refused_naming_the_flag(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--held-out", "-1"])
    assert "--held-out: want 0 or more images, got -1" in capsys.readouterr().err


def test_the_rebound_table_looks_one_epoch_past_the_stop_of_runs_trained_to_the_end():
    predicted = [[1, 0.5, 0.02], [2, 0.45, 0.02], [3, 0.42, 0.02]]
    curves = [{"target": 0.42, "probability": 0.95, "algorithm": "depl", "plan": "half x3",
               "datasets": ["a"], "predicted": predicted,
               "runs": {"1": [0.5, 0.41, 0.43],    # stops at 2, back above at 3
                        "2": [0.41, 0.40, 0.39],   # stops at 1, stays below
                        "3": [0.5, 0.45, 0.41]}},  # stops at the last epoch: no next one
              {"target": 0.42, "probability": 0.9, "algorithm": "exp", "plan": "half x3",
               "datasets": ["b"], "predicted": predicted,
               "runs": {"1": [0.5, 0.41]}}]        # stopped early: not trained to the end
    lines = bench.rebound_table(curves).splitlines()
    assert len(lines) == 3
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[4] == "2/3" and cells[5] == "+0.0050 ± 0.0212" and cells[6] == "1/2"


def test_a_report_file_that_cannot_be_read_is_refused_naming_the_flag(tmp_path, capsys):
    for path, text in ((tmp_path / "missing.json", None), (tmp_path / "bad.json", "{not json")):
        if text is not None:
            path.write_text(text)
        with pytest.raises(SystemExit):
            bench.main(["--report", str(path)])
        assert f"--report {path}:" in capsys.readouterr().err
