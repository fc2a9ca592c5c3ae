"""The spectrometer (casper400g_rx.spectrometer) on captured chunks: power against a
direct DFT (an explicit matrix of complex exponentials, not an FFT), lost packets as
zeros and counted, spectra aligned in the stream with timestamps from the sequence
numbers, HDF5 and NumPy output read back; the GPU path against the CPU path on the same
chunks (needs CUDA and CuPy). examples/spectrometer.py runs end to end on the CPU."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from conftest import need_tool

import casper400g_rx as rx
from casper400g_rx import gpu
from casper400g_rx.example_stream import example_payloads
from casper400g_rx.spectrometer import (
    Spectrometer,
    SpectrometerConfig,
    SpectrumWriter,
    run,
)

ROOT = Path(__file__).resolve().parents[2]
NFFT = 64
SPP = 100  # complex samples per packet: 1000 per 10-packet chunk, 15 frames and 40 left
PPC = 10
CPS = 3  # chunks per spectrum
PAYLOAD = 8 + 2 * SPP


def samples(n_packets: int, rng: np.random.Generator) -> npt.NDArray[np.complex128]:
    """A tone at bin 5 plus noise, as int8 I/Q values: (n_packets, SPP) complex."""
    n = np.arange(n_packets * SPP)
    tone = 50 * np.exp(2j * np.pi * 5 * n / NFFT)
    noise = rng.integers(-20, 21, size=(2, n.size))
    iq = np.clip(np.round(tone.real) + noise[0], -128, 127) + 1j * np.clip(
        np.round(tone.imag) + noise[1], -128, 127
    )
    return iq.reshape(n_packets, SPP)


def packets(iq: npt.NDArray[np.complex128], seqs: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Payloads: the big-endian sequence number, then I, Q as int8 per sample."""
    rows = []
    for seq in np.asarray(seqs):
        body = np.empty(2 * SPP, np.int8)
        body[0::2], body[1::2] = iq[seq].real, iq[seq].imag
        rows.append(np.frombuffer(struct.pack(">Q", int(seq)) + body.tobytes(), np.uint8))
    return np.stack(rows)


