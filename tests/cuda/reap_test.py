#!/usr/bin/env python3
"""tests/cuda/reap_test.py - a tenant killed mid-run is reaped; the others keep working.

Starts remora-server on the emulated device, runs a long vector_add as the
victim and a matmul as the survivor at the same time, SIGKILLs the victim once
its session holds device memory, and checks that the server logs the victim's
session closed with its memory freed, and that the survivor still passes.
(tests/server checks the one-second bound at the wire level; this checks the
same path with a real CUDA program, allowing for a kernel in flight.)
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


def held_bytes(bindir, address, sid):
    """The MEM-USED of session `sid` in `remora list`, in bytes (0 if not listed)."""
    out = subprocess.run([os.path.join(bindir, "remora"), "list", "--server", address],
                         capture_output=True, text=True, timeout=60).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 7 and f[0] == sid:
            m = re.fullmatch(r"([\d.]+)(Mi|Gi)", f[7])
            if m:
                return float(m.group(1)) * (1 << (20 if m.group(2) == "Mi" else 30))
    return 0


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="remora-reap-") as tmp:
        proc, log, address = start_server(bindir, transport, tmp, [])
        run = [os.path.join(bindir, "remora"), "run", "--server", address, "--"]
        victim = subprocess.Popen(run + [os.path.join(progs, "vector_add"), "-n", "16000000"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        survivor = subprocess.Popen(run + [os.path.join(progs, "matmul_tiled")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ok = True
        # Wait until the victim's session has memory (its first copy went through).
        deadline = time.time() + 60
        sid = None
        while time.time() < deadline and sid is None:
            log.seek(0)
            m = re.search(r"event=open session=(\d+) tenant=vector_add", log.read())
            if m:
                sid = m.group(1)
            time.sleep(0.02)
        # Killed once its session holds device memory (past its allocations, inside its copies
        # or kernels): a fixed sleep raced the program's end once the emulated GPU got faster.
        while time.time() < deadline and sid is not None and victim.poll() is None:
            if held_bytes(bindir, address, sid) > 0:
                break
            time.sleep(0.01)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed = time.time()
        closed = None
        while time.time() < killed + 30:
            log.seek(0)
            m = re.search(rf"event=closed session={sid} .*freed_bytes=(\d+)", log.read())
            if m:
                closed = (time.time() - killed, int(m.group(1)))
                break
            time.sleep(0.01)
        if sid is None or closed is None:
            print("reap_test: the victim's session was never closed")
            ok = False
        else:
            print(f"reap_test: victim session {sid} closed {closed[0]:.3f} s after SIGKILL, "
                  f"freed {closed[1]} bytes")
            if closed[1] == 0:
                print("reap_test: the victim held no memory when killed; nothing was checked")
                ok = False
        out, err = survivor.communicate(timeout=600)
        sys.stdout.write(out)
        if survivor.returncode != 0 or "PASS" not in out:
            print(f"reap_test: the survivor failed ({survivor.returncode}): {err}")
            ok = False
        return finish_server(proc, log, ok, "reap_test")


if __name__ == "__main__":
    sys.exit(main())
