"""depl: distribution-oblivious training functions for DependableTrainingJobs.

    import depl

    def train(ctx):
        model = build(ctx.model).to(ctx.device)
        state = ctx.load()
        for epoch in ctx.epochs():
            ...
            ctx.save({"model": model.state_dict(), ...})
            ctx.report(epoch, validation_loss)

    if __name__ == "__main__":
        depl.run(train, convert=depl.width_scaled(build))

The same script runs on a laptop (``python3 train.py --model half --epochs 3 --nproc 2``) and as
a worker pod of the operator (docs/worker-contract.md); docs/python-sdk.md is the guide. torch is
imported only where it is used.
"""

from .config import OperatorInfo, RunConfig, parse_run_config
from .context import Context, Shard
from .convert import convert_width, width_scaled
from .errors import (CheckpointError, ConfigError, PeerLost, ProgressRejected,
                     ProgressUnreachable, UsageError, WorkerError)
from .runner import run, run_worker

__all__ = ["CheckpointError", "ConfigError", "Context", "OperatorInfo", "PeerLost",
           "ProgressRejected", "ProgressUnreachable", "RunConfig", "Shard", "UsageError", "WorkerError", "convert_width",
           "parse_run_config", "run", "run_worker", "width_scaled"]
__version__ = "0.1.0"
