#!/usr/bin/python3
"""Does the learning-curve model predict real SGD on the PyTorch CNN? (docs/benchmarks.md,
"Learning curves of the PyTorch job").

    /usr/bin/python3 bench/pytorch_curves.py                       # the default sweep
    /usr/bin/python3 bench/pytorch_curves.py --seeds 3 --epochs 8 --configs full:shard0+shard1

Trains the job's variants (examples/pytorch/train.py, one rank) on selections of different size
and label noise for seeds the profile never saw, and compares every epoch's loss with what the
job's fitted profiles predict under two forms of the model:

- `samples` (docs/depl-model.md section 2): one epoch on E effective (clean) samples decays by
  r^(E / referenceSamples), towards the floor f * (referenceSamples / E)^dataExponent +
  labelNoiseFloor * (wrong labels / N); progress is counted in samples seen;
- `epochs`: one epoch decays by r whatever the data (the floor as above); progress is counted in
  epochs.

For each configuration and form it prints the worst error of the predicted mean (in predicted
standard deviations), the RMS error of the mean, and the share of real losses inside mean ± 1 sd
and ± 2 sd (nominal 0.683 and 0.954).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytorch_dependability import REPO, effective_samples, execute, predict  # noqa: E402

DEFAULT_CONFIGS = ("full:shard0,full:shard0+shard1,full:shard0+shard1+shard2+shard3,"
                   "full:shard0+shard1+shard2+shard3+shard4,full:shard0+shard1+shard2+shard3+shard5,"
                   "half:shard0,half:shard0+shard1+shard2+shard3,"
                   "eighth:shard0,eighth:shard0+shard1+shard2+shard3")


def score(prediction, runs: list[list[float]]) -> tuple[float, int, float, float, float]:
    worst, worst_epoch, squares, in1, in2, total = 0.0, 0, 0.0, 0, 0, 0
    for p in prediction:
        losses = [r[p.epoch - 1] for r in runs]
        average = sum(losses) / len(losses)
        error = (average - p.mean) / p.sd if p.sd > 0 else math.inf
        if abs(error) > abs(worst):
            worst, worst_epoch = error, p.epoch
        squares += (average - p.mean) ** 2
        for loss in losses:
            total += 1
            in1 += abs(loss - p.mean) <= p.sd
            in2 += abs(loss - p.mean) <= 2 * p.sd
    return worst, worst_epoch, math.sqrt(squares / len(prediction)), in1 / total, in2 / total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", default=str(REPO / "examples" / "pytorch" / "job.yaml"))
    parser.add_argument("--configs", default=DEFAULT_CONFIGS,
                        help="variant:dataset+dataset,... (default: a sweep of sizes, noise, widths)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=2001)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    job = yaml.safe_load(Path(args.job).read_text())
    spec = job["spec"]
    effective_of = {d["name"]: effective_samples(d) for d in spec["datasets"]}
    began = time.perf_counter()
    print(f"Seeds {args.first_seed}..{args.first_seed + args.seeds - 1}, {args.epochs} epochs, "
          f"job {Path(args.job).relative_to(REPO) if Path(args.job).is_relative_to(REPO) else args.job}")
    print()
    print("| variant | datasets | E | form | worst error / sd | at epoch | RMS error "
          "| inside ± 1 sd | inside ± 2 sd | mean loss at 1, 2, 4, last |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="depl-pt-curves-") as tmp:
        for n, config in enumerate(args.configs.split(",")):
            variant, _, names = config.partition(":")
            datasets = names.split("+")
            plan = {"datasets": datasets,
                    "phases": [{"model": variant, "epochs": args.epochs, "workers": 1}]}
            rundir = Path(tmp) / f"c{n}"
            rundir.mkdir()
            seeds = range(args.first_seed, args.first_seed + args.seeds)
            with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
                runs = [r.losses for r in pool.map(
                    lambda s: execute(job, plan, s, rundir, 1, None), seeds)]
            effective = sum(effective_of[d] for d in datasets)
            means = [sum(r[t] for r in runs) / len(runs) for t in range(args.epochs)]
            shown = ", ".join(f"{means[t - 1]:.3f}" for t in (1, 2, 4, args.epochs))
            per_epoch = {"datasets": spec["datasets"], "switching": spec.get("switching", []),
                         "models": [dict(m, lossProfile=dict(m["lossProfile"],
                                                             decayPerEpoch=float(
                                                                 m["lossProfile"]["decayPerEpoch"]) ** (
                                                                 float(m["lossProfile"][
                                                                     "referenceSamples"]) / effective)))
                                    for m in spec["models"]]}
            for form, model in (("samples", spec), ("epochs", per_epoch)):
                worst, at, rms, in1, in2 = score(predict(model, plan), runs)
                print(f"| {variant} | {'+'.join(datasets)} | {effective:.0f} | {form} | {worst:+.2f} "
                      f"| {at} | {rms:.4f} | {in1:.2f} | {in2:.2f} | {shown} |", flush=True)
    print()
    print(f"Wall time {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