def dft_power(iq: npt.NDArray[np.complex128], chunk_ids: list[int]) -> npt.NDArray[np.float64]:
    """|DFT|^2 summed over the whole frames of each chunk, by the definition."""
    k = np.arange(NFFT)
    w = np.exp(-2j * np.pi * np.outer(k, k) / NFFT)
    total = np.zeros(NFFT)
    for c in chunk_ids:
        run_ = iq[c * PPC : (c + 1) * PPC].reshape(-1)
        frames = run_[: run_.size // NFFT * NFFT].reshape(-1, NFFT)
        total += (np.abs(frames @ w.T) ** 2).sum(axis=0)
    return total


def capture(rows: npt.NDArray[np.uint8]) -> rx.Capture:
    return rx.Capture(
        rx.MemSource(packets=rows),
        fmt=rx.Format(payload_size=PAYLOAD),
        chunking=rx.Chunking(packets_per_chunk=PPC),
    )


def config(**kw: float) -> SpectrometerConfig:
    return SpectrometerConfig(nfft=NFFT, chunks_per_spectrum=CPS, **kw)  # type: ignore[arg-type]


def test_power_equals_the_dft_and_lost_packets_count_as_zeros() -> None:
    rng = np.random.default_rng(7)
    n = PPC * CPS * 3  # three whole spectra
    iq = samples(n, rng)
    lost = {3, 17, 18, 55}  # in spectra 0, 0, 0 and 1
    seqs = [s for s in range(n) if s not in lost]
    spec = Spectrometer(config(sample_rate_hz=2e6, sync_time=1000.0))
    spectra = run(capture(packets(iq, seqs)), spec)
    assert [s.index for s in spectra] == [0, 1, 2]
    zeroed = iq.copy()
    zeroed[sorted(lost)] = 0
    for s in spectra:
        chunks = list(range(s.index * CPS, (s.index + 1) * CPS))
        want = dft_power(zeroed, chunks)
        np.testing.assert_allclose(s.power, want, rtol=2e-5, atol=1e-6 * want.max())
        assert s.frames == CPS * (PPC * SPP // NFFT) == 45
        assert s.expected == CPS * PPC
        assert s.packets == CPS * PPC - sum(1 for p in lost if p // (CPS * PPC) == s.index)
        # Timestamps from the packets' sequence numbers.
        assert s.first_seq == s.index * CPS * PPC
        assert s.first_sample == s.first_seq * SPP
        assert s.time == pytest.approx(1000.0 + s.first_sample / 2e6)
    assert [s.packets for s in spectra] == [27, 29, 30]
    # The tone's bin holds the peak.
    assert int(np.argmax(spectra[2].power)) == 5


def test_spectra_stay_aligned_when_the_stream_starts_mid_spectrum() -> None:
    rng = np.random.default_rng(1)
    n = PPC * CPS * 2
    iq = samples(n, rng)
    seqs = list(range(2 * PPC, n))  # from chunk 2: the first spectrum has one chunk
    spectra = run(capture(packets(iq, seqs)), Spectrometer(config()))
    assert [(s.index, s.first_seq, s.expected) for s in spectra] == [
        (0, 0, PPC),
        (1, CPS * PPC, CPS * PPC),
    ]
    assert spectra[0].time is None
    np.testing.assert_allclose(spectra[0].power, dft_power(iq, [2]), rtol=2e-5)


def test_spectra_written_to_hdf5_and_numpy_read_back(tmp_path: Path) -> None:
    try:
        import h5py
    except ImportError:
        need_tool("h5py is not installed (pip install -e '.[hdf5]')")

    rng = np.random.default_rng(3)
    n = PPC * CPS * 2
    rows = packets(samples(n, rng), range(n))
    for name in ("s.h5", "s.npz"):
        spec = Spectrometer(config(sample_rate_hz=1e6))
        with SpectrumWriter(tmp_path / name, spec) as out:
            spectra = run(capture(rows), spec, out)
        assert out.written == 2
        if name.endswith(".h5"):
            with h5py.File(tmp_path / name) as f:
                got = {k: f[k][()] for k in f}
                assert f.attrs["nfft"] == NFFT and f.attrs["chunks_per_spectrum"] == CPS
        else:
            with np.load(tmp_path / name) as f:
                got = {k: f[k] for k in f.files}
        np.testing.assert_array_equal(got["power"], np.stack([s.power for s in spectra]))
        np.testing.assert_array_equal(got["first_seq"], [0, CPS * PPC])
        np.testing.assert_array_equal(got["time"], [s.time for s in spectra])
        np.testing.assert_array_equal(got["packets"], [CPS * PPC, CPS * PPC])


def test_bad_settings_and_misuse_are_named() -> None:
    with pytest.raises(ValueError, match="nfft must be a power of two >= 2, got 100"):
        SpectrometerConfig(nfft=100)
    with pytest.raises(ValueError, match="chunks_per_spectrum must be >= 1, got 0"):
        SpectrometerConfig(chunks_per_spectrum=0)
    with pytest.raises(ValueError, match="sample_rate_hz must be > 0, got -1"):
        SpectrometerConfig(sample_rate_hz=-1)
    with pytest.raises(ValueError, match="payload_size 13 less header_bytes 8 must be"):
        SpectrometerConfig().samples_per_packet(13)
    spec = Spectrometer(config())
    with pytest.raises(RuntimeError, match="prepare"):
        spec.seconds_per_chunk()
    with pytest.raises(ValueError, match="holds 100 samples, less than one 128-point frame"):
        Spectrometer(SpectrometerConfig(nfft=128)).prepare(1, PAYLOAD)
    with pytest.raises(
        ValueError, match=re.escape("spectra go to .h5, .hdf5 or .npz files, got 'x.txt'")
    ):
        SpectrumWriter("x.txt", spec)
    with pytest.raises(ValueError, match="device must be"):
        Spectrometer(config(), "gpu")
    rows = packets(samples(PPC, np.random.default_rng(0)), range(PPC))
    cap = capture(rows)
    with cap:
        chunk = next(iter(cap.chunks(timeout=5)))
        with pytest.raises(RuntimeError, match="prepare"):
            spec.add(chunk)
        spec.prepare(2 * PPC, PAYLOAD)
        assert spec.seconds_per_chunk(reps=2) > 0
        with pytest.raises(ValueError, match=r"chunk shape \(10, 208\) is not the prepared one"):
            spec.add(chunk)
        chunk.release()


CUDA_OK, CUDA_WHY = gpu.cuda_status()


@pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
def test_gpu_spectra_equal_the_cpu_ones() -> None:
    pytest.importorskip("cupy", reason="cupy is not installed")
    rng = np.random.default_rng(11)
    n = PPC * CPS * 3
    iq = samples(n, rng)
    rows = packets(iq, [s for s in range(n) if s % 13])
    cpu = run(capture(rows), Spectrometer(config()))
    cap = rx.Capture(
        rx.MemSource(packets=rows),
        fmt=rx.Format(payload_size=PAYLOAD),
        chunking=rx.Chunking(packets_per_chunk=PPC),
        delivery=rx.Delivery(device="cuda:0"),
    )
    spec = Spectrometer(config(), "cuda:0")
    on_gpu = run(cap, spec)
    assert [s.index for s in on_gpu] == [s.index for s in cpu]
    for g, c in zip(on_gpu, cpu, strict=True):
        assert (g.packets, g.frames, g.first_seq) == (c.packets, c.frames, c.first_seq)
        np.testing.assert_allclose(g.power, c.power, rtol=1e-4, atol=1e-6 * c.power.max())


def test_the_example_runs_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "spectra.npz"
    ppc, cps = 1024, 4
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "spectrometer.py"),
            "--device",
            "cpu",
            "--rate",
            "0.5",
            "--seconds",
            "1",
            "--nfft",
            "4096",
            "--chunks-per-spectrum",
            str(cps),
            "--sample-rate",
            "1e9",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "prepared (kernels, FFT plan) in" in text
    assert "placement:" in text  # the capture's choices, printed
    with np.load(out) as f:
        power, first_seq, packets_, frames = f["power"], f["first_seq"], f["packets"], f["frames"]
        times = f["time"]
    # 1 s at 0.5 Gb/s of 8192-B packets: 7629 packets, spectrum 0 whole, 1 partial.
    assert power.shape[1] == 4096 and len(power) == 2
    assert packets_[0] == cps * ppc
    np.testing.assert_array_equal(first_seq, np.arange(len(power)) * cps * ppc)
    spp = (8192 - 8) // 2
    np.testing.assert_allclose(times, first_seq * spp / 1e9)
    # Parseval per spectrum against the example stream's payloads (NumPy formula): the
    # power summed over bins is nfft x the energy of the samples in whole frames.
    for i in range(len(power)):
        seqs = np.arange(first_seq[i], first_seq[i] + cps * ppc)
        rows = example_payloads(seqs)[:, 8:].view(np.int8).astype(np.float64)
        per_chunk = rows.reshape(cps, ppc * spp, 2)
        n_frames = ppc * spp // 4096
        used = per_chunk[:, : n_frames * 4096]
        energy = (used**2).sum()
        if packets_[i] == cps * ppc:
            assert frames[i] == cps * n_frames
            np.testing.assert_allclose(power[i].sum(), 4096 * energy, rtol=1e-4)


def test_the_notebooks_spectrometer_cell_finds_the_generators_tone() -> None:
    """examples/capture_to_gpu.ipynb's spectrometer cell, run on the packets the example
    design's generator sends (verification/tone_model.py, its golden model) with some
    lost, as the notebook runs it after a capture."""
    import json

    from casper400g_dev.twin import chain
    from verification import tone_model

    nb = json.loads((ROOT / "examples" / "capture_to_gpu.ipynb").read_text())
    (cell,) = [
        "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "code" and "Spectrometer(" in "".join(c["source"])
    ]
    cfg = chain.StreamConfig(packets_per_chunk=512, chunks=4)
    assert cfg.tone is not None
    rows = tone_model.expected_payloads(cfg.tone, np.arange(cfg.count), cfg.size)
    present = np.ones(cfg.count, bool)
    present[[5, 700, 701, 2047]] = False
    scope = {"rx": rx, "np": np, "N": chain.FFT_SIZE, "rows": rows, "present": present}
    scope.update(cfg=cfg, device="cpu")
    exec(compile(cell, "capture_to_gpu.ipynb", "exec"), scope)
    spectra = scope["spectra"]
    assert [s.packets for s in spectra] == [1021, 1023]
    assert [s.first_sample for s in spectra] == [0, 1024 * tone_model.samples_per_packet(8192)]
    assert scope["peak"] == pytest.approx(cfg.tone.frequency, abs=1 / chain.FFT_SIZE)
