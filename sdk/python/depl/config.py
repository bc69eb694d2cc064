"""What one run of a worker is told to do: the standalone flags, then (under the operator) the
contract's environment on top of them (docs/worker-contract.md, sections 1 and 6).

``parse_run_config(argv, env)`` is pure: it reads only its arguments, so tests never touch the
process's own command line or environment.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from . import env as envvars
from .errors import ConfigError

DEFAULT_PEER_TIMEOUT_SECONDS = 120.0
DEFAULT_PROGRESS_RETRY_SECONDS = 300
MAX_PROGRESS_RETRY_SECONDS = 7 * 24 * 3600
MAX_WORLD_SIZE = 4096


@dataclass(frozen=True)
class OperatorInfo:
    """What only the operator sets: the job, its phase and its progress endpoint."""

    job: str
    namespace: str
    phase: int
    progress_url: str
    progress_token: str
    loss_profile: dict | None = None


@dataclass
class RunConfig:
    """One rank's settings, whichever mode they came from."""

    model: str
    epochs: int
    start_epoch: int = 0
    datasets: list[str] = field(default_factory=list)
    seed: int = 1
    checkpoint_dir: str | None = None
    init_from: str | None = None
    eval_initial: bool = False
    target_loss: float | None = None  # standalone: stop at the first epoch at or below it
    nproc: int = 1  # standalone: ranks to launch on this machine
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0
    peer_timeout: float = DEFAULT_PEER_TIMEOUT_SECONDS
    progress_retry: int = DEFAULT_PROGRESS_RETRY_SECONDS  # seconds a report is retried
    threads: int = 1
    device: str = "auto"
    operator: OperatorInfo | None = None
    options: argparse.Namespace = field(default_factory=argparse.Namespace)

    @property
    def end_epoch(self) -> int:
        """The planned last epoch: the run trains epochs start_epoch + 1 .. end_epoch."""
        return self.start_epoch + self.epochs


class _Parser(argparse.ArgumentParser):
    """argparse that raises ConfigError (exit 2 with the flag's name) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(f"command line: {message}")


def _bounded_int(name: str, minimum: int, maximum: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            return envvars.parse_integer(name, value, minimum, maximum)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).split(": ", 1)[1]) from None

    return parse


def _positive_number(name: str) -> Callable[[str], float]:
    def parse(value: str) -> float:
        try:
            number = envvars.parse_number(name, value, 0.0)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).split(": ", 1)[1]) from None
        if number <= 0:
            raise argparse.ArgumentTypeError(f"want a number > 0, got '{value}'")
        return number

    return parse


OptionsHook = Callable[[Any, Mapping[str, str]], None]


def build_parser(prog: str, description: str | None, options: OptionsHook | None,
                 models: Sequence[str] | None, env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The standalone flags (docs/worker-contract.md section 6) and the script's own."""
    parser = _Parser(prog=prog, description=description)
    contract = parser.add_argument_group("worker contract (standalone; under the operator the "
                                         "environment sets these)")
    model_help = "model variant to train"
    if models:
        model_help += f": {', '.join(models)} (default {models[0]})"
    contract.add_argument("--model", default=None, help=model_help)
    contract.add_argument("--epochs", type=_bounded_int("--epochs", 0, envvars.MAX_EPOCHS),
                          default=1, help="epochs to train (default 1)")
    contract.add_argument("--start-epoch", type=_bounded_int("--start-epoch", 0, envvars.MAX_EPOCHS),
                          default=0, help="epochs already trained: numbers the epochs")
    contract.add_argument("--datasets", default="",
                          help="comma-separated dataset names (default: all the worker knows)")
    contract.add_argument("--seed", type=_bounded_int("--seed", 0, 2**63 - 1), default=None,
                          help="seed of initialisation and shuffling (default 1; env DEPL_SEED)")
    contract.add_argument("--checkpoint-dir", default=None,
                          help="resume from the checkpoint here; write one after every epoch")
    contract.add_argument("--init-from", default=None,
                          help="start from the weights of the checkpoint in this directory or "
                               "file, converted to --model; epochs numbered from --start-epoch")
    contract.add_argument("--eval-initial", action="store_true",
                          help="also report the loss before the first epoch (with --epochs 0: "
                               "only evaluate)")
    contract.add_argument("--target-loss", type=_positive_number("--target-loss"), default=None,
                          help="stop after the first epoch whose loss is at most this, as the "
                          "operator ends a job at its target")
    contract.add_argument("--nproc", type=_bounded_int("--nproc", 1, MAX_WORLD_SIZE), default=1,
                          help="run this many data-parallel ranks on this machine")
    contract.add_argument("--peer-timeout", type=_positive_number("--peer-timeout"), default=None,
                          help="seconds to wait for another rank before failing (default "
                               f"{DEFAULT_PEER_TIMEOUT_SECONDS:g}; env DEPL_PEER_TIMEOUT_SECONDS)")
    contract.add_argument("--threads", type=_bounded_int("--threads", 1, 1024), default=None,
                          help="torch threads per rank (default 1; env DEPL_THREADS)")
    contract.add_argument("--device", default=None,
                          help="cpu, cuda, cuda:N or auto (default auto: the rank's GPU when "
                               "CUDA is available; env DEPL_DEVICE)")
    if options is not None:
        options(parser.add_argument_group("this worker's options"), env)
    return parser


