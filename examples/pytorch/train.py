#!/usr/bin/python3
"""The PyTorch reference job: a small CNN on Fashion-MNIST, trained data-parallel with
torch.distributed through the depl SDK (docs/python-sdk.md).

The same script runs on a laptop and as the worker pods of a DependableTrainingJob:

    /usr/bin/python3 examples/pytorch/train.py --model half --epochs 3 --datasets shard0,shard1
    /usr/bin/python3 examples/pytorch/train.py --model half --epochs 3 --nproc 2

Under the operator (DEPL_JOB set) the contract's environment says what to train, and the
settings below come from the model's `env` in the job (DEPL_SHARDS, DEPL_LABEL_NOISE, ...).
"""

from __future__ import annotations

import os
import sys
import time

try:
    import depl
except ImportError:  # a checkout: the SDK is in sdk/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "sdk", "python"))
    import depl
import torch
import torch.distributed as dist
from depl import env as settings
from depl import shards
from torch.nn import functional as F
from torch.utils.data import TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402
from model import VARIANTS, build  # noqa: E402

EVAL_BATCH = 500


def options(group, e) -> None:
    """This job's own flags; each defaults to its DEPL_* variable in the environment `e` (under
    the operator, the model's `env` in the job sets them)."""
    group.add_argument("--data-dir", default=settings.text(e, "DEPL_DATA_DIR",
                                                           fashion_mnist.DEFAULT_DATA_DIR),
                       help="the Fashion-MNIST IDX files (env DEPL_DATA_DIR)")
    group.add_argument("--shards", default=settings.text(e, "DEPL_SHARDS", "6"),
                       help="shard count, shards file, or its JSON text (env DEPL_SHARDS; default 6)")
    group.add_argument("--label-noise", default=settings.text(e, "DEPL_LABEL_NOISE", ""),
                       help="noisy shards: name=fraction,... (env DEPL_LABEL_NOISE)")
    group.add_argument("--test-samples", type=int,
                       default=settings.integer(e, "DEPL_TEST_SAMPLES", 10000, 1,
                                                fashion_mnist.TEST_IMAGES),
                       help="validate on N test images (env DEPL_TEST_SAMPLES; 10000)")
    group.add_argument("--test-first", type=int,
                       default=settings.integer(e, "DEPL_TEST_FIRST", 0, 0,
                                                fashion_mnist.TEST_IMAGES - 1),
                       help="the first of them: test images K .. K+N-1 (env DEPL_TEST_FIRST; 0)")
    group.add_argument("--batch-size", type=int,
                       default=settings.integer(e, "DEPL_BATCH_SIZE", 128, 1, 1 << 20),
                       help="global batch: samples per step over all ranks (env DEPL_BATCH_SIZE; 128)")
    group.add_argument("--lr", type=float, default=settings.number(e, "DEPL_LR", 0.002, 1e-9),
                       help="Adam's learning rate (env DEPL_LR; 0.002)")


def load_data(ctx: depl.Context):
    """This run's training samples (noisy labels where the layout says) and validation set."""
    o = ctx.options
    if not 1 <= o.test_samples <= fashion_mnist.TEST_IMAGES:
        raise depl.ConfigError(f"--test-samples: want 1..{fashion_mnist.TEST_IMAGES}, got {o.test_samples}")
    if not 0 <= o.test_first <= fashion_mnist.TEST_IMAGES - o.test_samples:
        raise depl.ConfigError(f"--test-first: want 0..{fashion_mnist.TEST_IMAGES - o.test_samples} "
                               f"with --test-samples {o.test_samples}, got {o.test_first}")
    layout = shards.layout_from_spec(o.shards, fashion_mnist.TRAIN_IMAGES, "--shards/DEPL_SHARDS")
    if o.label_noise:
        layout = shards.apply_label_noise(layout, o.label_noise, "--label-noise/DEPL_LABEL_NOISE")
    names = ctx.datasets or list(layout.names)
    try:
        images, labels = fashion_mnist.load(o.data_dir, "train", shards.rows_needed(layout, names))
        rows, train_labels = shards.select(layout, names, labels, fashion_mnist.CLASSES)
        test_images, test_labels = fashion_mnist.load(o.data_dir, "test", o.test_first + o.test_samples)
        test_images, test_labels = test_images[o.test_first:], test_labels[o.test_first:]
    except fashion_mnist.DataError as e:
        raise depl.ConfigError(str(e)) from None
    train = TensorDataset(fashion_mnist.to_tensor(images[rows]), torch.from_numpy(train_labels))
    validation = (fashion_mnist.to_tensor(test_images), torch.from_numpy(test_labels.astype("int64")))
    return train, validation


