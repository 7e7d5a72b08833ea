"""Multi-process data-parallel training of the GNN with ``torch.distributed`` (one process per device).

Started by ``torchrun`` (``torchrun --nproc_per_node=N -m solutions --data ... --out ...``), which
sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the rendezvous address in each process's
environment. ``solutions.solve.runner.solve`` then calls ``start`` once, and for every collection:

- each process (rank) loads only its shard of the train and valid graphs (file ``i`` goes to rank
  ``i mod N``), so memory per process falls with N;
- the model is wrapped in ``DistributedDataParallel``: every rank runs one graph per step (layout;
  tile: one batch of kernels), gradients are averaged across ranks in the backward pass, and the
  weights stay identical everywhere (rank 0's initial weights are broadcast at wrapping);
- ranks take the same number of steps per epoch (a rank with fewer graphs repeats some of its own;
  a collective call with a missing partner would wait forever), validation scores are summed over
  the shards, and stopping decisions (patience, time budget) are taken from all-reduced values, so
  every rank selects the same epoch;
- rank 0 alone saves the models, scores the valid split, predicts the test split and writes and
  validates the submission; the others wait at a barrier.

Backends: gloo on the CPU, NCCL with ``--device cuda`` (each rank then uses ``cuda:LOCAL_RANK``).
Several machines: the same command on each with torchrun's rendezvous, e.g.
``torchrun --nnodes=2 --nproc_per_node=4 --rdzv_backend=c10d --rdzv_endpoint=HOST:29400 -m solutions ...``
(docs/training-at-scale.md); every machine needs the data at the same path.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Rank 0 predicts the whole valid and test splits while the others wait: the barrier must outlast it.
TIMEOUT = timedelta(hours=int(os.environ.get("TPUGRAPHS_DIST_TIMEOUT_HOURS", "6")))


@dataclass(frozen=True)
class World:
    """This process's place among the training processes (rank 0 of 1 when not distributed)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def active(self) -> bool:
        return self.size > 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def shard(self, count: int) -> list[int]:
        """Indices of the items (of ``count``) this rank holds: ``rank, rank + size, ...``."""
        return list(range(self.rank, count, self.size))


def env_world() -> World:
    """The world torchrun describes in the environment (rank 0 of 1 without it)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    return World(int(os.environ.get("RANK", "0")), size, int(os.environ.get("LOCAL_RANK", "0")))


def current() -> World:
    """The world of the initialized process group, or rank 0 of 1."""
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def start(device: str) -> tuple[World, str]:
    """Join the process group torchrun set up: gloo on the CPU, NCCL on CUDA. Returns the world and
    the device this rank uses (``cuda`` becomes ``cuda:LOCAL_RANK``)."""
    world = env_world()
    if not world.active or dist.is_initialized():
        return current(), device
    cuda = torch.device(device).type == "cuda"
    if cuda:
        device = f"cuda:{world.local_rank}"
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group("nccl" if cuda else "gloo", timeout=TIMEOUT)
    return current(), device


def stop() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    if current().active:
        dist.barrier()


def _comm_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_sum(values: list[float]) -> list[float]:
    """Element-wise sums over the ranks (float64); the values themselves when not distributed."""
    return _all_reduce(values, dist.ReduceOp.SUM)


def all_max(values: list[float]) -> list[float]:
    """Element-wise maxima over the ranks; the values themselves when not distributed."""
    return _all_reduce(values, dist.ReduceOp.MAX)


def _all_reduce(values: list[float], op: dist.ReduceOp) -> list[float]:
    if not current().active:
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=_comm_device())
    dist.all_reduce(tensor, op=op)
    return tensor.cpu().tolist()


def data_parallel(module: torch.nn.Module, *, find_unused_parameters: bool) -> torch.nn.Module:
    """``module`` wrapped in DistributedDataParallel when distributed; ``module`` itself otherwise.

    No ``device_ids``: inputs are examples (dataclasses holding whole config stores) that the step
    moves to the device itself; DDP would otherwise try to copy them. Buffers are constants here.
    """
    if not current().active:
        return module
    ddp = torch.nn.parallel.DistributedDataParallel
    # The buffers are constants: no syncing before every forward (the keyword changed in torch 2.13).
    no_sync = ({"forward_sync_buffers": False} if "forward_sync_buffers" in inspect.signature(ddp).parameters
               else {"broadcast_buffers": False})
    return ddp(module, find_unused_parameters=find_unused_parameters, **no_sync)