_CONTRACT_DESTS = {"model", "epochs", "start_epoch", "datasets", "seed", "checkpoint_dir",
                   "init_from", "eval_initial", "target_loss", "nproc", "peer_timeout", "threads", "device"}


def _check_model(name: str, where: str, models: Sequence[str] | None) -> str:
    if models and name not in models:
        raise ConfigError(f"{where}: '{name}' is not a model of this worker "
                          f"(known: {', '.join(models)})")
    return name


def _distributed_from_env(config: RunConfig, env: Mapping[str, str], operator: bool) -> None:
    """WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT (torch.distributed's names)."""
    config.world_size = envvars.integer(env, "WORLD_SIZE", 1, 1, MAX_WORLD_SIZE)
    rank = env.get("RANK")
    if rank:
        config.rank = envvars.parse_integer("RANK", rank, 0, config.world_size - 1)
    elif config.world_size > 1:
        raise ConfigError("RANK is not set; with WORLD_SIZE > 1 every worker needs its rank")
    config.local_rank = envvars.integer(env, "LOCAL_RANK", 0, 0, MAX_WORLD_SIZE - 1)
    if config.world_size > 1:
        what = "rank 0's address when WORLD_SIZE > 1" if operator else None
        addr = env.get("MASTER_ADDR")
        if not addr:
            raise ConfigError("MASTER_ADDR is not set; "
                              + (f"the operator sets it to {what}" if operator
                                 else "with WORLD_SIZE > 1 every rank needs rank 0's address"))
        config.master_addr = addr
        port = env.get("MASTER_PORT")
        if not port:
            raise ConfigError("MASTER_PORT is not set; "
                              + ("the operator sets it to rank 0's port when WORLD_SIZE > 1"
                                 if operator else "with WORLD_SIZE > 1 every rank needs rank 0's port"))
        config.master_port = envvars.parse_integer("MASTER_PORT", port, 1, 65535)


def _apply_operator_environment(config: RunConfig, env: Mapping[str, str],
                                models: Sequence[str] | None) -> None:
    job = envvars.required(env, "DEPL_JOB", "the DependableTrainingJob's name")
    namespace = envvars.required(env, "DEPL_NAMESPACE", "the job's namespace")
    phase = envvars.parse_integer(
        "DEPL_PHASE", envvars.required(env, "DEPL_PHASE", "the plan phase's index"), 0,
        envvars.MAX_EPOCHS)
    config.model = _check_model(
        envvars.required(env, "DEPL_MODEL", "the name of this phase's model variant"),
        "DEPL_MODEL", models)
    config.epochs = envvars.parse_integer(
        "DEPL_EPOCHS", envvars.required(env, "DEPL_EPOCHS", "the number of epochs of this phase"),
        0, envvars.MAX_EPOCHS)
    config.start_epoch = envvars.parse_integer(
        "DEPL_START_EPOCH",
        envvars.required(env, "DEPL_START_EPOCH", "the epochs trained before this phase"), 0,
        envvars.MAX_EPOCHS)
    config.datasets = envvars.names(
        envvars.required(env, "DEPL_DATASETS", "the comma-separated datasets of the plan"))
    if not config.datasets:
        raise ConfigError("DEPL_DATASETS: names no dataset")
    config.checkpoint_dir = envvars.required(env, "DEPL_CHECKPOINT_DIR",
                                             "the job's checkpoint directory")
    url = envvars.required(env, "DEPL_PROGRESS_URL", "the controller's progress endpoint")
    if not (url.startswith("http://") or url.startswith("https://")):
        raise ConfigError(f"DEPL_PROGRESS_URL: want http://host[:port]/path, got '{url}'")
    token = envvars.required(env, "DEPL_PROGRESS_TOKEN", "the job's token (from its Secret)")
    profile = envvars.json_object(env, "DEPL_LOSS_PROFILE", "the loss profile the plan assumed")
    config.operator = OperatorInfo(job, namespace, phase, url, token, profile)
    config.progress_retry = _progress_retry(env)
    if config.target_loss is not None:
        raise ConfigError("--target-loss: the operator ends the job at spec.target.loss; drop "
                          "--target-loss when DEPL_JOB is set")
    if config.nproc != 1:
        raise ConfigError("--nproc: the operator starts one pod per rank; drop --nproc when "
                          "DEPL_JOB is set")
    _distributed_from_env(config, env, operator=True)


