"""The ibv backend where no RDMA NIC exists: rdma-core is loaded at run time, so the
package imports and every other backend works without it, and asking for backend="ibv"
fails with an error that names the cause and the fix."""

from __future__ import annotations

import errno
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import casper400g_rx as rx
from casper400g_rx import _core

ROOT = Path(__file__).resolve().parents[2]
lib_loads = _core.ibv_compiled() and _core.ibv_load_error() == ""
no_devices = pytest.mark.skipif(
    not lib_loads or bool(lib_loads and _core.ibv_devices()),
    reason="needs rdma-core loadable and no RDMA device (the state of the test machines)",
)


def run_python(code: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


OTHER_BACKENDS_WORK = """
    import json, numpy as np
    import casper400g_rx as rx
    res = globals().setdefault("res", {})
    try:
        rx.Capture(rx.IbvSource("10.0.0.2:10000", interface="lo"))
    except Exception as e:
        res["ibv"] = [type(e).__name__, isinstance(e, RuntimeError), str(e)]
    cap = rx.Capture(rx.MemSource(count=256), chunking=rx.Chunking(packets_per_chunk=64))
    with cap:
        n = sum(1 for c in cap.chunks(timeout=5) if c.present.all())
    res["mem_chunks"] = n
    cap = rx.Capture(rx.EmulatedNic(count=256, split=True, depth=32),
                     chunking=rx.Chunking(packets_per_chunk=64))
    with cap:
        ok = all(np.array_equal(c.data, rx.example_chunk(c.chunk_id, 64))
                 for c in cap.chunks(timeout=5))
    res["emulated"] = [ok, cap.stats.packets, cap.stats.in_place]
    import time
    cap = rx.Capture(rx.UdpSource("127.0.0.1:0"),
                     chunking=rx.Chunking(packets_per_chunk=64, first_chunk=0))
    with cap:
        rx.Sender(port=cap.port, count=64).run()
        deadline = time.monotonic() + 5
        while cap.stats.received < 64 and time.monotonic() < deadline:
            time.sleep(0.01)
        cap.stop()
        res["udp"] = sum(int(c.n_present) for c in cap.chunks(timeout=5))
    print(json.dumps(res))
"""


def test_no_link_time_dependency_on_rdma_core_or_cuda() -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("binutils nm not installed")
    so = _core.__file__
    out = subprocess.run([nm, "-D", "--undefined-only", so], capture_output=True, text=True)
    undefined = out.stdout.split()
    assert not [s for s in undefined if s.startswith(("ibv_", "mlx5", "cu", "_ibv"))]


def test_without_the_runtime_library_ibv_fails_cleanly_and_the_rest_works() -> None:
    res = run_python(OTHER_BACKENDS_WORK, env={"CASPER400G_RX_LIBIBVERBS": "libnot-there.so.1"})
    name, is_runtime_error, text = res["ibv"]
    if _core.ibv_compiled():
        assert name == "IbvUnavailableError" and is_runtime_error
        assert "rdma-core is not installed or not loadable (libnot-there.so.1" in text
        assert "apt-get install rdma-core ibverbs-providers" in text
    else:
        assert "libibverbs-dev" in text
    assert res["mem_chunks"] == 4
    assert res["emulated"] == [True, 256, 256]
    assert res["udp"] == 64


@no_devices
def test_interface_without_rdma_device_is_named() -> None:
    with pytest.raises(OSError, match="interface lo has no RDMA device") as e:
        rx.Capture(rx.IbvSource(bind="10.0.0.2:10000", interface="lo"))
    assert e.value.errno == errno.ENODEV


@no_devices
def test_no_rdma_device_at_all() -> None:
    with pytest.raises(OSError, match="no RDMA device found") as e:
        # The RDMA device named explicitly (as the options allow), on a host without any.
        opts = _core.IbvOptions(interface="lo", ip="10.0.0.2", device="mlx5_0", port=10000)
        _core.Capture.ibv(_core.Format(), _core.EngineConfig(), opts)
    assert e.value.errno == errno.ENODEV
    assert "modprobe mlx5_ib" in str(e.value)


@no_devices
def test_missing_cap_net_raw_says_how_to_grant_it() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to run a process without capabilities")
    code = """
        import json
        from casper400g_rx import _core
        opts = _core.IbvOptions(interface="lo", ip="10.0.0.2", device="mlx5_0", port=10000)
        try:
            _core.Capture.ibv(_core.Format(), _core.EngineConfig(), opts)
        except OSError as e:
            print(json.dumps([type(e).__name__, str(e)]))
    """
    out = subprocess.run(
        [
            setpriv,
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            sys.executable,
            "-c",
            textwrap.dedent(code),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    if out.returncode != 0 and ("Permission denied" in out.stderr or "No module" in out.stderr):
        pytest.skip("the unprivileged user cannot read this checkout or its environment")
    assert out.returncode == 0, out.stderr
    name, text = json.loads(out.stdout.strip().splitlines()[-1])
    assert name == "PermissionError"
    assert "needs CAP_NET_RAW" in text and "setcap cap_net_raw,cap_ipc_lock+ep" in text


def test_the_error_class_is_exported() -> None:
    assert rx.IbvUnavailableError is _core.IbvUnavailableError
    assert issubclass(rx.IbvUnavailableError, RuntimeError)


def test_ibv_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="needs the stream's UDP port in bind="):
        rx.Capture(rx.IbvSource(bind="10.0.0.2:0", interface="eth9"))
    with pytest.raises(ValueError, match="not loopback"):
        rx.Capture(rx.IbvSource(bind="127.0.0.1:10000"))
    with pytest.raises(ValueError, match="names no address: give interface="):
        rx.Capture(rx.IbvSource(bind="0.0.0.0:10000"))


def test_build_with_the_ibv_code_compiled_out(tmp_path: Path) -> None:
    """The extension built with CASPER400G_RX_IBV=OFF (as without libibverbs-dev)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake not on PATH")
    import pybind11

    build = tmp_path / "build"
    # Debug (-O0) compiles in about half the time of the optimised build.
    configure = [
        cmake,
        "-S",
        str(ROOT / "receiver"),
        "-B",
        str(build),
        "-DCASPER400G_RX_IBV=OFF",
        "-DCMAKE_BUILD_TYPE=Debug",
        f"-DPython_EXECUTABLE={sys.executable}",
        f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
    ]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    logs = []
    for cmd in (configure, [cmake, "--build", str(build), "--target", "_core", "-j", "2"]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
        logs.append(out.stdout)
    assert "casper400g_rx: ibv backend compiled out" in logs[0]
    (so,) = glob.glob(str(build / "_core*.so"))
    code = f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("casper400g_rx._core", {so!r})
        core = importlib.util.module_from_spec(spec)
        sys.modules["casper400g_rx._core"] = core
        spec.loader.exec_module(core)
        import casper400g_rx as rx
        assert rx.Format is core.Format  # the package runs on the module built here
        res = {{"compiled": core.ibv_compiled(), "why": core.ibv_load_error()}}
        try:
            core._flow_rule_bytes(b"123456", "10.0.0.2", 1)
        except core.IbvUnavailableError as e:
            res["flow"] = str(e)
        res["cqe"] = core._parse_cqe(bytes(63) + b"\\x20")["opcode"]
        {textwrap.indent(textwrap.dedent(OTHER_BACKENDS_WORK), "        ").strip()}
    """
    res = run_python(code)
    assert res["compiled"] is False
    assert "libibverbs-dev" in res["why"] and "not compiled into this build" in res["why"]
    assert "not compiled into this build" in res["flow"]
    assert res["cqe"] == 2
    assert "not compiled into this build" in res["ibv"][2] and res["ibv"][1]
    assert res["mem_chunks"] == 4 and res["emulated"] == [True, 256, 256] and res["udp"] == 64


@no_devices
def test_interface_from_ip_and_mtu_check_in_a_network_namespace() -> None:
    # A veth port with an address in a private network namespace stands in for the NIC's
    # interface: the capture finds it from the IP, then checks its MTU against the format.
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a private network namespace")
    code = """
        import json, subprocess
        from casper400g_rx import _core
        def sh(*a):
            subprocess.run(a, check=True, capture_output=True)
        sh("ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        sh("ip", "link", "set", "v0", "mtu", "1500", "up")
        sh("ip", "addr", "add", "10.9.9.9/24", "dev", "v0")
        res = {}
        def attempt(key, payload, **kw):
            opts = _core.IbvOptions(ip="10.9.9.9", port=10000, **kw)
            try:
                _core.Capture.ibv(_core.Format(payload_size=payload), _core.EngineConfig(), opts)
            except Exception as e:
                res[key] = [type(e).__name__, str(e)]
        attempt("lookup", 8192)
        attempt("mtu", 8192, device="mlx5_0")
        attempt("fits", 1024, device="mlx5_0")
        print(json.dumps(res))
    """
    # A mount namespace too, so that a fresh sysfs shows the namespace's interfaces.
    script = f"mount -t sysfs sysfs /sys && exec {sys.executable} -c '{textwrap.dedent(code)}'"
    out = subprocess.run(
        [unshare, "-n", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0 and "veth" in out.stderr:
        pytest.skip("no veth support in this kernel")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["lookup"] == ["OSError", res["lookup"][1]]
    assert "interface v0 has no RDMA device" in res["lookup"][1]
    name, text = res["mtu"]
    assert name == "ValueError"
    assert "MTU 1500 of v0 is smaller than the 8220-byte IP packets" in text
    assert "ip link set dev v0 mtu 9000" in text
    assert res["fits"][0] == "OSError" and "no RDMA device found" in res["fits"][1]