def evaluate(ctx: depl.Context, model, validation, extra: list[float]) -> tuple[float, float, list[float]]:
    """Mean cross-entropy and accuracy over the validation set, each rank taking every
    world_size-th image and the sums added over ranks (so every rank gets the same figures).
    `extra` sums (e.g. the training loss) ride along in the same all-reduce."""
    images, labels = validation
    mine = torch.arange(ctx.rank, len(labels), ctx.world_size)
    total_loss, correct = 0.0, 0
    model.eval()
    with torch.no_grad():
        for first in range(0, len(mine), EVAL_BATCH):
            chosen = mine[first:first + EVAL_BATCH]
            logits = model(images[chosen].to(ctx.device))
            target = labels[chosen].to(ctx.device)
            total_loss += F.cross_entropy(logits, target, reduction="sum").item()
            correct += (logits.argmax(1) == target).sum().item()
    sums = torch.tensor([total_loss, float(correct), *extra], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(sums)
    n = float(len(labels))
    return sums[0].item() / n, sums[1].item() / n, sums[2:].tolist()


def train(ctx: depl.Context) -> None:
    o = ctx.options
    train_set, validation = load_data(ctx)
    model = build(ctx.model).to(ctx.device)
    # Adam: on these small networks its curves are smoother than SGD with momentum (whose first
    # epoch sometimes spiked above the untrained loss) and separate the variants' floors more.
    optimizer = torch.optim.Adam(model.parameters(), lr=o.lr)
    state = ctx.load()
    if state is not None:
        model.load_state_dict(state["model"])
        if state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
    ctx.describe_model(model, validation[0][:1].to(ctx.device))
    net = ctx.data_parallel(model)
    if ctx.eval_initial:
        loss, accuracy, _ = evaluate(ctx, model, validation, [])
        ctx.report(ctx.start_epoch, loss, accuracy=round(accuracy, 6))
    local_batch = ctx.local_batch_size(o.batch_size)
    for epoch in ctx.epochs():
        started, cpu_started = time.perf_counter(), time.process_time()
        net.train()
        loss_sum, batches = 0.0, 0
        for x, y in ctx.shard(train_set).batches(local_batch):
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x.to(ctx.device)), y.to(ctx.device))
            loss.backward()
            optimizer.step()
            loss_sum += loss.item()
            batches += 1
        train_seconds = time.perf_counter() - started
        train_cpu_seconds = time.process_time() - cpu_started
        val_loss, accuracy, (train_sum, train_batches) = evaluate(
            ctx, model, validation, [loss_sum, float(batches)])
        ctx.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
        ctx.report(epoch, val_loss, accuracy=round(accuracy, 6),
                   trainLoss=round(train_sum / max(train_batches, 1.0), 6),
                   trainSeconds=round(train_seconds, 4), trainCpuSeconds=round(train_cpu_seconds, 4),
                   samples=len(train_set))


if __name__ == "__main__":
    depl.run(train, convert=depl.width_scaled(build), options=options, models=list(VARIANTS),
             description="A CNN on Fashion-MNIST, the PyTorch reference job of depl-operator.")
