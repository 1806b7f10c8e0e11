#!/usr/bin/env python3
"""tests/cuda/reclaim_test.py - a guaranteed request is honoured by reclaiming a loan.

On one remora-server (emulated device, 16 GiB): a tenant with no request borrows
12 GiB; a tenant run with --gpu-fraction 0.5 then allocates 6 GiB, within its
request but beyond what is free. Its cudaMalloc must succeed; the borrower's next
call must fail with cudaErrorDevicesUnavailable, its stderr saying its memory was
reclaimed and for whom; the server log must name both. A third tenant with no
request asking for more than is free (10 GiB of 9.75) is refused, reclaiming
nobody (a loan may use another's unused guarantee, never more than is free).
`remora list` then shows the two tenants left, the owner with its request and use,
and `remora evict SESSION` ends the third, which is told an administrator did.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import start_server, stop_server  # noqa: E402


def hog(run, mib, flags):
    """`remora run FLAGS -- host_threads -hog MIB`: the quota as users give it."""
    return subprocess.Popen(run[0] + flags + ["--"] + run[1] + ["-hog", str(mib)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    ok = True

    def fail(why):
        nonlocal ok
        print("reclaim_test: FAIL: " + why)
        ok = False

    with tempfile.TemporaryDirectory(prefix="remora-reclaim-") as tmp:
        # The borrower takes 12 GiB of 16 with no quota: lift open mode's cap (0.5).
        proc, log, address = start_server(bindir, transport, tmp, ["--open-max-fraction", "1"])
        run = ([os.path.join(bindir, "remora"), "run", "--server", address],
               [os.path.join(progs, "host_threads")])
        tenants = []
        try:
            borrower = hog(run, 12 << 10, [])
            tenants.append(borrower)
            if "HOLDING" not in borrower.stdout.readline():
                fail("the borrower could not allocate 12 GiB")
            owner = hog(run, 6 << 10, ["--gpu-fraction", "0.5"])
            tenants.append(owner)
            line = owner.stdout.readline()
            if "HOLDING" not in line:
                fail("a guaranteed allocation was refused: " + line)
            greedy = hog(run, 10 << 10, [])  # free: 15.75 GiB usable - 6 GiB held
            tenants.append(greedy)
            line = greedy.stdout.readline()
            if "REFUSED cudaErrorMemoryAllocation" not in line:
                fail("a loan past free memory was granted: " + line)
            # remora list shows the survivors: the owner's 6 GiB within its request.
            listed = subprocess.run([os.path.join(bindir, "remora"), "list", "--server", address],
                                    capture_output=True, text=True, timeout=60)
            print(listed.stdout, end="")
            rows = [r for r in listed.stdout.splitlines() if "host_threads" in r]
            if listed.returncode != 0 or len(rows) != 2:
                fail("remora list did not show the two remaining tenants:\n" + listed.stdout +
                     listed.stderr)
            elif not any(" 6.0Gi " in r and " 7.9Gi " in r for r in rows):
                fail("remora list does not show the owner's request and use")
            # remora evict ends the refused tenant's session by its id, from the list.
            greedy_rows = [r for r in listed.stdout.splitlines()
                           if " 6.0Gi " not in r and "host_threads" in r]
            if len(greedy_rows) == 1:
                evicted = subprocess.run([os.path.join(bindir, "remora"), "evict",
                                          greedy_rows[0].split()[0], "--server", address],
                                         capture_output=True, text=True, timeout=60)
                if evicted.returncode != 0:
                    fail("remora evict failed: " + evicted.stdout + evicted.stderr)
            out, err = borrower.communicate("go\n", timeout=60)
            if "SYNC cudaErrorDevicesUnavailable" not in out:
                fail("the reclaimed borrower's next call did not fail as expected: " + out)
            if "reclaimed for host_threads" not in err:
                fail("the borrower was not told why: " + err)
            else:
                print("reclaim_test: the borrower was told: " + err.strip().splitlines()[-1])
            out, err = owner.communicate("go\n", timeout=60)
            if "SYNC cudaSuccess" not in out:
                fail("the tenant that kept its memory failed: " + out + err)
            out, err = greedy.communicate("go\n", timeout=60)
            if "SYNC cudaErrorDevicesUnavailable" not in out or "administrator" not in err:
                fail("the evicted tenant was not told: " + out + err)
            log.seek(0)
            text = log.read()
            if "event=evicted" not in text or "reclaimed for host_threads" not in text:
                fail("the server log does not name the eviction")
        finally:
            for t in tenants:
                if t.poll() is None:
                    t.kill()
            stop_server(proc)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
