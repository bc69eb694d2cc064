#!/usr/bin/python3
"""The dependability bench on the PyTorch CNN (docs/benchmarks.md, "Dependability of the PyTorch
job"): does a plan reach its target as often as it promises when the training is real?

    /usr/bin/python3 bench/pytorch_dependability.py --targets 0.42,0.60 --seeds 40 \
        --hopeless-seeds 4 --parallel 2 --curves curves.json                      # full size
    /usr/bin/python3 bench/pytorch_dependability.py --targets 0.42,0.60 --seeds 4    # smaller
    /usr/bin/python3 bench/pytorch_dependability.py --targets 0.42 --probabilities 0.9 \
        --algorithms depl --deadline job --seeds 4     # the job's deadline: two ranks for `full`

For every target loss, probability and algorithm (DepL, EXP, FULL) it plans the job
(`kubectl-depl plan -o json` on a copy of the job with that target), then executes the plan for
fresh seeds through the SDK worker (examples/pytorch/train.py, standalone: one process per phase,
`--nproc` the plan's workers, a switch is `--init-from` the previous phase's checkpoint, which
the worker converts). The copies have no deadline unless --deadline gives one (`job`: the job's
own, which makes DepL buy a second worker for the `full` phase: the configuration that runs two
ranks). Each run stops at the first epoch at or below the target, where the operator ends the
job (docs/depl-model.md section 2, "What is promised"; --run-out trains every plan to its end
instead, and also reports whether the last epoch met the target). It reports how many runs
reached the target (with a Wilson 95% interval) against the promised probability, the
predicted and reached mean loss, the model's cost and the measured CPU seconds per run, and
which plans switched and which datasets they dropped.
With --curves it also writes, per plan and epoch, the predicted mean and standard deviation
(docs/depl-model.md section 2, checked against the plan's own figures) and the real losses, and
prints the prediction error and the band coverage on these held-out seeds.

The job's profiles are `kubectl-depl profile`'s (examples/pytorch/job.yaml says with which
command); the profile's seeds start at 1, the bench's at --first-seed (default 1001).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import yaml

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "examples" / "pytorch" / "train.py"
PYTHON = sys.executable  # the interpreter the bench runs under: the one with torch


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n <= 0:
        raise ValueError(f"n: want at least one run, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes: want 0..{n}, got {successes}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EpochPrediction:
    epoch: int
    mean: float
    sd: float


def effective_samples(dataset: dict) -> float:
    """E's part of a dataset: its clean samples weighted by quality, q (1 - labelNoise) n."""
    return (float(dataset.get("quality", 1.0)) * (1.0 - float(dataset.get("labelNoise", 0.0)))
            * float(dataset["samples"]))


def predict(spec: dict, plan: dict) -> list[EpochPrediction]:
    """The loss reported after every epoch of `plan` as docs/depl-model.md section 2 models it
    (mean and standard deviation of a Gaussian), from the job's `spec`: E counts the clean
    samples, the floor rises by labelNoiseFloor times the share of wrong labels in the selection,
    and a report adds its own transient noise (validationNoiseStddev) to the trajectory's."""
    datasets = {d["name"]: d for d in spec["datasets"]}
    chosen = [datasets[name] for name in plan["datasets"]]
    effective = sum(effective_samples(d) for d in chosen)
    everything = sum(effective_samples(d) for d in spec["datasets"])
    wrong = sum(float(d.get("labelNoise", 0.0)) * float(d["samples"]) for d in chosen)
    wrong_share = wrong / sum(float(d["samples"]) for d in chosen) if wrong > 0 else 0.0
    models = {m["name"]: m for m in spec["models"]}
    switches = {(s["from"], s["to"]): s for s in spec.get("switching", [])}
    out: list[EpochPrediction] = []
    mean, variance, epoch, previous = None, 0.0, 0, None
    for phase in plan["phases"]:
        profile = models[phase["model"]]["lossProfile"]
        if mean is None:
            mean = float(profile["initialLoss"])
            variance = float(profile.get("initialLossStddev", 0.0)) ** 2
        else:
            jump = switches[(previous, phase["model"])]["lossJump"]
            mean += float(jump["mean"])
            variance += float(jump["stddev"]) ** 2
        reference = float(profile.get("referenceSamples", everything))
        rho = float(profile["decayPerEpoch"]) ** (effective / reference)
        floor = float(profile["floorLoss"]) * (reference / effective) ** float(
            profile.get("dataExponent", 0.0)) + float(profile.get("labelNoiseFloor", 0.0)) * wrong_share
        sigma = float(profile["noiseStddev"])
        # What a report shows: the trajectory's variance plus the report's own transient noise.
        nu = float(profile.get("validationNoiseStddev", 0.0))
        for _ in range(int(phase["epochs"])):
            mean = floor + (mean - floor) * rho
            variance = rho * rho * variance + sigma * sigma
            epoch += 1
            out.append(EpochPrediction(epoch, mean, math.sqrt(variance + nu * nu)))
        previous = phase["model"]
    return out


