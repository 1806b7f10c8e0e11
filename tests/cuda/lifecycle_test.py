#!/usr/bin/env python3
"""tests/cuda/lifecycle_test.py - nothing outlives what it belongs to.

On the emulated device, over one transport:
  runaway   a tenant whose kernel never ends is SIGKILLed: the kernel stops (the
            emulated GPU cancels it), the session closes with its memory freed,
            and another tenant passes;
  drain     SIGTERM with --grace-period 1 while such a tenant spins: the drain
            ends at its grace period, the kernel is cancelled and the server
            exits 0 without being forced;
  forced    the same where kernels cannot be stopped (REMORA_EMU_CANCEL=off, as
            on NVIDIA's driver): the server still exits, by force, saying why;
  orphan    SIGKILL of the supervisor: its worker dies with it;
  crash     a worker killed by a signal (a crash) is restarted, saying so, and the
            next tenant passes;
  second    a second server on the same socket refuses to start, naming the
            pid of the live one;
  unload    while one tenant's kernel spins, tenants come and go: unloading what a
            tenant that left had loaded waits for the whole device (on a GPU, with
            the driver's lock held, as the emulated GPU models), so the server defers
            it until the device is idle, and every newcomer is served meanwhile.
Usage: lifecycle_test.py BINDIR PROGRAMS TRANSPORT [CASE...]
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import finish_server, start_server  # noqa: E402


def wait_for(pred, seconds):
    """Polls `pred` every 20 ms for up to `seconds`; returns its last value."""
    deadline = time.time() + seconds
    while True:
        v = pred()
        if v or time.time() > deadline:
            return v
        time.sleep(0.02)


def log_text(log):
    log.seek(0)
    return log.read()


def remora_run(bindir, address):
    """The command line prefix that runs a program as a tenant of the server at `address`."""
    return [os.path.join(bindir, "remora"), "run", "--server", address, "--"]


def tenant_passes(run, progs, who):
    """Runs vector_add as a tenant; True if it passed, else says why under `who`."""
    r = subprocess.run(run + [os.path.join(progs, "vector_add")], capture_output=True,
                       text=True, timeout=300)
    if r.returncode == 0 and "PASS" in r.stdout:
        return True
    print(f"{who} failed:\n{r.stdout}{r.stderr}")
    return False


def start_spinner(run, progs):
    """A tenant whose kernel waits for a flag nobody sets; returns it once the kernel runs."""
    p = subprocess.Popen(run + [os.path.join(progs, "host_threads"), "-spin", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "SPINNING" not in line:
        p.kill()
        raise RuntimeError("the spinning tenant did not start: " + line + p.stderr.read())
    return p


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: it runs nothing and holds nothing.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def case_runaway(bindir, progs, transport, tmp):
    proc, log, address = start_server(bindir, transport, tmp, [])
    run = remora_run(bindir, address)
    ok = True
    spinner = start_spinner(run, progs)
    spinner.send_signal(signal.SIGKILL)
    spinner.wait()
    text = wait_for(lambda: (lambda t: t if "event=closed" in t else None)(log_text(log)), 30)
    if not text:
        print("runaway: the killed tenant's session never closed (its kernel still runs?)")
        ok = False
    elif not re.search(r"kernel \S*WaitForFlag\S* cancelled", text):
        print("runaway: the server's log does not say the kernel was cancelled")
        ok = False
    ok = tenant_passes(run, progs, "runaway: a tenant after the cancelled one") and ok
    return finish_server(proc, log, ok, "lifecycle_test runaway")


def case_drain(bindir, progs, transport, tmp, cancel):
    env = None if cancel else {"REMORA_EMU_CANCEL": "off"}
    proc, log, address = start_server(bindir, transport, tmp, ["--grace-period", "1"], env=env)
    run = remora_run(bindir, address)
    ok = True
    spinner = start_spinner(run, progs)
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "still running after 60 s"
    spinner.wait(timeout=30)
    text = log_text(log)
    who = "drain" if cancel else "forced"
    if code != 0:
        print(f"{who}: remora-server exited with {code}")
        ok = False
    if "the grace period of 1 s ran out" not in text:
        print(f"{who}: the drain did not end at its grace period")
        ok = False
    forced = "event=exit_forced" in text
    if cancel and (forced or "cancelled" not in text):
        print("drain: the spinning kernel was not cancelled (forced exit: %s)" % forced)
        ok = False
    if not cancel and not forced:
        print("forced: with kernels that cannot be stopped the exit was not forced")
        ok = False
    if not ok:
        print("---- remora-server log ----\n" + text)
    return 0 if ok else 1


def worker_pid(log, who):
    """The pid of the worker the supervisor logged starting first; None (saying so) if none."""
    m = wait_for(lambda: re.search(r"event=worker_started pid=(\d+)", log_text(log)), 10)
    if not m:
        print(f"{who}: no worker_started line in the supervisor's log")
    return int(m.group(1)) if m else None


def case_orphan(bindir, progs, transport, tmp):
    proc, log, address = start_server(bindir, transport, tmp, [])
    ok = True
    worker = worker_pid(log, "orphan")
    if worker is None:
        return finish_server(proc, log, False, "lifecycle_test orphan")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if wait_for(lambda: not alive(worker), 10) is False:
        print(f"orphan: worker {worker} still runs 10 s after its supervisor was killed")
        os.kill(worker, signal.SIGKILL)
        ok = False
    if not ok:
        print("---- remora-server log ----\n" + log_text(log))
    return 0 if ok else 1


def case_crash(bindir, progs, transport, tmp):
    proc, log, address = start_server(bindir, transport, tmp, [])
    ok = True
    worker = worker_pid(log, "crash")
    if worker is None:
        return finish_server(proc, log, False, "lifecycle_test crash")
    os.kill(worker, signal.SIGSEGV)
    text = wait_for(lambda: (lambda t: t if t.count("event=ready") >= 2 else None)(log_text(log)),
                    30)
    if not text or "event=worker_ended" not in text or "the worker died of a signal" not in text:
        print("crash: the supervisor did not restart its crashed worker, saying why")
        ok = False
    if proc.poll() is not None:
        print(f"crash: remora-server exited with {proc.returncode}")
        ok = False
    ok = ok and tenant_passes(remora_run(bindir, address), progs, "crash: the next tenant")
    return finish_server(proc, log, ok, "lifecycle_test crash")


def case_second(bindir, progs, transport, tmp):
    proc, log, address = start_server(bindir, "shm", tmp, [])
    ok = True
    sock = address[len("unix:"):]
    r = subprocess.run([os.path.join(bindir, "remora-server"), "--device=emu", "--listen",
                        "unix:" + sock], capture_output=True, text=True, timeout=60)
    said = r.stdout + r.stderr
    if r.returncode == 0 or f"pid {proc.pid}" not in said:
        print(f"second: a second server on {sock} exited {r.returncode} saying:\n{said}")
        ok = False
    ok = tenant_passes(remora_run(bindir, address), progs,
                       "second: a tenant of the first server") and ok
    return finish_server(proc, log, ok, "lifecycle_test second")


def case_unload(bindir, progs, transport, tmp):
    proc, log, address = start_server(bindir, transport, tmp, [])
    run = remora_run(bindir, address)
    ok = True
    spinner = start_spinner(run, progs)
    try:
        for i in range(3):
            t0 = time.time()
            passed = tenant_passes(run, progs, f"unload: tenant {i} beside a spinning kernel")
            took = time.time() - t0
            if not passed:
                ok = False
                break
            print(f"unload: tenant {i} served in {took:.2f} s")
    finally:
        spinner.send_signal(signal.SIGKILL)
        spinner.wait()
    text = wait_for(lambda: (lambda t: t if t.count("event=closed") >= 4 else None)(log_text(log)),
                    30)
    if not text:
        print("unload: the sessions did not all close once the spinning tenant was gone")
        ok = False
    return finish_server(proc, log, ok, "lifecycle_test unload")


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    cases = sys.argv[4:] or ["runaway", "drain", "forced", "orphan", "crash", "second",
                             "unload"]
    failed = 0
    for case in cases:
        with tempfile.TemporaryDirectory(prefix=f"remora-{case}-") as tmp:
            if case == "runaway":
                rc = case_runaway(bindir, progs, transport, tmp)
            elif case in ("drain", "forced"):
                rc = case_drain(bindir, progs, transport, tmp, cancel=case == "drain")
            elif case == "orphan":
                rc = case_orphan(bindir, progs, transport, tmp)
            elif case == "crash":
                rc = case_crash(bindir, progs, transport, tmp)
            elif case == "unload":
                rc = case_unload(bindir, progs, transport, tmp)
            else:
                rc = case_second(bindir, progs, transport, tmp)
        print(f"lifecycle_test {case}: {'PASS' if rc == 0 else 'FAIL'}")
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