def parse_run_config(argv: Sequence[str], env: Mapping[str, str], *, prog: str = "worker",
                     description: str | None = None,
                     options: OptionsHook | None = None,
                     models: Sequence[str] | None = None) -> RunConfig:
    """Flags first; when DEPL_JOB is set the operator's contract overrides them.

    ``options(group, env)`` adds the script's own flags to an argparse group, their defaults
    read from `env` (they land in ``RunConfig.options``); ``models``, when
    given, are the variants the worker knows (the first is the default ``--model``).
    Raises ConfigError naming the flag or variable; ``--help`` exits through argparse.
    """
    parser = build_parser(prog, description, options, models, env)
    parsed = parser.parse_args(list(argv))
    model = parsed.model
    if model is None:
        if not models and not env.get("DEPL_JOB"):  # under the operator DEPL_MODEL names it
            raise ConfigError("--model: name the model variant to train")
        model = models[0] if models else ""
    config = RunConfig(model=_check_model(model, "--model", models), epochs=parsed.epochs,
                       start_epoch=parsed.start_epoch, datasets=envvars.names(parsed.datasets),
                       seed=(parsed.seed if parsed.seed is not None else
                             envvars.integer(env, "DEPL_SEED", 1, 0, 2**63 - 1)),
                       checkpoint_dir=parsed.checkpoint_dir,
                       init_from=parsed.init_from, eval_initial=parsed.eval_initial,
                       target_loss=parsed.target_loss, nproc=parsed.nproc)
    config.options = argparse.Namespace(
        **{k: v for k, v in vars(parsed).items() if k not in _CONTRACT_DESTS})
    config.peer_timeout = (parsed.peer_timeout if parsed.peer_timeout is not None else
                           envvars.number(env, "DEPL_PEER_TIMEOUT_SECONDS",
                                          DEFAULT_PEER_TIMEOUT_SECONDS, 0.001))
    config.threads = (parsed.threads if parsed.threads is not None else
                      envvars.integer(env, "DEPL_THREADS", 1, 1, 1024))
    device = parsed.device if parsed.device is not None else envvars.text(env, "DEPL_DEVICE", "auto")
    config.device = _check_device(device, "--device" if parsed.device is not None else "DEPL_DEVICE")
    if env.get("DEPL_JOB"):
        _apply_operator_environment(config, env, models)
    else:
        _distributed_from_env(config, env, operator=False)
        if config.nproc > 1 and config.world_size > 1:
            raise ConfigError(f"--nproc: WORLD_SIZE={config.world_size} is set already (a "
                              "launcher such as torchrun started this rank); drop one of them")
    return config


def _progress_retry(env: Mapping[str, str]) -> int:
    """DEPL_PROGRESS_RETRY_SECONDS: whole seconds in [0, 604800], as every worker reads it."""
    value = env.get("DEPL_PROGRESS_RETRY_SECONDS", "")
    if not value:
        return DEFAULT_PROGRESS_RETRY_SECONDS
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_PROGRESS_RETRY_SECONDS:
        raise ConfigError(f"DEPL_PROGRESS_RETRY_SECONDS: want whole seconds in "
                          f"[0, {MAX_PROGRESS_RETRY_SECONDS}], got '{value}'")
    return int(value)


def _check_device(value: str, where: str) -> str:
    if value in ("auto", "cpu", "cuda"):
        return value
    if value.startswith("cuda:") and value[5:].isdigit():
        return value
    raise ConfigError(f"{where}: want cpu, cuda, cuda:N or auto, got '{value}'")