def check_prediction(prediction: list[EpochPrediction], plan: dict) -> None:
    """The recursion above must give the plan's own per-phase figures (the evaluator's)."""
    ends = []
    epoch = 0
    for phase in plan["phases"]:
        epoch += int(phase["epochs"])
        ends.append((epoch, phase))
    for epoch, phase in ends:
        p = prediction[epoch - 1]
        if not (math.isclose(p.mean, phase["lossMean"], rel_tol=1e-9, abs_tol=1e-12)
                and math.isclose(p.sd, phase["lossStddev"], rel_tol=1e-9, abs_tol=1e-12)):
            raise RuntimeError(f"the model's recursion gives {p.mean} ± {p.sd} after epoch {epoch}, "
                               f"the plan says {phase['lossMean']} ± {phase['lossStddev']}")


def kubectl_depl() -> str:
    binary = os.environ.get("DEPL_BINARY_DIR", str(REPO / "build"))
    return str(Path(binary) / "bin" / "kubectl-depl")


def deadline_of(job: dict, choice: str) -> float | None:
    """--deadline: `none` (plan without one), `job` (the job's own) or seconds."""
    if choice == "none":
        return None
    if choice == "job":
        seconds = job["spec"]["target"].get("deadlineSeconds")
        if seconds is None:
            raise ValueError("--deadline job: the job's spec.target has no deadlineSeconds")
        return float(seconds)
    try:
        seconds = float(choice)
    except ValueError:
        raise ValueError(f"--deadline {choice!r}: want none, job or seconds") from None
    if not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"--deadline {choice!r}: want a positive, finite number of seconds")
    return seconds


