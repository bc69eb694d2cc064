"""A tiny training function for the SDK's tests: a two-layer network on a seeded synthetic
problem, with flags that make a rank fail on purpose."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "sdk", "python"))
import depl  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

WIDTHS = {"small": 4, "large": 8}


def build(name):
    return nn.Sequential(nn.Linear(6, WIDTHS[name]), nn.ReLU(), nn.Linear(WIDTHS[name], 3))


def data():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(256, 6, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1).long()
    return TensorDataset(x, y), (x[:64], y[:64])


def options(group, env):
    group.add_argument("--kill-rank", type=int, default=-1)
    group.add_argument("--kill-at-epoch", type=int, default=-1)
    group.add_argument("--fail-rank", type=int, default=-1)
    group.add_argument("--skip-load", action="store_true")
    group.add_argument("--kill-note", default="", help="write the time of the kill here first")
    group.add_argument("--term-rank", type=int, default=-1, help="this rank sends itself SIGTERM")
    group.add_argument("--term-at-epoch", type=int, default=-1)


def train(ctx):
    o = ctx.options
    train_set, (vx, vy) = data()
    vx, vy = vx.to(ctx.device), vy.to(ctx.device)
    model = build(ctx.model).to(ctx.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if not o.skip_load:
        state = ctx.load()
        if state is not None:
            model.load_state_dict(state["model"])
            if "optimizer" in state:
                optimizer.load_state_dict(state["optimizer"])
    net = ctx.data_parallel(model)
    if ctx.eval_initial:
        with torch.no_grad():
            ctx.report(ctx.start_epoch, F.cross_entropy(model(vx), vy).item())
    for epoch in ctx.epochs():
        if epoch == o.kill_at_epoch and ctx.rank == o.kill_rank:
            if o.kill_note:
                with open(o.kill_note, "w") as note:
                    note.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        if epoch == o.term_at_epoch and ctx.rank == o.term_rank:
            os.kill(os.getpid(), signal.SIGTERM)
        if epoch == o.kill_at_epoch and ctx.rank == o.fail_rank:
            raise RuntimeError("this rank fails on purpose")
        for x, y in ctx.shard(train_set).batches(ctx.local_batch_size(32)):
            optimizer.zero_grad()
            F.cross_entropy(net(x.to(ctx.device)), y.to(ctx.device)).backward()
            optimizer.step()
        with torch.no_grad():
            loss = F.cross_entropy(model(vx), vy).item()
        ctx.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
        ctx.report(epoch, loss, rank=ctx.rank)


if __name__ == "__main__":
    depl.run(train, convert=depl.width_scaled(build), options=options, models=list(WIDTHS))
