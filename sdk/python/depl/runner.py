"""``depl.run``: turns a training function into a worker of the operator's contract.

One code path for every mode: the configuration comes from the flags (standalone) or the
contract's environment (under the operator); with ``--nproc N`` this process becomes rank 0 and
starts ranks 1..N-1 as copies of itself; every rank joins torch.distributed, builds its
``Context`` and calls the training function. Exit codes: 0 done (or told to stop), 1 a runtime
error, 2 a bad setting, 75 the progress endpoint did not take a report in time, 143 stopped by
SIGTERM after a checkpoint (depl.signals).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import traceback
from typing import Any, Callable, Mapping, NoReturn, Sequence

from .config import OptionsHook, RunConfig, parse_run_config
from .context import Context, Converter
from .errors import EXIT_BAD_CONFIG, EXIT_FAILURE, EXIT_OK, ConfigError, PeerLost, WorkerError
from .signals import EXIT_TERMINATED, TerminationRequest

log = logging.getLogger("depl")


class _RankFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.rank = 0

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = self.rank
        return True


_rank_filter = _RankFilter()


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _configure_logging(env: Mapping[str, str]) -> None:
    level = env.get("DEPL_LOG_LEVEL", "INFO").upper()
    log.setLevel(level if level in ("DEBUG", "INFO", "WARNING", "ERROR") else "INFO")
    if log.handlers:
        return
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s rank=%(rank)s %(message)s"))
    handler.addFilter(_rank_filter)
    log.addHandler(handler)
    log.propagate = False


def _strip_nproc(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def _die_with_parent() -> None:
    """In a launched rank: SIGTERM when rank 0's process dies (Linux), so none is left behind."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _launch_local_ranks(config: RunConfig, argv: Sequence[str], port: int) -> list[subprocess.Popen]:
    script = sys.argv[0]
    if not script or script == "-c" or not os.path.isfile(script):
        raise ConfigError("--nproc: the training must run as a script file (python3 train.py ...)")
    children = []
    for rank in range(1, config.nproc):
        env = dict(os.environ, WORLD_SIZE=str(config.nproc), RANK=str(rank), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        children.append(subprocess.Popen([sys.executable, script, *_strip_nproc(argv)], env=env,
                                         stdout=sys.stderr, preexec_fn=_die_with_parent))
    return children


def _wait_for_ranks(children: list[subprocess.Popen], timeout: float) -> list[tuple[int, int]]:
    """(rank, exit code) of every launched rank that failed; kills those still running after
    `timeout` seconds."""
    failed, deadline = [], time.monotonic() + timeout
    for rank, child in enumerate(children, start=1):
        try:
            code = child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
        if code != 0:
            failed.append((rank, code))
    return failed


def _select_device(config: RunConfig) -> Any:
    import torch

    if config.device == "cpu" or (config.device == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"device {config.device}: CUDA is not available to this process")
    if config.device == "auto" or config.device == "cuda":
        # One GPU per rank: the pod's own under the operator, the rank's among this machine's
        # with --nproc (LOCAL_RANK, as torchrun numbers them).
        return torch.device("cuda", config.local_rank % torch.cuda.device_count())
    index = int(config.device.split(":", 1)[1])
    if index >= torch.cuda.device_count():
        raise ConfigError(f"device {config.device}: this machine has "
                          f"{torch.cuda.device_count()} CUDA device(s)")
    return torch.device("cuda", index)


def run_worker(train: Callable[[Context], Any], *, argv: Sequence[str], env: Mapping[str, str],
               convert: Converter | None = None,
               options: OptionsHook | None = None,
               models: Sequence[str] | None = None, description: str | None = None,
               prog: str | None = None) -> int:
    """Runs `train` as one worker (and, with --nproc, its local ranks); returns the exit code."""
    _configure_logging(env)
    prog = prog or os.path.basename(sys.argv[0] or "worker")
    distributed = reporter = None  # reporter: rank 0's ProgressClient under the operator
    children: list[subprocess.Popen] = []
    config: RunConfig | None = None
    termination = TerminationRequest()
    termination.install()
    try:
        config = parse_run_config(argv, env, prog=prog, description=description, options=options,
                                  models=models)
        _rank_filter.rank = config.rank
        import torch

        from .distributed import Distributed
        from .progress import ProgressClient

        torch.set_num_threads(config.threads)
        device = _select_device(config)
        store = None
        if config.nproc > 1:
            import datetime

            import torch.distributed as dist

            store = dist.TCPStore("127.0.0.1", 0, config.nproc, True,
                                  datetime.timedelta(seconds=max(config.peer_timeout, 120.0)),
                                  wait_for_workers=False)
            children = _launch_local_ranks(config, argv, store.port)
            config.world_size, config.rank, config.master_port = config.nproc, 0, store.port
        # Under the operator the other ranks wait for rank 0's decision after each epoch, which
        # waits for the progress endpoint to take the report (up to the retry deadline).
        distributed = Distributed(world_size=config.world_size, rank=config.rank,
                                  master_addr=config.master_addr, master_port=config.master_port,
                                  peer_timeout=config.peer_timeout, device=device, store=store,
                                  decision_wait=config.progress_retry if config.operator else 0)
        if config.operator is not None and config.rank == 0:
            reporter = ProgressClient(config.operator.progress_url, config.operator.progress_token,
                                      config.operator.phase, retry_for=config.progress_retry)
        log.info("event=start model=%s epochs=%d start_epoch=%d datasets=%s mode=%s device=%s "
                 "threads=%d%s", config.model, config.epochs, config.start_epoch,
                 ",".join(config.datasets) or "-", "operator" if config.operator else "standalone",
                 device, config.threads,
                 f" job={config.operator.namespace}/{config.operator.job} phase={config.operator.phase}"
                 if config.operator else "")
        torch.manual_seed(config.seed)
        ctx = Context(config, device=device, distributed=distributed, reporter=reporter,
                      convert=convert, termination=termination)
        ctx.prepare()
        train(ctx)
        log.info("event=done rank=%d last_epoch=%s%s", config.rank, ctx._current,
                 " terminated=yes" if ctx.terminated else "")
        code = EXIT_TERMINATED if ctx.terminated else EXIT_OK
    except WorkerError as e:
        code = _fail(prog, e, distributed, config)
    except Exception as e:  # the training function's own failure, or a collective's
        lost = distributed.lost_peer() if distributed is not None else None
        if lost is not None:
            code = _fail(prog, lost, distributed, config)
        else:
            traceback.print_exc(file=sys.stderr)
            code = _fail(prog, WorkerError(f"{type(e).__name__}: {e}"), distributed, config)
    finally:
        termination.restore()
        if distributed is not None:
            distributed.close()
    if children:
        timeout = (config.peer_timeout if config else 120.0) + 30.0
        for rank, child_code in _wait_for_ranks(children, timeout):
            if code == EXIT_OK:
                print(f"{prog}: rank {rank} exited with code {child_code}", file=sys.stderr)
                code = EXIT_FAILURE
    return code


def _fail(prog: str, error: WorkerError, distributed: Any, config: RunConfig | None) -> int:
    """Tells the other ranks (through the store) and the user (stderr) why this rank stops."""
    if distributed is not None and not isinstance(error, PeerLost):
        distributed.note_failure(str(error))
    rank = f" rank {config.rank}" if config is not None and config.world_size > 1 else ""
    print(f"{prog}{rank}: {error}", file=sys.stderr)
    if isinstance(error, ConfigError):
        return EXIT_BAD_CONFIG
    return error.exit_code


def run(train: Callable[[Context], Any], *, convert: Converter | None = None,
        options: OptionsHook | None = None,
        models: Sequence[str] | None = None, description: str | None = None) -> NoReturn:
    """Runs `train(ctx)` as this process's worker and exits with the contract's exit code.

    `convert(state, from_model, to_model)` brings a checkpoint to another variant (see
    depl.width_scaled); `options(group, env)` adds the script's own flags to an argparse group,
    with defaults from the environment `env` (``ctx.options``);
    `models` are the variants the script knows (the first is the default ``--model``).
    """
    sys.exit(run_worker(train, argv=sys.argv[1:], env=os.environ, convert=convert,
                        options=options, models=models, description=description))
