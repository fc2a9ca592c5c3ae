"""A spectrometer on a capture's chunks: FFT, power, integration, spectra with the
stream's timestamps -- on the GPU with CuPy (chunks delivered into GPU memory), or with
NumPy on host chunks.

Each payload is `header_bytes` (the packet counter) followed by complex int8 samples
(I, Q interleaved), the example design's tone mode. A chunk's samples are taken as one
run across its packets (packet p's samples follow packet p-1's), cut into `nfft`-point
frames (the remainder of a chunk, less than a frame, is not used); a lost packet's
samples count as zeros, and each spectrum says how many packets it had. Spectra
integrate `chunks_per_spectrum` chunks aligned in the stream (spectrum i takes chunks
i*n .. i*n+n-1), so every spectrum's first sample, and with `sample_rate_hz` its time,
come from the packets' own sequence numbers.

`prepare()` compiles the GPU kernels and makes the FFT plan for the chunk's shape: a
CuPy consumer that does that on its first chunk stalls for seconds (6-11 s measured on
an H100 host) while the capture's pool fills and the stream is lost. Call it before the
capture starts (`run` does).

```python
spec = Spectrometer(SpectrometerConfig(nfft=4096, chunks_per_spectrum=256), "cuda:0")
cap = rx.Capture(source, delivery=rx.Delivery(device="cuda:0"), rate_gbps=400)
with SpectrumWriter("spectra.h5", spec) as out:
    run(cap, spec, out)
```
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .gpu import parse_device

# Complex int8 samples of packet p, zeros where p is missing, as complex64: one pass over
# the chunk in GPU memory (index i: sample i of the chunk's run of samples).
_UNPACK = r"""
const long long p = i / spp;
const long long at = p * payload + header + 2 * (i - p * spp);
z = present[p] ? complex<float>((float)(signed char)data[at], (float)(signed char)data[at + 1])
               : complex<float>(0.0f, 0.0f);
