"""Where a capture's chunks go: host memory, or a GPU (through host memory, or GPUDirect
with the reorder kernels)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .gpu import HostToGpu, parse_device


@dataclass(frozen=True)
class Delivery:
    """device="cpu" hands on host chunks; "cuda:N" copies each into a ring of GPU chunks
    (`gpu_chunks` of them, 0: as many as the host pool); gpudirect=True instead writes
    the NIC emulation's frames into GPU memory and places them with the reorder kernels,
    `gpu_options` their launch options (defaults in gpu.GPUDIRECT_DEFAULTS)."""

    device: str = "cpu"
    gpudirect: bool = False
    gpu_chunks: int = 0
    gpu_options: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        parse_device(self.device)
        if self.gpudirect and self.device == "cpu":
            raise ValueError("gpudirect=True needs device='cuda:N', got device='cpu'")
        if self.gpu_options is not None and not self.gpudirect:
            raise ValueError("gpu_options are the GPUDirect kernels' options (gpudirect=True)")
        if self.gpu_chunks < 0:
            raise ValueError(f"gpu_chunks must be >= 0, got {self.gpu_chunks!r}")

    @property
    def to_gpu(self) -> bool:
        return self.device != "cpu"

    def deliver(self, host: Any) -> Any:
        """`host` (the engine's capture into host chunks) as this delivery hands it on."""
        if not self.to_gpu:
            return host
        return HostToGpu(host, self.device, self.gpu_chunks)
