#!/usr/bin/env python3
"""tests/cuda/stall_test.py - a stalled tenant holds up nobody, and dying frees it all.

Starts remora-server on the emulated device and a tenant whose host function
never returns, which then waits in cudaDeviceSynchronize forever. While it
waits, other tenants (allocating, copying, launching, freeing) must pass. Then
the stalled tenant is SIGKILLed: its session must close with its memory freed,
and a new tenant must pass.
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


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    ok = True
    with tempfile.TemporaryDirectory(prefix="remora-stall-") as tmp:
        proc, log, address = start_server(bindir, transport, tmp, [])
        run = [os.path.join(bindir, "remora"), "run", "--server", address, "--"]
        stalled = subprocess.Popen(run + [os.path.join(progs, "host_threads"), "-stall", "1"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = stalled.stdout.readline()
        if "STALLING" not in line:
            print("stall_test: the stalling tenant did not start: " + line)
            ok = False
        time.sleep(0.5)  # inside its cudaDeviceSynchronize
        for prog in ("vector_add", "matmul_tiled", "memory"):
            r = subprocess.run(run + [os.path.join(progs, prog)], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0 or "PASS" not in r.stdout:
                print(f"stall_test: {prog} beside a stalled tenant failed:\n{r.stdout}{r.stderr}")
                ok = False
        if stalled.poll() is not None:
            print("stall_test: the stalled tenant exited by itself:\n" + stalled.stdout.read())
            ok = False
        log.seek(0)
        m = re.search(r"event=open session=(\d+) tenant=host_threads", log.read())
        stalled.send_signal(signal.SIGKILL)
        stalled.wait()
        killed = time.time()
        closed = False
        while m and time.time() < killed + 10:
            log.seek(0)
            if re.search(rf"event=closed session={m.group(1)} .*freed_bytes=", log.read()):
                closed = True
                print(f"stall_test: stalled session closed {time.time() - killed:.3f} s after "
                      "SIGKILL")
                break
            time.sleep(0.01)
        if not closed:
            print("stall_test: the stalled tenant's session was never closed")
            ok = False
        r = subprocess.run(run + [os.path.join(progs, "vector_add")], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0 or "PASS" not in r.stdout:
            print("stall_test: a tenant after the kill failed:\n" + r.stdout + r.stderr)
            ok = False
        return finish_server(proc, log, ok, "stall_test")


if __name__ == "__main__":
    sys.exit(main())