"""


@dataclass(frozen=True)
class SpectrometerConfig:
    """nfft: points per FFT frame; chunks_per_spectrum: chunks integrated per spectrum;
    header_bytes: bytes before each payload's samples; sample_rate_hz / sync_time: the
    complex sample rate and the time of sample 0, for times in seconds (None: samples)."""

    nfft: int = 4096
    chunks_per_spectrum: int = 64
    header_bytes: int = 8
    sample_rate_hz: float | None = None
    sync_time: float = 0.0

    def __post_init__(self) -> None:
        if self.nfft < 2 or self.nfft & (self.nfft - 1):
            raise ValueError(f"nfft must be a power of two >= 2, got {self.nfft!r}")
        if self.chunks_per_spectrum < 1:
            raise ValueError(f"chunks_per_spectrum must be >= 1, got {self.chunks_per_spectrum!r}")
        if self.header_bytes < 0:
            raise ValueError(f"header_bytes must be >= 0, got {self.header_bytes!r}")
        if self.sample_rate_hz is not None and not self.sample_rate_hz > 0:
            raise ValueError(f"sample_rate_hz must be > 0, got {self.sample_rate_hz!r}")

    def samples_per_packet(self, payload_size: int) -> int:
        samples = payload_size - self.header_bytes
        if samples < 2 or samples % 2:
            raise ValueError(
                f"payload_size {payload_size} less header_bytes {self.header_bytes} must be "
                "a positive even number of bytes (complex int8 samples)"
            )
        return samples // 2


@dataclass
class Spectrum:
    """One integrated spectrum: `power` (nfft, float64: |FFT|^2 summed over `frames`
    frames, unshifted bins), its place in the stream and what it is made of."""

    index: int
    first_seq: int
    first_sample: int
    time: float | None
    frames: int
    packets: int
    expected: int
    power: npt.NDArray[np.float64] = field(repr=False)


class Spectrometer:
    """FFT + power + integration of a capture's chunks on `device` ("cpu": NumPy on host
    chunks; "cuda:N": CuPy on GPU chunks). Feed chunks to `add` in the order the
    capture gives them (ids ascending); completed spectra come back from `add` and
    `finish`. Call `prepare` with the capture's chunk shape before the capture starts."""

    def __init__(self, config: SpectrometerConfig, device: str = "cpu") -> None:
        self.config = config
        self.device = device
        ordinal = parse_device(device)
        self._gpu = ordinal is not None
        self._unpack: Any = None
        self._power: Any = None
        if self._gpu:
            import cupy

            self.xp: Any = cupy
            cupy.cuda.Device(ordinal).use()
            # Made here, compiled by NVRTC on their first call (prepare).
            self._unpack = cupy.ElementwiseKernel(
                "raw uint8 data, raw bool present, int64 payload, int64 header, int64 spp",
                "complex64 z",
                _UNPACK,
                "casper400g_unpack_iq8",
            )
            self._power = cupy.ReductionKernel(
                "complex64 x",
                "float32 y",
                "x.real() * x.real() + x.imag() * x.imag()",
                "a + b",
                "y = a",
                "0",
                "casper400g_power",
            )
        else:
            self.xp = np
        self._shape: tuple[int, int] | None = None
        self._acc: Any = None
        self._open: list[int] | None = None  # index, first_seq, frames, packets, expected
        self._z: Any = None

    # --- the per-chunk work ------------------------------------------------------------

    def prepare(self, packets_per_chunk: int, payload_size: int) -> float:
        """Compiles the kernels and makes the FFT plan for chunks of this shape by running
        them once on a chunk of zeros; returns the seconds it took."""
        t0 = time.perf_counter()
        spp = self.config.samples_per_packet(payload_size)
        if packets_per_chunk * spp < self.config.nfft:
            raise ValueError(
                f"a chunk of {packets_per_chunk} packets holds {packets_per_chunk * spp} "
                f"samples, less than one {self.config.nfft}-point frame"
            )
        self._shape = (packets_per_chunk, payload_size)
        self._z = None
        xp = self.xp
        zeros = xp.zeros(self._shape, dtype=xp.uint8)
        mask = xp.ones(packets_per_chunk, dtype=bool)
        self._acc = xp.zeros(self.config.nfft, dtype=xp.float64)
        self._acc += self._chunk_power(zeros, mask)
        self._acc[...] = 0
        self.synchronize()
        return time.perf_counter() - t0

    @property
    def prepared(self) -> tuple[int, int] | None:
        """The chunk shape (packets, payload bytes) prepared for, None before prepare."""
        return self._shape

    def seconds_per_chunk(self, reps: int = 10) -> float:
        """The time one chunk's work takes here (GPU time on a GPU, measured with events),
        averaged over `reps` chunks of zeros; after prepare. A capture at R Gb/s hands on
        R / (8 x packets x payload) chunks per second: this must stay below their period."""
        if self._shape is None:
            raise RuntimeError("prepare(packets_per_chunk, payload_size) first")
        xp = self.xp
        zeros = xp.zeros(self._shape, dtype=xp.uint8)
        mask = xp.ones(self._shape[0], dtype=bool)
        if not self._gpu:
            t0 = time.perf_counter()
            for _ in range(reps):
                self._chunk_power(zeros, mask)
            return (time.perf_counter() - t0) / reps
        start, end = xp.cuda.Event(), xp.cuda.Event()
        start.record()
        for _ in range(reps):
            self._chunk_power(zeros, mask)
        end.record()
        end.synchronize()
        return float(xp.cuda.get_elapsed_time(start, end)) / 1e3 / reps

    def synchronize(self) -> None:
        """Waits for the work queued on the GPU (nothing to wait for on the CPU)."""
        if self._gpu:
            self.xp.cuda.get_current_stream().synchronize()

    def frames_per_chunk(self) -> int:
        assert self._shape is not None, "prepare() first"
        spp = self.config.samples_per_packet(self._shape[1])
        return self._shape[0] * spp // self.config.nfft

    def _chunk_power(self, data: Any, present: Any) -> Any:
        """Summed |FFT|^2 (nfft, float32) of one chunk's frames, on its device."""
        assert self._shape is not None
        nfft = self.config.nfft
        ppc, payload = self._shape
        spp = self.config.samples_per_packet(payload)
        n = ppc * spp // nfft * nfft
        if self._gpu:
            import cupyx.scipy.fft as cufft

            # One buffer for every chunk: the work is ordered on the consumer's stream.
            if self._z is None:
                self._z = self.xp.empty(n, dtype=self.xp.complex64)
            z = self._unpack(data, present, payload, self.config.header_bytes, spp, self._z)
            spec = cufft.fft(z.reshape(-1, nfft), axis=1, overwrite_x=True)
            return self._power(spec, axis=0)
        raw = np.asarray(data)[:, self.config.header_bytes :].view(np.int8)
        iq = raw.reshape(ppc, spp, 2).astype(np.float32)
        iq[~np.asarray(present, dtype=bool)] = 0
        z = (iq[..., 0] + 1j * iq[..., 1]).astype(np.complex64).reshape(-1)[:n]
        spec = np.fft.fft(z.reshape(-1, nfft), axis=1)
        return (spec.real**2 + spec.imag**2).sum(axis=0, dtype=np.float64)

    def add(self, chunk: Any) -> list[Spectrum]:
        """Adds one chunk (GpuChunk on a GPU, Chunk on the CPU; not released here) and
        returns the spectra it completed."""
        if self._shape is None:
            raise RuntimeError("prepare(packets_per_chunk, payload_size) before the capture")
        shape = (int(chunk.packets_per_chunk), int(chunk.payload_size))
        if shape != self._shape:
            raise ValueError(f"chunk shape {shape} is not the prepared one {self._shape}")
        cid = int(chunk.chunk_id)
        index = cid // self.config.chunks_per_spectrum
        done = []
        if self._open is not None and index != self._open[0]:
            done.append(self._close())
        if self._open is None:
            first = index * self.config.chunks_per_spectrum * shape[0]
            self._open = [index, first, 0, 0, 0]
        if self._gpu:
            data = self.xp.from_dlpack(chunk)
            present = self.xp.from_dlpack(chunk.present_gpu)
        else:
            data, present = chunk.data, chunk.present
        self._acc += self._chunk_power(data, present)
        self._open[2] += self.frames_per_chunk()
        self._open[3] += int(chunk.n_present)
        self._open[4] += shape[0]
        return done

    def finish(self) -> list[Spectrum]:
        """The spectrum still integrating, if any (at the end of the stream)."""
        return [self._close()] if self._open is not None else []

    def _close(self) -> Spectrum:
        assert self._open is not None and self._shape is not None
        index, first, frames, packets, expected = self._open
        power = self._acc.get() if self._gpu else np.array(self._acc)
        self._acc[...] = 0
        self._open = None
        sample = first * self.config.samples_per_packet(self._shape[1])
        rate = self.config.sample_rate_hz
        t = self.config.sync_time + sample / rate if rate is not None else None
        return Spectrum(index, first, sample, t, frames, packets, expected, power)


