"""``depl.Context``: what a training function sees, the same on a laptop and in a cluster.

The context owns everything the operator decides (model variant, datasets, epochs, ranks) and
everything the worker contract asks for (checkpoints, progress reports, the shared stop
decision), so the training function holds only the model, the data and the optimiser.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from typing import Any, Callable, Iterator, TextIO

from . import checkpoint as checkpoints
from .config import OperatorInfo, RunConfig
from .errors import CheckpointError, ProgressUnreachable, UsageError, WorkerError
from .progress import Action, ProgressClient
from .signals import TerminationRequest

log = logging.getLogger("depl")

# convert(state, from_model, to_model) -> state: brings a checkpoint's state to another variant.
Converter = Callable[[Any, str, str], Any]

# The decision rank 0 sends every rank at the end of an epoch; _UNREACHABLE: the progress
# endpoint did not take the report within the retry deadline (every rank exits 75).
_GO_ON, _STOP, _STOP_BY_CONTROLLER, _FAILED, _UNREACHABLE = 0, 1, 2, 3, 4


class Context:
    """One rank's view of the run. Build it with ``depl.run``; tests may build it directly."""

    def __init__(self, config: RunConfig, *, device: Any, distributed: Any,
                 reporter: ProgressClient | None = None, convert: Converter | None = None,
                 out: TextIO | None = None, termination: TerminationRequest | None = None) -> None:
        self._config = config
        self._device = device
        self._dist = distributed
        self._reporter = reporter
        self._convert = convert
        self._out = out if out is not None else sys.stdout
        self._start = config.start_epoch  # the epoch the weights are at before the first to train
        self._found: dict | None = None  # rank 0's checkpoint in checkpoint_dir, as every rank knows it
        self._loaded = False
        self._iterating = False
        self._current: int | None = None  # the epoch being trained
        self._epoch_started = 0.0
        self._reported: int | None = None
        self._stop = False
        self._last_saved: int | None = None
        self._stopped_by_controller = False
        self._termination = termination  # SIGTERM to this process (depl.signals)
        self._terminated = False  # some rank was sent SIGTERM: every rank stops, exit 143
        self._cost: dict[str, float] = {}

    # What the operator (or the command line) decided.
    @property
    def model(self) -> str:
        """The model variant this run trains (``DEPL_MODEL`` / ``--model``)."""
        return self._config.model

    @property
    def datasets(self) -> list[str]:
        """The datasets to train on (``DEPL_DATASETS`` / ``--datasets``; empty: all)."""
        return list(self._config.datasets)

    @property
    def rank(self) -> int:
        return self._config.rank

    @property
    def world_size(self) -> int:
        return self._config.world_size

    @property
    def is_main(self) -> bool:
        """Rank 0: the rank that reports, prints and writes checkpoints."""
        return self._config.rank == 0

    @property
    def device(self) -> Any:
        """The torch.device this rank computes on."""
        return self._device

    @property
    def checkpoint_dir(self) -> str | None:
        return self._config.checkpoint_dir

    @property
    def seed(self) -> int:
        return self._config.seed

    @property
    def operator_mode(self) -> bool:
        """True under the operator (``DEPL_JOB`` set), False standalone."""
        return self._config.operator is not None

    @property
    def job(self) -> OperatorInfo | None:
        """The job, namespace, phase and progress endpoint under the operator; None standalone."""
        return self._config.operator

    @property
    def loss_profile(self) -> dict | None:
        """The loss profile the plan assumed for this variant (informational), under the operator."""
        return self._config.operator.loss_profile if self._config.operator else None

    @property
    def options(self) -> Any:
        """The script's own flags (``depl.run(..., options=...)``), as an argparse Namespace."""
        return self._config.options

    @property
    def eval_initial(self) -> bool:
        """``--eval-initial``: report the loss of the starting weights before the first epoch."""
        return self._config.eval_initial

    @property
    def start_epoch(self) -> int:
        """Epochs the weights have been trained for before this run's first epoch (after load())."""
        return self._start

    @property
    def terminated(self) -> bool:
        """True once some rank was sent SIGTERM and every rank stopped after the same epoch
        (the worker then exits 143, see depl.signals)."""
        return self._terminated

    @property
    def end_epoch(self) -> int:
        """The planned last epoch (the controller may move it: see epochs())."""
        return self._config.end_epoch

    # Start-up: what rank 0 knows about the checkpoint, shared with every rank.
    def prepare(self) -> None:
        """Looks for a checkpoint to resume from (rank 0) and tells every rank. Collective."""
        found: dict | None = None
        if self.is_main and self.checkpoint_dir:
            path = os.path.join(self.checkpoint_dir, checkpoints.FILE_NAME)
            if os.path.exists(path):
                try:
                    header = checkpoints.read_checkpoint_header(path)
                    found = {"path": path, "model": header.model, "epoch": header.epoch}
                except CheckpointError as e:
                    found = {"error": str(e)}
        found = self._dist.broadcast_object(found)
        if found is not None and "error" in found:
            raise CheckpointError(found["error"])
        self._found = found

    # Checkpoints.
    def load(self) -> Any:
        """The state to start from, the same on every rank; None to start from scratch. Collective.

        It is the last checkpoint in ``checkpoint_dir`` (training resumes after its epoch), else
        the one ``--init-from`` names (epochs numbered from ``--start-epoch``). A checkpoint of
        another variant goes through ``convert`` first. A damaged checkpoint is an error.
        """
        if self._loaded:
            raise UsageError("ctx.load() was called twice")
        if self._iterating:
            raise UsageError("ctx.load() must come before ctx.epochs()")
        self._loaded = True
        payload: dict | None = None
        if self.is_main:
            try:
                payload = self._read_start_state()
            except WorkerError as e:
                payload = {"error": str(e), "kind": type(e).__name__}
        payload = self._dist.broadcast_object(payload)
        if payload is None:
            return None
        if "error" in payload:
            raise (CheckpointError if payload["kind"] == "CheckpointError" else UsageError)(payload["error"])
        self._start = payload["epoch"]
        return payload["state"]

    def _read_start_state(self) -> dict | None:
        if self._found is not None:
            path, epoch = self._found["path"], None
        elif self._config.init_from:
            path, epoch = checkpoints.checkpoint_path(self._config.init_from), self._config.start_epoch
            if not os.path.exists(path):
                raise CheckpointError(f"--init-from: checkpoint {path}: no such file")
        else:
            if self._config.start_epoch > 0 and self.checkpoint_dir:
                log.warning("event=no_checkpoint dir=%s start_epoch=%d detail=%r", self.checkpoint_dir,
                            self._config.start_epoch, "training from scratch")
            return None
        header, state = checkpoints.read_checkpoint(path)
        if epoch is None:
            epoch = header.epoch
            if epoch < self._config.start_epoch:
                log.warning("event=checkpoint_behind checkpoint_epoch=%d start_epoch=%d", epoch,
                            self._config.start_epoch)
        log.info("event=resume checkpoint=%s epoch=%d model=%s", path, epoch, header.model)
        if header.model != self.model:
            if self._convert is None:
                raise UsageError(f"checkpoint {path} holds model '{header.model}', this run trains "
                                 f"'{self.model}': pass a converter, depl.run(train, convert=...)")
            import torch

            log.info("event=convert_checkpoint from_model=%s to_model=%s", header.model, self.model)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                state = self._convert(state, header.model, self.model)
        return {"state": state, "epoch": epoch}

    def save(self, state: Any) -> None:
        """Rank 0 writes `state` as the checkpoint of the epoch just trained (atomically); other
        ranks and runs without a checkpoint directory do nothing."""
        if not self.checkpoint_dir or not self.is_main:
            return
        epoch = self._current if self._current is not None else self._start
        path = os.path.join(self.checkpoint_dir, checkpoints.FILE_NAME)
        started = time.perf_counter()
        size = checkpoints.write_checkpoint(path, self.model, epoch, state)
        log.debug("event=checkpoint path=%s epoch=%d bytes=%d seconds=%.4f", path, epoch, size,
                  time.perf_counter() - started)
        self._last_saved = epoch

    # Epochs and reports.
    def epochs(self) -> Iterator[int]:
        """The global epoch numbers to train, from ``start_epoch + 1``.

        It ends after the planned last epoch unless the controller answered ``continue`` there
        (the plan grew), and earlier when it answered ``checkpointAndExit``: every rank stops after
        the same epoch. Each epoch must end with ``ctx.report(epoch, loss)`` on every rank.
        When the progress endpoint does not take a report within DEPL_PROGRESS_RETRY_SECONDS,
        ``ctx.report`` raises ProgressUnreachable on every rank (the worker exits 75).
        """
        if self._iterating:
            raise UsageError("ctx.epochs() can be iterated only once per run")
        if self._found is not None and not self._loaded:
            raise UsageError(f"{self._found['path']} holds a checkpoint at epoch "
                             f"{self._found['epoch']}: call ctx.load() before ctx.epochs(), so "
                             "training resumes instead of starting over")
        if self._config.init_from and not self._loaded:
            raise UsageError("--init-from was given: call ctx.load() before ctx.epochs()")
        self._iterating = True
        epoch = self._start
        if epoch >= self.end_epoch:
            log.info("event=nothing_to_do epoch=%d end_epoch=%d", epoch, self.end_epoch)
            return
        while True:
            epoch += 1
            self._current = epoch
            self._reported = None
            self._stop = False
            self._epoch_started = time.perf_counter()
            yield epoch
            if self._reported != epoch:
                if self.operator_mode:
                    log.warning("event=epoch_not_reported epoch=%d detail=%r", epoch,
                                "call ctx.report(epoch, loss) at the end of every epoch")
                if epoch >= self.end_epoch:
                    return
            elif self._stop:
                if epoch < self.end_epoch or self._stopped_by_controller or self._terminated:
                    log.info("event=checkpoint_and_exit epoch=%d rank=%d", epoch, self.rank)
                    if self.checkpoint_dir and self.is_main and self._last_saved != epoch:
                        log.warning("event=checkpoint_behind_report epoch=%d saved_epoch=%s "
                                    "detail=%r", epoch, self._last_saved,
                                    "call ctx.save(state) before ctx.report so the next phase "
                                    "starts from this epoch")
                return

    def report(self, epoch: int, loss: float, **metrics: Any) -> bool:
        """Ends `epoch` with its validation loss, on every rank. Collective.

        Rank 0 prints the epoch's JSON line (``epoch``, ``loss``, ``seconds``, ``variant`` and
        `metrics`) and, under the operator, posts the report and waits for the answer (retrying
        until DEPL_PROGRESS_RETRY_SECONDS); every rank then receives the same decision. Returns
        True when training goes on after this epoch; raises ProgressUnreachable on every rank
        when the endpoint did not take the report in time (save the checkpoint first).
        """
        try:
            value = float(loss)
        except (TypeError, ValueError):
            raise UsageError(f"ctx.report: loss must be a number, got {loss!r}") from None
        if not (math.isfinite(value) and value >= 0):
            raise UsageError(f"ctx.report: loss must be finite and >= 0, got {value} "
                             f"(epoch {epoch}: did training diverge?)")
        if self._current is None and epoch == self._start:
            # The loss of the starting weights (--eval-initial): printed, never posted.
            if self.is_main:
                self._print_line(epoch, value, 0.0, metrics)
            return True
        if not self._iterating or epoch != self._current:
            raise UsageError(f"ctx.report({epoch}, ...): the epoch being trained is "
                             f"{self._current} (report each epoch ctx.epochs() yields, once)")
        if self._reported == epoch:
            raise UsageError(f"ctx.report: epoch {epoch} was reported already")
        seconds = time.perf_counter() - self._epoch_started
        code = _GO_ON
        failure: WorkerError | None = None
        if self.is_main:
            self._print_line(epoch, value, seconds, metrics)
            try:
                code = self._decide(epoch, value)
            except ProgressUnreachable as e:
                failure, code = e, _UNREACHABLE
            except WorkerError as e:  # every rank stops with rank 0's reason
                failure, code = e, _FAILED
        code = self._dist.broadcast_code(code)
        if code in (_FAILED, _UNREACHABLE):
            message = self._dist.broadcast_object(str(failure) if failure else None)
            if failure is not None:
                raise failure
            if code == _UNREACHABLE:
                raise ProgressUnreachable(f"rank 0: {message}")
            raise WorkerError(f"rank 0 stopped: {message}")
        # A rank sent SIGTERM (its pod is being deleted) stops every rank after this epoch, whose
        # checkpoint is saved and whose report was posted.
        requested = self._termination is not None and self._termination.requested
        terminated = self._dist.any_rank(requested)
        if terminated and not self._terminated:
            log.info("event=terminating epoch=%d rank=%d signalled=%s", epoch, self.rank,
                     "yes" if requested else "another rank")
        self._reported = epoch
        self._terminated = terminated
        self._stop = code != _GO_ON or terminated
        self._stopped_by_controller = code == _STOP_BY_CONTROLLER
        return not self._stop

    def _decide(self, epoch: int, loss: float) -> int:
        planned = _STOP if epoch >= self.end_epoch else _GO_ON
        if self._reporter is None:
            target = self._config.target_loss
            if target is not None and loss <= target:  # standalone: as the operator would
                log.info("event=target_reached epoch=%d loss=%.6g target=%.6g", epoch, loss, target)
                return _STOP
            return planned
        action = self._reporter.post(epoch, loss)
        if action is Action.CHECKPOINT_AND_EXIT:
            return _STOP_BY_CONTROLLER
        return _GO_ON  # also past the planned end: the plan grew

    def _print_line(self, epoch: int, loss: float, seconds: float, metrics: dict) -> None:
        line = {"epoch": epoch, "loss": loss, "seconds": round(seconds, 6), "variant": self.model}
        line.update(self._cost)
        for key, value in metrics.items():
            line[key] = float(value) if hasattr(value, "item") else value
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._out.flush()

    def describe_model(self, module: Any, sample: Any) -> dict[str, float]:
        """Measures `module` on one `sample` batch (see depl.cost) and adds its
        ``computePerSampleGflop`` and ``parameterBytes`` to every epoch line, which is where
        ``kubectl-depl profile`` reads them."""
        from .cost import model_cost

        self._cost = model_cost(module, sample)
        return dict(self._cost)

    # Data parallelism.
    def shard_indices(self, count: int) -> Any:
        """This rank's sample indices for the current epoch, as a LongTensor.

        Every rank draws the same permutation of ``range(count)`` from (seed, epoch) and takes
        every world_size-th index from its rank on (the last ``count % world_size`` are left out
        so that all ranks take as many steps). Reading it in batches of
        ``local_batch_size(B)`` gives, over all ranks, exactly the batches of size B one rank
        would read: the loss curve does not depend on the number of ranks.
        """
        import torch

        epoch = self._current if self._current is not None else self._start + 1
        generator = torch.Generator()
        generator.manual_seed((self.seed * 1_000_003 + epoch) % (2**63 - 1))
        order = torch.randperm(count, generator=generator)
        usable = count - count % self.world_size
        return order[self.rank:usable:self.world_size]

    def shard(self, dataset: Any) -> "Shard":
        """This rank's share of `dataset` for the current epoch (see shard_indices)."""
        return Shard(dataset, self.shard_indices(len(dataset)))

    def local_batch_size(self, global_batch_size: int) -> int:
        """Samples per step on this rank for a global batch (samples per step over all ranks)."""
        if global_batch_size < self.world_size:
            raise UsageError(f"a global batch of {global_batch_size} cannot be split over "
                             f"{self.world_size} ranks")
        return global_batch_size // self.world_size

    def data_parallel(self, module: Any) -> Any:
        """`module`, moved to this rank's device, wrapped in DistributedDataParallel when there
        are several ranks (gradients are averaged over ranks in backward()), `module` itself
        otherwise. Keep a reference to `module` to save its state_dict()."""
        module.to(self._device)
        if self.world_size == 1:
            return module
        from torch.nn.parallel import DistributedDataParallel

        if self._device.type == "cuda":
            return DistributedDataParallel(module, device_ids=[self._device.index])
        return DistributedDataParallel(module)


class Shard:
    """A rank's share of a dataset: a map-style dataset over the chosen indices, plus fast
    batching of tensors and TensorDatasets."""

    def __init__(self, dataset: Any, indices: Any) -> None:
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> Any:
        return self.dataset[int(self.indices[i])]

    def batches(self, batch_size: int) -> Iterator[Any]:
        """Consecutive batches of `batch_size` (the last may be smaller)."""
        if batch_size < 1:
            raise UsageError(f"Shard.batches: batch_size must be >= 1, got {batch_size}")
        tensors = getattr(self.dataset, "tensors", None)
        for first in range(0, len(self.indices), batch_size):
            chosen = self.indices[first:first + batch_size]
            if tensors is not None:
                yield tuple(t[chosen] for t in tensors)
            elif hasattr(self.dataset, "index_select"):
                yield self.dataset[chosen]
            else:
                from torch.utils.data import default_collate

                yield default_collate([self.dataset[int(i)] for i in chosen])
