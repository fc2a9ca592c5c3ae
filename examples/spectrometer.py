"""A spectrometer on a 400GbE stream: capture -> GPU FFT -> integrate -> spectra on disk.

The capture is opened with its defaults for the stream's rate (`rate_gbps`: lanes,
chunks, pools, lane CPUs, the consumer's CPUs, staging memory's NUMA node; printed
below), the spectrometer (casper400g_rx.spectrometer, the consumer the GPU benchmarks
use) compiles its kernels and makes its FFT plan before the capture starts, and every
chunk is unpacked (int8 I/Q after the 8-byte packet counter), Fourier transformed,
squared and summed into spectra of `--chunks-per-spectrum` chunks, written with the
stream's timestamps (from the packets' sequence numbers) to HDF5 (.h5) or NumPy (.npz).

    # the example design's stream on a NIC (ibv: header-data split), into cuda:0
    python examples/spectrometer.py --bind 10.0.0.2:7148 --interface enp1s0f0np0 \
        --rate 400 --seconds 60 --sample-rate 3.2e9 --out spectra.h5
    # the same over UDP sockets
    python examples/spectrometer.py --bind 10.0.0.2:7148 --rate 40 --out spectra.h5
    # no NIC: the emulated NIC sends the example stream at --rate for --seconds
    python examples/spectrometer.py --rate 400 --seconds 10 --out spectra.h5

`--device auto` takes cuda:0 when CUDA and CuPy are usable, else the CPU (NumPy).
"""

from __future__ import annotations

import argparse
import time

import casper400g_rx as rx
from casper400g_rx import gpu
from casper400g_rx.spectrometer import (
    Spectrometer,
    SpectrometerConfig,
    Spectrum,
    SpectrumWriter,
    run,
)

PAYLOAD = 8192


def pick_device(asked: str) -> str:
    if asked != "auto":
        return asked
    usable, why = gpu.cuda_status()
    try:
        import cupy  # noqa: F401
    except ImportError:
        usable, why = False, "CuPy is not installed"
    print(f"device: {'cuda:0' if usable else 'cpu'} ({why})")
    return "cuda:0" if usable else "cpu"


def source(args: argparse.Namespace) -> rx.Source:
    if args.bind and args.interface:
        return rx.IbvSource(bind=args.bind, interface=args.interface)
    if args.bind:
        return rx.UdpSource(bind=args.bind)
    count = int(args.rate * 1e9 * args.seconds / (PAYLOAD * 8))
    return rx.EmulatedNic(count=count, nic_rate_gbps=args.rate, split=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bind", default="", help="IPv4:port of the stream (none: emulated NIC)")
    p.add_argument("--interface", default="", help="NIC for the ibv source (with --bind)")
    p.add_argument("--rate", type=float, default=400.0, help="the stream's rate, Gb/s")
    p.add_argument("--seconds", type=float, default=10.0, help="emulated stream's length")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda:N")
    p.add_argument("--nfft", type=int, default=4096)
    p.add_argument("--chunks-per-spectrum", type=int, default=256)
    p.add_argument("--sample-rate", type=float, default=None, help="complex samples/s")
    p.add_argument("--sync-time", type=float, default=0.0, help="UNIX time of sample 0")
    p.add_argument("--timeout", type=float, default=5.0, help="stop after this long idle")
    p.add_argument("--out", default="spectra.h5", help=".h5/.hdf5 (h5py) or .npz")
    args = p.parse_args(argv)

    device = pick_device(args.device)
    cap = rx.Capture(source(args), delivery=rx.Delivery(device=device), rate_gbps=args.rate)
    print(f"capture sized for {args.rate:g} Gb/s:\n{cap.sizing}")
    spec = Spectrometer(
        SpectrometerConfig(
            nfft=args.nfft,
            chunks_per_spectrum=args.chunks_per_spectrum,
            sample_rate_hz=args.sample_rate,
            sync_time=args.sync_time,
        ),
        device,
    )
    # Kernels and FFT plan now, not on the first chunk (seconds of the stream lost).
    took = spec.prepare(cap.config.packets_per_chunk, cap.fmt.payload_size)
    print(f"prepared (kernels, FFT plan) in {took:.2f} s")

    def show(s: Spectrum) -> None:
        print(
            f"  spectrum {s.index}: first packet {s.first_seq}, {s.frames} frames, "
            f"{s.packets}/{s.expected} packets"
        )

    t0 = time.monotonic()
    with SpectrumWriter(args.out, spec) as out:
        run(cap, spec, out, timeout=args.timeout, on_spectrum=show)
    s = cap.stats
    print(
        f"{out.written} spectra to {args.out} in {time.monotonic() - t0:.1f} s; "
        f"{s.packets} packets placed at {s.gbps:.1f} Gb/s, lost {s.lost} "
        f"(NIC drops {s.get('nic_drops', 0)}, no free chunk {s.no_free_chunk}, late {s.late}, "
        f"discarded {s.discarded})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
