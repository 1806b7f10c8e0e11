#!/usr/bin/env python3
"""tests/cuda/nvml_test.py - a tenant's monitoring tools see its slice, from another process.

Starts remora-server, runs nvml_view -hold 1 as a tenant with a 1 GiB memory limit (it
allocates 48 MiB, checks its own NVML view and waits), then runs nvml_smi, a monitoring
tool of the same user that makes no CUDA call, and checks that
  - it sees the holder's process with its memory, and total = the 1 GiB limit;
  - it opened a monitoring session (logged event=monitor), which `remora list` does not
    show as a tenant;
  - once the holder has exited, it no longer lists it (within a few seconds: the
    server ends the session once it notices the exit).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import finish_server, start_server  # noqa: E402

LIMIT = 1 << 30


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    ok = True
    with tempfile.TemporaryDirectory(prefix="remora-nvml-") as tmp:
        proc, log, address = start_server(bindir, transport, tmp, [])
        run = [os.path.join(bindir, "remora"), "run", "--server", address, "--"]
        env = dict(os.environ, REMORA_GPU_MEMORY_LIMIT=str(LIMIT))
        smi = os.path.join(progs, "nvml_smi")
        holder = subprocess.Popen(run + [os.path.join(progs, "nvml_view"), "-hold", "1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        line = holder.stdout.readline()
        while line and not line.startswith("HOLDING"):
            print("nvml_view: " + line.rstrip())
            line = holder.stdout.readline()
        m = re.match(r"HOLDING (\d+) (\d+)", line)
        if not m:
            holder.kill()
            print("nvml_test: nvml_view did not hold its memory:\n" + holder.communicate()[1])
            return finish_server(proc, log, False, "nvml_test")
        pid, used = m.group(1), m.group(2)
        seen = subprocess.run(run + [smi, "-expect-pid", pid, "-expect-used", used,
                                     "-expect-total", str(LIMIT)],
                              capture_output=True, text=True, timeout=120, env=env)
        print(seen.stdout + seen.stderr)
        if seen.returncode != 0:
            print("nvml_test: the monitoring tool did not see the tenant's slice")
            ok = False
        listed = subprocess.run([os.path.join(bindir, "remora"), "list", "--server", address],
                                capture_output=True, text=True, timeout=60)
        if listed.returncode != 0 or "nvml_smi" in listed.stdout:
            print("nvml_test: remora list failed or shows the monitor:\n" + listed.stdout +
                  listed.stderr)
            ok = False
        out, err = holder.communicate("go\n", timeout=300)
        if holder.returncode != 0 or "PASS" not in out:
            print("nvml_test: nvml_view failed:\n" + out + err)
            ok = False
        # The server ends an exited tenant's session on its own time (it notices the
        # exit, then frees what the tenant held): give it a few seconds.
        deadline = time.monotonic() + 10
        while True:
            after = subprocess.run(run + [smi, "-expect-absent", pid], capture_output=True,
                                   text=True, timeout=120, env=env)
            if after.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if after.returncode != 0:
            print("nvml_test: the exited tenant is still listed:\n" + after.stdout + after.stderr)
            ok = False
        log.seek(0)
        if not re.search(r"event=monitor .*tenant=\"?nvml_smi-", log.read()):
            print("nvml_test: the server log has no monitoring session")
            ok = False
        return finish_server(proc, log, ok, "nvml_test")


if __name__ == "__main__":
    sys.exit(main())