class SpectrumWriter:
    """Writes spectra as they come: HDF5 (`.h5`/`.hdf5`, h5py; rows appended and flushed
    per spectrum) or NumPy (`.npz`, written on close). Datasets: power (n, nfft),
    index, first_seq, first_sample, time (NaN without a sample rate), frames, packets,
    expected."""

    FIELDS = ("index", "first_seq", "first_sample", "frames", "packets", "expected")

    def __init__(self, path: str | Path, spectrometer: Spectrometer) -> None:
        self.path = Path(path)
        self.nfft = spectrometer.config.nfft
        suffix = self.path.suffix.lower()
        if suffix not in (".h5", ".hdf5", ".npz"):
            raise ValueError(f"spectra go to .h5, .hdf5 or .npz files, got {str(path)!r}")
        self._h5: Any = None
        self._rows: list[Spectrum] = []
        self.written = 0
        if suffix != ".npz":
            import h5py

            self._h5 = h5py.File(self.path, "w")
            self._h5.attrs["nfft"] = self.nfft
            cfg = spectrometer.config
            self._h5.attrs["chunks_per_spectrum"] = cfg.chunks_per_spectrum
            self._h5.attrs["sample_rate_hz"] = cfg.sample_rate_hz or math.nan
            self._h5.create_dataset(
                "power", (0, self.nfft), maxshape=(None, self.nfft), dtype="f8", chunks=True
            )
            for name in (*self.FIELDS, "time"):
                dtype = "f8" if name == "time" else "i8"
                self._h5.create_dataset(name, (0,), maxshape=(None,), dtype=dtype, chunks=True)

    def write(self, spectra: list[Spectrum]) -> None:
        for s in spectra:
            if self._h5 is None:
                self._rows.append(s)
            else:
                n = self.written + 1
                self._h5["power"].resize((n, self.nfft))
                self._h5["power"][n - 1] = s.power
                for name in (*self.FIELDS, "time"):
                    value = getattr(s, name)
                    self._h5[name].resize((n,))
                    self._h5[name][n - 1] = math.nan if value is None else value
                self._h5.flush()
            self.written += 1

    def close(self) -> None:
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None
            return
        rows = self._rows
        arrays: dict[str, Any] = {
            name: np.array([getattr(s, name) for s in rows], dtype=np.int64) for name in self.FIELDS
        }
        arrays["time"] = np.array(
            [math.nan if s.time is None else s.time for s in rows], dtype=np.float64
        )
        arrays["power"] = np.stack([s.power for s in rows]) if rows else np.zeros((0, self.nfft))
        np.savez(self.path, **arrays)

    def __enter__(self) -> SpectrumWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chunks_released(cap: Any, timeout: float) -> Iterator[Any]:
    """`cap`'s chunks, each released once the loop body has queued its work."""
    for chunk in cap.chunks(timeout=timeout):
        try:
            yield chunk
        finally:
            chunk.release()


def run(
    cap: Any,
    spectrometer: Spectrometer,
    out: SpectrumWriter | None = None,
    timeout: float = 5.0,
    on_spectrum: Callable[[Spectrum], None] | None = None,
) -> list[Spectrum]:
    """Prepares `spectrometer` for `cap`'s chunks (unless it is), then starts the capture and takes
    every chunk until the stream ends (or `timeout` s pass without one). Spectra go to
    `out` and `on_spectrum` as they complete; all of them are returned."""
    shape = (cap.config.packets_per_chunk, cap.fmt.payload_size)
    if spectrometer.prepared != shape:
        spectrometer.prepare(*shape)
    spectra: list[Spectrum] = []

    def emit(done: list[Spectrum]) -> None:
        spectra.extend(done)
        if out is not None:
            out.write(done)
        if on_spectrum is not None:
            for s in done:
                on_spectrum(s)

    with cap:
        for chunk in chunks_released(cap, timeout):
            emit(spectrometer.add(chunk))
    emit(spectrometer.finish())
    return spectra
