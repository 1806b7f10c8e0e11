#!/usr/bin/env python3
"""tests/soak/drain_test.py - SIGTERM drains remora-server (one scenario per run).

  drain_test.py BINDIR CHURN_TENANT finish|grace|second shm|grpc

Starts remora-server (emulated device, its supervisor included, as deployed)
and a churn_tenant that holds device memory and pauses after its first round
until told to go on; then SIGTERM:
  finish  (grace 600 s) a new tenant is refused, saying the server is shutting
          down; the paused tenant goes on, finishes its work with correct results;
          the server exits 0 once it is gone, without ending any session.
  grace   (grace 1 s) the tenant, working without end, fails at a call after the
          grace period with an error naming the shutdown; the server frees what it
          held and exits 0.
  second  (grace 600 s) a second SIGTERM ends the drain at once: the tenant gets
          the error, the server exits 0.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cuda"))
from harness import start_server  # noqa: E402


def wait_for(what, pred, seconds=60):
    until = time.time() + seconds
    while time.time() < until:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise SystemExit(f"drain_test: timed out waiting for {what}")


def main():
    bindir, tenant, scenario, transport = sys.argv[1:5]
    grace = "1" if scenario == "grace" else "600"
    ok = True

    def check(cond, what):
        nonlocal ok
        if not cond:
            print("drain_test: " + what)
            ok = False

    with tempfile.TemporaryDirectory(prefix="remora-drain-") as tmp:
        proc, log, address = start_server(bindir, transport, tmp, ["--grace-period", grace])

        def text():
            log.seek(0)
            return log.read()

        run = [os.path.join(bindir, "remora"), "run", "--server", address, "--", tenant]
        go = os.path.join(tmp, "go")
        iters = "50" if scenario == "finish" else "0"
        worker = subprocess.Popen(run + ["-iters", iters, "-hold", go], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        first = worker.stdout.readline()  # READY: one round done, memory held
        check(first.strip() == "READY", f"the tenant did not start: {first!r}")
        sid = re.search(r"event=open session=(\d+) tenant=churn_tenant", text())
        check(sid is not None, "the server never opened the tenant's session")

        proc.send_signal(signal.SIGTERM)
        wait_for("event=draining", lambda: "event=draining" in text())

        if scenario == "finish":
            late = subprocess.run(run + ["-iters", "1"], capture_output=True, text=True,
                                  timeout=120)
            check(late.returncode != 0, "a tenant was admitted during the drain")
            check("shutting down" in late.stderr and "cudaErrorDevicesUnavailable" in late.stdout,
                  "the late tenant was not told the server is shutting down:\n"
                  + late.stdout + late.stderr)
            check(proc.poll() is None, "the server did not wait for the running tenant")
        elif scenario == "second":
            check(proc.poll() is None, "the server did not wait for the running tenant")
            proc.send_signal(signal.SIGTERM)

        open(go, "w").close()
        try:
            out, err = worker.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            worker.kill()
            out, err = worker.communicate()
        try:
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "timeout"
        check(code == 0, f"remora-server exited with {code}, not 0")
        log_text = text()

        if scenario == "finish":
            check(worker.returncode == 0 and "PASS" in out,
                  f"the running tenant did not finish its work ({worker.returncode}):\n{out}{err}")
            check("event=drained" in log_text, "the server did not log the drain's end")
            check("event=ending_sessions" not in log_text, "the drain ended a session")
        else:
            why = "grace period" if scenario == "grace" else "second signal"
            check(worker.returncode not in (0, None) and "PASS" not in out,
                  f"the tenant did not fail ({worker.returncode}):\n{out}{err}")
            check("shutting down" in err and why in err and "cudaErrorDevicesUnavailable" in out,
                  f"the tenant was not told why (the server's shutdown, {why}):\n{out}{err}")
            check(re.search(r"event=ending_sessions .*why=.*" + why, log_text) is not None,
                  "the server did not log ending the sessions for " + why)
        if sid:
            freed = re.search(rf"event=closed session={sid.group(1)} .*freed_bytes=(\d+)",
                              log_text)
            check(freed is not None and int(freed.group(1)) > 0 or scenario == "finish",
                  "the tenant's session did not free what it held")
            check(freed is not None, "the tenant's session was never closed")
        if not ok:
            print("---- tenant ----\n" + out + err + "\n---- remora-server log ----\n" + log_text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
