#!/usr/bin/python3
"""Benchmarks of the Python SDK and the PyTorch reference job (docs/benchmarks.md, "Python SDK").

    /usr/bin/python3 bench/sdk_bench.py overhead   # ctx.report and ctx.save/load per call
    /usr/bin/python3 bench/sdk_bench.py epochs [--device D]  # CNN epoch time per variant, 1 and 2 ranks
    /usr/bin/python3 bench/sdk_bench.py allreduce  # one gradient all-reduce of the full CNN, 2 ranks

`overhead` runs workers in operator mode against a progress endpoint on loopback (a Python
http.server in this process that answers `continue`, then `checkpointAndExit`): one rank in this
process, then two ranks as processes (the decision broadcast through torch.distributed too), and
times every ctx.report; then ctx.save and ctx.load of the example's full CNN with its optimiser.
`epochs` runs examples/pytorch/train.py on a 10,000-image shard with 1000 validation images for
each variant, with one rank and with --nproc 2, and prints the medians of its trainSeconds and
trainCpuSeconds (one torch thread per rank); `--device` (cpu, cuda, auto; default cpu) is
train.py's, and on CUDA the line names the card and the process group's backend (NCCL when
each rank has a GPU of its own, gloo when two ranks share one). `allreduce` times 300 all-reduces (gloo, loopback,
two processes of one torch thread) of a float32 tensor the size of the full CNN's parameters, as
DistributedDataParallel reduces its gradients every step, and prints the bandwidth that the
model's ring all-reduce (docs/depl-model.md section 2: 2 (n - 1) / n x bytes per step) gives.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sdk" / "python"))
sys.path.insert(0, str(REPO / "examples" / "pytorch"))
REPORTS = 300


def endpoint(last_epoch: int) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            action = "checkpointAndExit" if body["epoch"] >= last_epoch else "continue"
            data = json.dumps({"action": action}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1/namespaces/b/jobs/b/progress"


def operator_env(url: str, checkpoints: str) -> dict[str, str]:
    return {"DEPL_JOB": "b", "DEPL_NAMESPACE": "b", "DEPL_PHASE": "0", "DEPL_MODEL": "full",
            "DEPL_EPOCHS": str(REPORTS), "DEPL_START_EPOCH": "0", "DEPL_DATASETS": "x",
            "DEPL_CHECKPOINT_DIR": checkpoints, "DEPL_PROGRESS_URL": url,
            "DEPL_PROGRESS_TOKEN": "t", "DEPL_LOG_LEVEL": "WARNING"}


def report_only(ctx) -> None:
    """A training function that only reports: each ctx.report call is timed."""
    times = []
    for epoch in ctx.epochs():
        started = time.perf_counter()
        ctx.report(epoch, 1.0 / epoch)
        times.append(time.perf_counter() - started)
    if ctx.is_main:
        print(json.dumps({"rank0ReportMs": [round(t * 1e3, 4) for t in times]}), file=sys.stderr)


def summary(label: str, seconds: list[float]) -> None:
    ms = sorted(s * 1e3 for s in seconds)
    print(f"{label}: median {statistics.median(ms):.3f} ms, p90 {ms[int(0.9 * len(ms))]:.3f} ms, "
          f"min {ms[0]:.3f} ms over {len(ms)}")


def overhead() -> None:
    import depl

    server, url = endpoint(REPORTS)
    with tempfile.TemporaryDirectory() as work:
        env = operator_env(url, os.path.join(work, "c1"))
        import io
        import contextlib

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = depl.run_worker(report_only, argv=[], env=env, prog="bench")
        assert code == 0, err.getvalue()
        times = next(json.loads(l) for l in err.getvalue().splitlines() if "rank0ReportMs" in l)
        summary("ctx.report, 1 rank (POST to the endpoint + answer)", [t / 1e3 for t in times["rank0ReportMs"]])

        # Two ranks: the same, plus the decision's broadcast to rank 1.
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ranks = []
        for rank in (0, 1):
            child_env = dict(os.environ, **operator_env(url, os.path.join(work, "c2")),
                             WORLD_SIZE="2", RANK=str(rank), MASTER_ADDR="127.0.0.1",
                             MASTER_PORT=str(port))
            ranks.append(subprocess.Popen([sys.executable, __file__, "report-rank"], env=child_env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        outputs = [p.communicate(timeout=600)[1] for p in ranks]
        assert all(p.returncode == 0 for p in ranks), outputs
        times = next(json.loads(l) for l in outputs[0].splitlines() if "rank0ReportMs" in l)
        summary("ctx.report, 2 ranks (rank 0: POST + answer + broadcast)", [t / 1e3 for t in times["rank0ReportMs"]])
    server.shutdown()

    # Checkpoints of the example's full CNN and its optimiser.
    import torch
    from depl.checkpoint import read_checkpoint, write_checkpoint
    from model import build

    model = build("full")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.rand(8, 1, 28, 28)
    torch.nn.functional.cross_entropy(model(x), torch.zeros(8, dtype=torch.long)).backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "checkpoint.pt")
        saves, loads = [], []
        for epoch in range(50):
            started = time.perf_counter()
            size = write_checkpoint(path, "full", epoch, state)
            saves.append(time.perf_counter() - started)
            started = time.perf_counter()
            read_checkpoint(path)
            loads.append(time.perf_counter() - started)
        summary(f"checkpoint write (full CNN + momentum, {size} bytes, with fsync)", saves)
        summary("checkpoint read (digest checked)", loads)


def report_rank() -> None:
    import depl

    sys.exit(depl.run_worker(report_only, argv=[], env=os.environ, prog="bench"))


def epochs(device: str) -> None:
    script = REPO / "examples" / "pytorch" / "train.py"
    shard = json.dumps({"shards": [{"name": "bench", "samples": 10000}]})
    if device != "cpu":
        import torch

        if torch.cuda.is_available():
            print(f"device {device}: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
                  f"{torch.cuda.device_count()} GPU(s)")
    print("variant  ranks  train s/epoch (wall, median)  train CPU s/epoch (rank 0)  loss after 3  backend")
    for variant in ("full", "half", "quarter", "eighth"):
        for nproc in (1, 2):
            done = subprocess.run([sys.executable, str(script), "--model", variant, "--epochs", "3",
                                   "--shards", shard, "--datasets", "bench", "--test-samples", "1000",
                                   "--nproc", str(nproc), "--device", device],
                                  capture_output=True, text=True, timeout=1200,
                                  env=dict(os.environ, DEPL_LOG_LEVEL="INFO"))
            if done.returncode != 0:
                sys.exit(done.stderr)
            lines = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
            wall = statistics.median(l["trainSeconds"] for l in lines)
            cpu = statistics.median(l["trainCpuSeconds"] for l in lines)
            backend = next((w.split("=", 1)[1] for l in done.stderr.splitlines()
                            if "event=process_group" in l for w in l.split() if w.startswith("backend=")),
                           "-")
            print(f"{variant:8} {nproc:5}  {wall:28.3f}  {cpu:26.3f}  {lines[-1]['loss']:12.4f}  {backend}",
                  flush=True)


ALLREDUCE_BYTES = 333864  # the full CNN's parameters (examples/pytorch/job.yaml, parameterBytes)
ALLREDUCE_CALLS = 300


def allreduce_rank(rank: int, port: int, results) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    tensor = torch.ones(ALLREDUCE_BYTES // 4)
    for _ in range(20):  # connections and buffers set up
        dist.all_reduce(tensor)
    seconds = []
    for _ in range(ALLREDUCE_CALLS):
        dist.barrier()
        began = time.perf_counter()
        dist.all_reduce(tensor)
        seconds.append(time.perf_counter() - began)
    if rank == 0:
        results.put(seconds)
    dist.destroy_process_group()


def allreduce() -> None:
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = mp.get_context("spawn")
    results = context.Queue()
    ranks = [context.Process(target=allreduce_rank, args=(r, port, results)) for r in range(2)]
    for r in ranks:
        r.start()
    seconds = results.get(timeout=600)
    for r in ranks:
        r.join()
        if r.exitcode != 0:
            sys.exit(f"allreduce: a rank exited {r.exitcode}")
    summary(f"all-reduce of {ALLREDUCE_BYTES} bytes, 2 ranks", seconds)
    median = statistics.median(seconds)
    bandwidth = 2 * (2 - 1) / 2 * ALLREDUCE_BYTES / median
    print(f"ring all-reduce bandwidth at the median: {bandwidth / 1e6:.0f} MB/s")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "overhead":
        overhead()
    elif what == "report-rank":
        report_rank()
    elif what == "epochs":
        device = "cpu"
        if len(sys.argv) > 2:
            if len(sys.argv) != 4 or sys.argv[2] != "--device":
                sys.exit("usage: sdk_bench.py epochs [--device cpu|cuda|auto]")
            device = sys.argv[3]
        epochs(device)
    elif what == "allreduce":
        allreduce()
    else:
        sys.exit(__doc__)