def make_plan(job: dict, pools: Path, algorithm: str, target: float, probability: float,
              deadline: float | None, workdir: Path) -> dict:
    """`kubectl-depl plan -o json` of `job` with this target and deadline (None: no deadline)."""
    variant = copy.deepcopy(job)
    variant["spec"]["target"]["loss"] = target
    variant["spec"]["target"]["probability"] = probability
    variant["spec"]["target"].pop("deadlineSeconds", None)
    if deadline is not None:
        variant["spec"]["target"]["deadlineSeconds"] = deadline
    path = workdir / f"job-{algorithm}-{target}-{probability}.yaml"
    path.write_text(yaml.safe_dump(variant, sort_keys=False))
    result = subprocess.run([kubectl_depl(), "plan", "-f", str(path), "--pools", str(pools),
                             "--algorithm", algorithm, "-o", "json"],
                            capture_output=True, text=True, check=False)
    if result.returncode not in (0, 3) or not result.stdout.strip():
        raise RuntimeError(f"kubectl-depl plan ({algorithm}, target {target}, P {probability}) "
                           f"exited {result.returncode}: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def describe(plan: dict) -> str:
    """`half x4 -> full x3 (2 workers)`: the workers are named where a phase has more than one."""
    return " -> ".join(f"{p['model']} x{p['epochs']}"
                       + (f" ({p['workers']} workers)" if int(p["workers"]) > 1 else "")
                       for p in plan["phases"])


@dataclass
class Run:
    seed: int
    losses: list[float] = field(default_factory=list)  # after epochs 1..T
    held_out: float | None = None  # the last checkpoint's loss on test images it never validated on
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


def model_env(job: dict, model: str) -> dict[str, str]:
    for m in job["spec"]["models"]:
        if m["name"] == model:
            return {e["name"]: str(e["value"]) for e in m.get("env", [])}
    raise KeyError(f"models: no variant '{model}'")


def worker(command: list[str], job: dict, model: str, what: str) -> tuple[str, float]:
    """Runs one worker process (tree) with the model's env: its stdout and the CPU seconds of
    its processes (`wait4`, its ranks included)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEPL_")}
    env.update(model_env(job, model))
    env["DEPL_LOG_LEVEL"] = "WARNING"
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             text=True)
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(child.stderr.read()))
    reader.start()
    out = child.stdout.read()
    reader.join()
    _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{what} exited {code}: {''.join(errors)[-2000:]}")
    return out, usage.ru_utime + usage.ru_stime


def held_out_loss(job: dict, plan: dict, model: str, checkpoint: Path, epoch: int,
                  images: int) -> float:
    """The loss of the checkpoint a run ended with on `images` test images after the ones the
    runs validate on (the model's DEPL_TEST_SAMPLES): images no stopping decision looked at."""
    validated = int(model_env(job, model).get("DEPL_TEST_SAMPLES", "10000"))
    out, _ = worker([PYTHON, str(TRAIN), "--model", model, "--init-from", str(checkpoint),
                     "--start-epoch", str(epoch), "--epochs", "0", "--eval-initial",
                     "--datasets", ",".join(plan["datasets"]), "--test-first", str(validated),
                     "--test-samples", str(images), "--threads", "1"], job, model,
                    f"the held-out evaluation of {checkpoint}")
    return float(json.loads(out.splitlines()[0])["loss"])


def execute(job: dict, plan: dict, seed: int, workdir: Path, ranks: int | None,
            target: float | None, held_out: int = 0) -> Run:
    """Runs `plan` with `seed` through the SDK worker, one process (tree) per phase; with a
    `target`, stops at the first epoch at or below it, as the operator does; with `held_out`
    images, evaluates the checkpoint the run ends with on them."""
    run = _train(job, plan, seed, workdir, ranks, target)
    if held_out:
        phases, epochs = plan["phases"], 0
        for i, phase in enumerate(phases):
            epochs += int(phase["epochs"])
            if epochs >= len(run.losses):
                run.held_out = held_out_loss(job, plan, phase["model"], workdir / f"s{seed}-p{i}",
                                             len(run.losses), held_out)
                break
    return run


def _train(job: dict, plan: dict, seed: int, workdir: Path, ranks: int | None,
           target: float | None) -> Run:
    run = Run(seed)
    previous: Path | None = None
    start = 0
    for i, phase in enumerate(plan["phases"]):
        checkpoints = workdir / f"s{seed}-p{i}"
        nproc = ranks if ranks else int(phase["workers"])
        command = [PYTHON, str(TRAIN), "--model", phase["model"], "--epochs", str(phase["epochs"]),
                   "--start-epoch", str(start), "--datasets", ",".join(plan["datasets"]),
                   "--seed", str(seed), "--checkpoint-dir", str(checkpoints), "--threads", "1"]
        if nproc > 1:
            command += ["--nproc", str(nproc)]
        if previous is not None:
            command += ["--init-from", str(previous)]
        if target is not None:
            command += ["--target-loss", repr(target)]
        began = time.perf_counter()
        out, cpu = worker(command, job, phase["model"], f"seed {seed} phase {i} ({phase['model']})")
        run.wall_seconds += time.perf_counter() - began
        run.cpu_seconds += cpu
        for line in out.splitlines():
            record = json.loads(line)
            if record["epoch"] > start:
                run.losses.append(float(record["loss"]))
        start += int(phase["epochs"])
        previous = checkpoints
        if target is not None and run.losses and run.losses[-1] <= target:
            if len(run.losses) > start or epochs_to_stop(run.losses, target) != len(run.losses):
                raise RuntimeError(f"seed {seed}: the worker went on past the target: "
                                   f"{run.losses}")
            return run
    if len(run.losses) != start:
        raise RuntimeError(f"seed {seed}: {len(run.losses)} epochs reported, the plan has {start}")
    return run


# A plan whose predicted probability is below this promises nothing; --hopeless-seeds runs show
# that it misses, at a fraction of --seeds runs' cost (such plans are the horizon's longest).
HOPELESS = 0.01


def seeds_for(plan: dict, seeds: int, hopeless_seeds: int) -> int:
    """How many runs `plan` gets: `seeds`, or `hopeless_seeds` where it promises almost nothing."""
    return hopeless_seeds if plan["predicted"]["probability"] < HOPELESS else seeds


HEADER = ("| target | P | algorithm | plan | dropped | predicted P | predicted loss | cost "
          "| CPU s/run | reached | 95% interval | epochs to stop | reached at the plan's end "
          "| mean last loss |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def epochs_to_stop(losses: list[float], target: float) -> int | None:
    """The first epoch whose loss is at most `target`, where the operator ends the job
    (docs/depl-model.md section 2, "What is promised"); None when no epoch of the plan is."""
    for epoch, loss in enumerate(losses, start=1):
        if loss <= target:
            return epoch
    return None


def row(target: float, probability: float, algorithm: str, text: str, plan: dict,
        runs: list[list[float]] | None, cpu_seconds: list[float], all_datasets: list[str]) -> str:
    """One line of the results table; `runs` are the runs' losses after every epoch of the plan.
    "reached" is the operator's verdict (some epoch at or below the target), "reached at the
    plan's end" the last epoch's."""
    if runs is None:
        return f"| {target} | {probability} | {algorithm} | {text} |" + " |" * 10
    dropped = ",".join(d for d in all_datasets if d not in plan["datasets"]) or "-"
    feasible = "" if plan.get("feasible") else " (infeasible: best effort)"
    finals = [r[-1] for r in runs]
    stops = [epochs_to_stop(r, target) for r in runs]
    reached = sum(1 for s in stops if s is not None)
    planned = sum(int(p["epochs"]) for p in plan["phases"])
    # Runs that stopped at the target have no loss at the plan's end.
    run_out = all(len(r) == planned for r in runs)
    at_end = sum(1 for f in finals if f <= target)
    lo, hi = wilson(reached, len(runs))
    # A run that never reaches the target trains the whole plan.
    to_stop = sum(s if s is not None else len(r) for s, r in zip(stops, runs)) / len(runs)
    end_cell = f"{at_end}/{len(runs)} = {at_end / len(runs):.3f}" if run_out else "-"
    predicted = plan["predicted"]
    return (f"| {target} | {probability} | {algorithm} | {text}{feasible} | {dropped} "
            f"| {predicted['probability']:.3f} "
            f"| {predicted['lossMean']:.4f} ± {predicted['lossStddev']:.4f} "
            f"| {predicted['cost']:.5f} "
            f"| {sum(cpu_seconds) / len(cpu_seconds):.1f} "
            f"| {reached}/{len(runs)} = {reached / len(runs):.3f} | [{lo:.3f}, {hi:.3f}] "
            f"| {to_stop:.1f} of {planned} | {end_cell} "
            f"| {sum(finals) / len(finals):.4f} |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(REPO / "examples" / "pytorch" / "job.yaml"))
    parser.add_argument("--pools", default=str(REPO / "examples" / "pytorch" / "pools.yaml"))
    parser.add_argument("--targets", default="", help="target losses, comma-separated "
                        "(default: the job's own target)")
    parser.add_argument("--probabilities", default="0.9,0.95")
    parser.add_argument("--algorithms", default="depl,exp,full")
    parser.add_argument("--seeds", type=int, default=40, help="runs per plan")
    parser.add_argument("--hopeless-seeds", type=int, default=10,
                        help="runs per plan that promises almost nothing (predicted probability "
                        f"below {HOPELESS}; default 10: 0 of 10 puts the Wilson interval's top at "
                        "0.28, far below any promise)")
    parser.add_argument("--first-seed", type=int, default=1001)
    parser.add_argument("--parallel", type=int, default=2, help="runs at once")
    parser.add_argument("--ranks", type=int, default=0,
                        help="ranks per phase (0: the plan's workers)")
    parser.add_argument("--deadline", default="none",
                        help="none (plan without a deadline), job (the job's deadlineSeconds) or "
                        "seconds (default none)")
    parser.add_argument("--curves", default="", help="write per-epoch predictions and losses "
                        "(JSON) to this file and print the prediction error and band coverage")
    parser.add_argument("--run-out", action="store_true",
                        help="train every plan to its end, past the target: the whole curves, "
                        "for the prediction error (default: stop at the first epoch at or below "
                        "the target, as the operator does)")
    parser.add_argument("--held-out", type=int, default=0, metavar="N",
                        help="also evaluate the checkpoint each run ends with on N test images "
                        "after the ones the runs validate on (default 0: no)")
    parser.add_argument("--report", default="", metavar="CURVES",
                        help="run nothing: print the tables of a --curves file (plans made again "
                        "with the same --job, --pools and --deadline must match its plans)")
    args = parser.parse_args(argv)
    for flag, value in (("--seeds", args.seeds), ("--hopeless-seeds", args.hopeless_seeds),
                        ("--parallel", args.parallel)):
        if value < 1:
            parser.error(f"{flag}: want at least 1, got {value}")
    if args.held_out < 0:
        parser.error(f"--held-out: want 0 or more images, got {args.held_out}")
    job = yaml.safe_load(Path(args.job).read_text())
    try:
        deadline = deadline_of(job, args.deadline)
    except ValueError as e:
        parser.error(str(e))
    spec = job["spec"]
    if args.report:
        try:
            curves = json.loads(Path(args.report).read_text())
        except (OSError, ValueError) as e:
            parser.error(f"--report {args.report}: {e}")
        print(report(job, Path(args.pools), deadline, curves))
        return 0
    targets = [float(t) for t in args.targets.split(",")] if args.targets else [
        float(spec["target"]["loss"])]
    probabilities = [float(p) for p in args.probabilities.split(",")]
    algorithms = args.algorithms.split(",")
    all_datasets = [d["name"] for d in spec["datasets"]]
    began = time.perf_counter()
    print(HEADER, flush=True)
    curves = []
    executed: dict[str, list[Run]] = {}
    with tempfile.TemporaryDirectory(prefix="depl-pt-bench-") as tmp:
        workdir = Path(tmp)
        for target in targets:
            for probability in probabilities:
                for algorithm in algorithms:
                    plan = make_plan(job, Path(args.pools), algorithm, target, probability,
                                     deadline, workdir)
                    if not plan.get("phases"):
                        print(row(target, probability, algorithm, "no plan", plan, None, [],
                                  all_datasets), flush=True)
                        continue
                    prediction = predict(spec, plan)
                    check_prediction(prediction, plan)
                    key = json.dumps([plan["datasets"], [(p["model"], p["epochs"], p["workers"])
                                                         for p in plan["phases"]]])
                    wanted = seeds_for(plan, args.seeds, args.hopeless_seeds)
                    done = executed.setdefault(key, [])
                    if len(done) < wanted:  # a plan met before runs only the seeds it lacks
                        rundir = workdir / f"runs{list(executed).index(key)}"
                        rundir.mkdir(exist_ok=True)
                        seeds = range(args.first_seed + len(done), args.first_seed + wanted)
                        with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
                            stop = None if args.run_out else target
                            done += pool.map(
                                lambda s: execute(job, plan, s, rundir, args.ranks or None, stop,
                                                  args.held_out), seeds)
                        print(f"# {algorithm} target {target} P {probability}: {describe(plan)} "
                              f"ran {wanted} seeds ({time.perf_counter() - began:.0f} s so far)",
                              file=sys.stderr, flush=True)
                    runs = done[:wanted]
                    print(row(target, probability, algorithm, describe(plan), plan,
                              [r.losses for r in runs], [r.cpu_seconds for r in runs],
                              all_datasets), flush=True)
                    curves.append({"target": target, "probability": probability,
                                   "algorithm": algorithm, "plan": describe(plan),
                                   "datasets": plan["datasets"],
                                   "predicted": [[p.epoch, p.mean, p.sd] for p in prediction],
                                   "runs": {str(r.seed): r.losses for r in runs},
                                   "cpuSeconds": {str(r.seed): r.cpu_seconds for r in runs},
                                   "heldOut": {str(r.seed): r.held_out for r in runs
                                               if r.held_out is not None}})
                    if args.curves:  # after every plan: a long run stopped early keeps its part
                        Path(args.curves).write_text(json.dumps(curves, indent=1))
    cpu = sum(r.cpu_seconds for runs in executed.values() for r in runs)
    print(f"Wall time {time.perf_counter() - began:.0f} s, CPU {cpu:.0f} s in the runs, "
          f"{args.seeds} seeds per plan ({args.hopeless_seeds} for a plan with predicted "
          f"P < {HOPELESS}) from seed {args.first_seed}, deadline "
          f"{'none' if deadline is None else f'{deadline:g} s'}, ranks per phase "
          f"{args.ranks if args.ranks else 'as planned'}")
    if args.curves:
        Path(args.curves).write_text(json.dumps(curves, indent=1))
    for table in (held_out_table(curves), rebound_table(curves),
                  prediction_table(curves) if args.curves else ""):
        if table:
            print()
            print(table)
    return 0


def report(job: dict, pools: Path, deadline: float | None, curves: list[dict]) -> str:
    """Both tables of a --curves file: each entry's plan is made again for its figures."""
    all_datasets = [d["name"] for d in job["spec"]["datasets"]]
    lines = [HEADER]
    with tempfile.TemporaryDirectory(prefix="depl-pt-report-") as tmp:
        for c in curves:
            plan = make_plan(job, pools, c["algorithm"], c["target"], c["probability"], deadline,
                             Path(tmp))
            if describe(plan) != c["plan"] or plan["datasets"] != c["datasets"]:
                raise RuntimeError(f"{c['algorithm']} at target {c['target']}, P "
                                   f"{c['probability']}: the file ran {c['plan']} on "
                                   f"{c['datasets']}, planning gives {describe(plan)} on "
                                   f"{plan['datasets']}")
            seeds = sorted(c["runs"], key=int)
            cpu = c.get("cpuSeconds", {})
            lines.append(row(c["target"], c["probability"], c["algorithm"], c["plan"], plan,
                             [c["runs"][k] for k in seeds],
                             [cpu[k] for k in seeds if k in cpu] or [math.nan], all_datasets))
    return "\n\n".join(t for t in ("\n".join(lines), held_out_table(curves),
                                    rebound_table(curves), prediction_table(curves)) if t)


def held_out_table(curves: list[dict]) -> str:
    """Per plan run with --held-out: the validation loss the runs ended at (where a run stopped,
    chosen by it) against the same checkpoints' loss on test images no decision looked at."""
    lines = ["| target | P | algorithm | plan | runs | last validation loss (mean) "
             "| held-out loss (mean) | held-out - validation (mean ± sd) | held-out at or below "
             "the target |", "|---|---|---|---|---|---|---|---|---|"]
    for c in curves:
        held = c.get("heldOut", {})
        seeds = [k for k in c["runs"] if k in held]
        if not seeds:
            continue
        last = [c["runs"][k][-1] for k in seeds]
        out = [held[k] for k in seeds]
        gaps = [h - v for h, v in zip(out, last)]
        mean_gap = sum(gaps) / len(gaps)
        sd = math.sqrt(sum((g - mean_gap) ** 2 for g in gaps) / max(1, len(gaps) - 1))
        below = sum(1 for h in out if h <= c["target"])
        lines.append(f"| {c['target']} | {c['probability']} | {c['algorithm']} | {c['plan']} "
                     f"| {len(seeds)} | {sum(last) / len(last):.4f} | {sum(out) / len(out):.4f} "
                     f"| {mean_gap:+.4f} ± {sd:.4f} | {below}/{len(seeds)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def rebound_table(curves: list[dict]) -> str:
    """Per plan trained to its end (--run-out): of the runs the operator would stop before the
    plan's last epoch, how far the next epoch's loss lies above the stopping one, and how many
    were back above the target then: how much the stop owes to one epoch's fluctuation."""
    lines = ["| target | P | algorithm | plan | stopped before the end | next epoch - stopping "
             "epoch (mean ± sd) | back above the target at the next epoch |",
             "|---|---|---|---|---|---|---|"]
    seen = set()
    for c in curves:
        key = (c["plan"], c["target"], tuple(c["datasets"]))
        planned = len(c["predicted"])
        if key in seen or any(len(r) != planned for r in c["runs"].values()):
            continue
        seen.add(key)
        steps = []
        for losses in c["runs"].values():
            stop = epochs_to_stop(losses, c["target"])
            if stop is not None and stop < planned:
                steps.append((losses[stop] - losses[stop - 1], losses[stop] > c["target"]))
        if not steps:
            continue
        mean = sum(d for d, _ in steps) / len(steps)
        sd = math.sqrt(sum((d - mean) ** 2 for d, _ in steps) / max(1, len(steps) - 1))
        lines.append(f"| {c['target']} | {c['probability']} | {c['algorithm']} | {c['plan']} "
                     f"| {len(steps)}/{len(c['runs'])} | {mean:+.4f} ± {sd:.4f} "
                     f"| {sum(1 for _, above in steps if above)}/{len(steps)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def prediction_table(curves: list[dict]) -> str:
    """Per distinct plan: the error of the predicted mean in predicted sds at its worst epoch, and
    the share of real losses inside mean ± 1 sd and ± 2 sd over all epochs."""
    inside_1 = NormalDist().cdf(1) - NormalDist().cdf(-1)
    inside_2 = NormalDist().cdf(2) - NormalDist().cdf(-2)
    lines = [f"| plan | datasets | epochs | worst (mean error) / sd | epoch | RMS error "
             f"| inside ± 1 sd (nominal {inside_1:.3f}) | inside ± 2 sd ({inside_2:.3f}) |",
             "|---|---|---|---|---|---|---|---|"]
    seen = set()
    for c in curves:
        key = (c["plan"], tuple(c["datasets"]))
        if key in seen:
            continue
        seen.add(key)
        worst, worst_epoch, squares, n, in1, in2, total = 0.0, 0, 0.0, 0, 0, 0, 0
        # Runs stopped at the target end early: only the epochs every run trained count, or
        # the mean would be over the runs that had not reached it, the worse ones.
        trained = min(len(r) for r in c["runs"].values())
        for epoch, mean, sd in c["predicted"][:trained]:
            losses = [r[epoch - 1] for r in c["runs"].values()]
            average = sum(losses) / len(losses)
            error = (average - mean) / sd if sd > 0 else math.inf
            if abs(error) > abs(worst):
                worst, worst_epoch = error, epoch
            squares += (average - mean) ** 2
            n += 1
            for loss in losses:
                total += 1
                in1 += abs(loss - mean) <= sd
                in2 += abs(loss - mean) <= 2 * sd
        lines.append(f"| {c['plan']} | {len(c['datasets'])} | {n} | {worst:+.2f} | {worst_epoch} "
                     f"| {math.sqrt(squares / n):.4f} | {in1 / total:.3f} | {in2 / total:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
