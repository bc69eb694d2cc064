"""The PyTorch reference job (examples/pytorch): its variants really differ in compute, it trains
on the Debian package's Fashion-MNIST files, and it speaks the standalone half of the contract
that kubectl-depl profile drives (epoch lines with the model's cost, --init-from, --eval-initial)."""

import importlib.util
import json
import os
import sys

import pytest
import torch
from conftest import REPO

from depl.cost import model_cost
from depl.runner import run_worker

EXAMPLE = REPO / "examples" / "pytorch"
sys.path.insert(0, str(EXAMPLE))
spec = importlib.util.spec_from_file_location("pytorch_train", EXAMPLE / "train.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
import fashion_mnist  # noqa: E402
from model import VARIANTS, build  # noqa: E402

DATA = fashion_mnist.DEFAULT_DATA_DIR
needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason=f"{DATA} is missing (make deps)")
SHARD = '{"shards": [{"name": "a", "samples": 512}]}'


def run(capsys, argv, env=None):
    code = run_worker(example.train, argv=argv, env=env or {}, convert=example.depl.width_scaled(build),
                      options=example.options, models=list(VARIANTS), prog="train.py")
    out, err = capsys.readouterr()
    return code, [json.loads(l) for l in out.splitlines() if l.startswith("{")], err


def test_narrower_variants_compute_less():
    sample = torch.zeros(1, 1, 28, 28)
    costs = [model_cost(build(v), sample) for v in VARIANTS]
    flops = [c["computePerSampleGflop"] for c in costs]
    assert flops == sorted(flops, reverse=True) and flops[0] > 6 * flops[2]
    assert costs[0]["parameterBytes"] == 4 * sum(p.numel() for p in build("full").parameters())


@needs_data
def test_a_short_run_trains_and_prints_the_contracts_lines(capsys):
    code, lines, err = run(capsys, ["--model", "quarter", "--epochs", "2", "--shards", SHARD,
                                    "--datasets", "a", "--test-samples", "300", "--eval-initial"])
    assert code == 0, err
    assert [l["epoch"] for l in lines] == [0, 1, 2]
    assert lines[2]["loss"] < lines[0]["loss"]
    for line in lines:
        assert line["variant"] == "quarter" and 0 <= line["accuracy"] <= 1
        assert line["computePerSampleGflop"] > 0 and line["parameterBytes"] > 0


@needs_data
def test_a_switch_as_profile_measures_it(capsys, tmp_path):
    checkpoints = str(tmp_path / "c")
    common = ["--shards", SHARD, "--datasets", "a", "--test-samples", "300", "--seed", "3"]
    code, trained, _ = run(capsys, ["--model", "quarter", "--epochs", "2", "--checkpoint-dir", checkpoints, *common])
    assert code == 0
    code, converted, err = run(capsys, ["--model", "full", "--init-from", checkpoints, "--start-epoch", "2",
                                        "--epochs", "0", "--eval-initial", *common])
    assert code == 0, err
    assert [l["epoch"] for l in converted] == [2] and converted[0]["variant"] == "full"
    # Growing keeps the trained units: the grown network starts where the narrow one was.
    assert converted[0]["loss"] == pytest.approx(trained[-1]["loss"], abs=0.05)


def test_a_missing_data_directory_is_exit_2_naming_it(capsys, tmp_path):
    code, _, err = run(capsys, ["--epochs", "1", "--data-dir", str(tmp_path / "none")])
    assert code == 2 and f"data directory {tmp_path / 'none'}: no train-images-idx3-ubyte" in err


def test_settings_from_the_models_env_are_checked(capsys):
    code, _, err = run(capsys, ["--epochs", "1"], {"DEPL_BATCH_SIZE": "lots"})
    assert code == 2 and "DEPL_BATCH_SIZE: want an integer" in err
    code, _, err = run(capsys, ["--epochs", "1", "--datasets", "shard9"])
    assert code == 2 and "dataset 'shard9' is not a shard" in err


@needs_data
def test_test_first_validates_on_other_test_images(capsys):
    # The bench judges the model a run ends with on test images the run never validated on.
    common = ["--model", "quarter", "--epochs", "0", "--eval-initial", "--shards", SHARD,
              "--datasets", "a", "--test-samples", "300", "--seed", "3"]
    code, first, err = run(capsys, common)
    assert code == 0, err
    code, again, _ = run(capsys, common + ["--test-first", "0"])
    assert again[0]["loss"] == first[0]["loss"]
    code, later, _ = run(capsys, common + ["--test-first", "9700"])
    assert code == 0 and later[0]["loss"] != first[0]["loss"]
    code, _, err = run(capsys, common + ["--test-first", "9701"])
    assert code == 2 and "--test-first: want 0..9700 with --test-samples 300, got 9701" in err
