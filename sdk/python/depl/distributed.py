"""torch.distributed for one rank: the rendezvous from the contract's WORLD_SIZE, RANK,
MASTER_ADDR and MASTER_PORT (NCCL when every rank has a GPU of its own, gloo otherwise), the
small broadcasts the SDK needs, and telling a dead peer apart from other failures.

Rank 0 hosts the rendezvous store. Every rank bumps a heartbeat counter in it from a background
thread and leaves a note there when it fails, so that when a collective fails (a peer's sockets
closed) or times out (``peer_timeout``, plus ``decision_wait`` under the operator, where the
other ranks wait for rank 0's report to be taken), the survivors can say which rank is gone.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from typing import Any

from .errors import PeerLost, WorkerError

log = logging.getLogger("depl")

MIN_RENDEZVOUS_SECONDS = 120.0


def device_identity(device: Any) -> str:
    """What tells two ranks' devices apart: "cpu", or "cuda:" with the host and the GPU's UUID
    (its index where torch gives no UUID; two processes that see different GPUs as the same
    index then count as sharing one, which only costs speed)."""
    if device.type != "cuda":
        return "cpu"
    import socket

    import torch

    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"cuda:{socket.gethostname()}:{uuid if uuid is not None else device.index}"


def choose_backend(identities: list[str]) -> str:
    """NCCL when every rank computes on a GPU of its own; gloo on CPU, with CPU and GPU ranks
    mixed, and where ranks share a GPU (NCCL refuses two ranks on one device; gloo reduces CUDA
    tensors through the host). Every rank decides from the same list, so all agree."""
    gpus = [i for i in identities if i.startswith("cuda:")]
    return "nccl" if len(gpus) == len(identities) == len(set(gpus)) else "gloo"


def _heartbeat_key(rank: int) -> str:
    return f"depl/heartbeat/{rank}"


def _exit_key(rank: int) -> str:
    return f"depl/exit/{rank}"


def _exit_flag(rank: int) -> str:
    # A counter next to the note: the store of torch 1.13 has no way to ask whether a key exists.
    return f"depl/exited/{rank}"


def heartbeat_interval(peer_timeout: float) -> float:
    """Often enough to tell a dead peer well within the peer timeout, rarely enough to cost nothing."""
    return min(2.0, max(0.1, peer_timeout / 20.0))


class _Heartbeat:
    """Bumps this rank's counter in the store every `interval` seconds over its own connection."""

    def __init__(self, host: str, port: int, rank: int, interval: float) -> None:
        self._host, self._port, self._rank, self._interval = host, port, rank, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="depl-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import torch.distributed as dist

        try:
            store = dist.TCPStore(self._host, self._port, None, False,
                                  datetime.timedelta(seconds=max(5.0, 4 * self._interval)),
                                  wait_for_workers=False)
            key = _heartbeat_key(self._rank)
            while True:
                store.add(key, 1)
                if self._stop.wait(self._interval):
                    return
        except Exception as e:  # rank 0 is gone; the main thread finds out at its next collective
            if not self._stop.is_set():
                log.debug("event=heartbeat_stopped error=%r", str(e))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class Distributed:
    """The process group of one rank, set up in the constructor and torn down by close()."""

    def __init__(self, *, world_size: int, rank: int, master_addr: str, master_port: int,
                 peer_timeout: float, device: Any, store: Any = None,
                 decision_wait: float = 0.0) -> None:
        import torch.distributed as dist

        self.world_size = world_size
        self.rank = rank
        self.master_addr = master_addr
        self.peer_timeout = peer_timeout
        self.backend = "gloo"
        self._device = device
        self._heartbeat: _Heartbeat | None = None
        self._interval = heartbeat_interval(peer_timeout)
        if world_size == 1:
            self.store = dist.HashStore()
            self.master_port = 0
        elif store is not None:
            self.store = store
            self.master_port = store.port
        else:
            rendezvous = max(peer_timeout, MIN_RENDEZVOUS_SECONDS)
            try:
                # Rank 0 listens and waits for every rank; the others retry connecting until then.
                self.store = dist.TCPStore(master_addr, master_port, world_size, rank == 0,
                                           datetime.timedelta(seconds=rendezvous),
                                           wait_for_workers=True)
            except Exception as e:
                role = (f"listening on port {master_port} and waiting for {world_size - 1} other "
                        f"rank(s)" if rank == 0 else f"reaching rank 0 at {master_addr}:{master_port}")
                raise WorkerError(f"rendezvous failed after up to {rendezvous:g} s {role}: {e}") from None
            self.master_port = master_port
        identity = device_identity(device)
        if world_size > 1:
            self.store.set(f"depl/device/{rank}", identity)
            self._join(max(peer_timeout, MIN_RENDEZVOUS_SECONDS))
            identities = [self.store.get(f"depl/device/{r}").decode() for r in range(world_size)]
        else:
            identities = [identity]
        self.backend = choose_backend(identities)
        if device.type == "cuda":
            import torch

            torch.cuda.set_device(device)
        try:
            timeout = datetime.timedelta(seconds=peer_timeout + decision_wait)
            dist.init_process_group(self.backend, store=self.store, rank=rank,
                                    world_size=world_size, timeout=timeout)
        except Exception as e:
            raise WorkerError(f"torch.distributed ({self.backend}, rank {rank} of {world_size}) "
                              f"did not start: {e}") from None
        if world_size > 1:
            self.store.set_timeout(datetime.timedelta(seconds=peer_timeout))
            self._heartbeat = _Heartbeat(master_addr, self.master_port, rank, self._interval)
        log.info("event=process_group backend=%s rank=%d world_size=%d master=%s:%d",
                 self.backend, rank, world_size, master_addr, self.master_port)

    def _join(self, timeout: float) -> None:
        """Waits until every rank has reached the store, however long its start-up took, so
        that the process group (whose timeout is the short peer timeout) starts at once."""
        self.store.set(f"depl/joined/{self.rank}", "1")
        self.store.add("depl/joined", 1)
        try:
            self.store.wait([f"depl/joined/{r}" for r in range(self.world_size)],
                            datetime.timedelta(seconds=timeout))
        except Exception:
            joined = self.store.add("depl/joined", 0)
            raise WorkerError(f"rendezvous: only {joined} of {self.world_size} ranks joined within "
                              f"{timeout:g} s (at {self.master_addr}:{self.master_port})") from None

    def broadcast_object(self, value: Any) -> Any:
        """Rank 0's `value` on every rank."""
        if self.world_size == 1:
            return value
        import torch.distributed as dist

        holder = [value]
        if self.backend == "nccl":
            dist.broadcast_object_list(holder, src=0, device=self._device)
        else:
            dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def broadcast_code(self, value: int) -> int:
        """Rank 0's small integer on every rank: one broadcast of one tensor element."""
        if self.world_size == 1:
            return value
        import torch
        import torch.distributed as dist

        holder = torch.tensor([value], dtype=torch.int64, device=self._device)
        dist.broadcast(holder, src=0)
        return int(holder.item())

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when `flag` is true on some rank: one all-reduce (max) of one
        element. Collective."""
        if self.world_size == 1:
            return flag
        import torch
        import torch.distributed as dist

        holder = torch.tensor([1 if flag else 0], dtype=torch.int64, device=self._device)
        dist.all_reduce(holder, op=dist.ReduceOp.MAX)
        return bool(holder.item())

    def note_failure(self, message: str) -> None:
        """Leaves `message` in the store for the other ranks' diagnosis (best effort)."""
        if self.world_size == 1:
            return
        try:
            if self.rank == 0:
                store = self.store
            else:
                import torch.distributed as dist

                store = dist.TCPStore(self.master_addr, self.master_port, None, False,
                                      datetime.timedelta(seconds=2), wait_for_workers=False)
            store.set(_exit_key(self.rank), message)
            store.add(_exit_flag(self.rank), 1)
        except Exception:
            pass

    def lost_peer(self) -> PeerLost | None:
        """After a failed collective: the rank that is gone, or None when every peer is alive."""
        if self.world_size == 1:
            return None
        import torch.distributed as dist

        peers = [r for r in range(self.world_size) if r != self.rank]
        try:
            if self.rank == 0:
                store = self.store
            else:
                store = dist.TCPStore(self.master_addr, self.master_port, None, False,
                                      datetime.timedelta(seconds=max(2.0, 2 * self._interval)),
                                      wait_for_workers=False)
            for r in peers:
                if store.add(_exit_flag(r), 0) > 0:
                    note = store.get(_exit_key(r)).decode("utf-8", "replace")
                    return PeerLost(f"rank {r} failed: {note}", r)
            before = {r: store.add(_heartbeat_key(r), 0) for r in peers}
            time.sleep(3 * self._interval)  # every live peer bumps its counter in that time
            after = {r: store.add(_heartbeat_key(r), 0) for r in peers}
        except Exception as e:
            return PeerLost(f"rank 0 is gone: its rendezvous store at {self.master_addr}:"
                            f"{self.master_port} does not answer ({e})", 0)
        silent = [r for r in peers if after[r] == before[r]]
        if not silent:
            return None
        return PeerLost(f"rank {silent[0]} is gone: no heartbeat for {3 * self._interval:.1f} s "
                        "(killed, out of memory, or its node failed)", silent[0])

    def close(self) -> None:
        import torch.distributed as dist

        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if dist.is_initialized():
            dist.destroy_process_group()
