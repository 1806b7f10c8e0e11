#!/usr/bin/env python3
"""tests/cuda/share_test.py - GPU time is shared by compute share, and a limit caps it.

Runs host_threads -busy (batches of equal, CPU-checked kernels, two batches in flight)
as tenants of one remora-server on the emulated device and compares how many kernels
each got through in the same wall time:
  * two tenants at once, `remora run --gpu-compute` 0.2 and 0.6: the second must run about
    three times as many kernels (a FIFO order gives 1:1);
  * one tenant alone with --gpu-compute-limit 0.3, then alone without a limit:
    the capped run must get well under half as many (an idle GPU is no excuse);
  * a tenants-file tenant with --gpu-compute-limit 0.2 running two processes at once,
    beside another tenant's one process under the same limit: together they must run
    about as many kernels as that one (the limit caps them together; were each given
    the whole of it, they would run twice as many);
  * a tenants-file tenant whose busy process has two idle siblings (connected, holding
    memory) beside another tenant of the same request: the busy process gets its
    tenant's whole share, about 1:1 (were the share split among the processes, 1:3).
Tolerances are wide: the emulator runs two tenants' kernels side by side on the
host's cores and they slow each other, so a kernel count is a loose stand-in for the
device time the server charges (1:2.5 to 1:4.4 seen here for the 1:3 shares).
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import start_server, stop_server  # noqa: E402

ITERS = "100000"  # about 3 ms per kernel: longer than the fair queue's 2 ms in-flight bound


def kernels(result, who):
    m = re.search(r"KERNELS (\d+)", result.stdout)
    if result.returncode != 0 or "PASS" not in result.stdout or not m:
        print(f"share_test: {who} failed:\n{result.stdout}{result.stderr}")
        return None
    return int(m.group(1))


def busy(run, seconds, seed, flags):
    """`remora run FLAGS -- host_threads -busy SECONDS`: the quota as users give it."""
    cmd = run[0] + flags + ["--"] + run[1] + ["-busy", str(seconds), "-iters", ITERS,
                                              "-seed", str(seed)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p):
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def two_processes_share_a_limit(bindir, progs, tmp):
    """A configured tenant's two processes share its compute limit of 0.2: together
    they run about what another tenant's one process under the same limit runs beside
    them (twice that if each process had the whole limit)."""
    sub = os.path.join(tmp, "tenants")
    os.mkdir(sub)
    book = os.path.join(sub, "tenants.yaml")
    with open(book, "w") as f:
        f.write("tenants:\n"
                "  - {name: alice, token: tok-a, gpu-compute: 0.2, gpu-compute-limit: 0.2}\n"
                "  - {name: carol, token: tok-c, gpu-compute: 0.2, gpu-compute-limit: 0.2}\n")
    proc, _, address = start_server(bindir, "shm", sub, ["--tenants", book])
    run = [os.path.join(bindir, "remora"), "run", "--server", address, "--token"]
    prog = [os.path.join(progs, "host_threads")]
    try:
        both = [busy(([*run, "tok-a"], prog), 4, 5 + i, []) for i in range(2)]
        carol = busy(([*run, "tok-c"], prog), 4, 8, [])
        got = [kernels(finish(p), f"alice's process {i + 1}") for i, p in enumerate(both)]
        one = kernels(finish(carol), "carol")
    finally:
        stop_server(proc)
    if not one or not all(got):
        return False
    total = sum(got) / one
    print(f"share_test: two processes of a tenant limited to 0.2 ran {got[0]} + {got[1]} "
          f"kernels, another tenant's one process under the same limit {one}: {total:.2f} "
          "(about 1; 2 if each process had the limit)")
    if not 0.5 <= total <= 1.5:
        print("share_test: FAIL: a tenant's processes together should hold to its 0.2 limit")
        return False
    return True


def idle_siblings_leave_their_part(bindir, progs, tmp):
    """alice's one busy process of three against bob's one, requests 0.3 each."""
    sub = os.path.join(tmp, "siblings")
    os.mkdir(sub)
    book = os.path.join(sub, "tenants.yaml")
    with open(book, "w") as f:
        f.write("tenants:\n"
                "  - {name: alice, token: tok-a, gpu-compute: 0.3}\n"
                "  - {name: bob, token: tok-b, gpu-compute: 0.3}\n")
    proc, _, address = start_server(bindir, "shm", sub, ["--tenants", book])
    run = [os.path.join(bindir, "remora"), "run", "--server", address, "--token"]
    prog = os.path.join(progs, "host_threads")
    idle = []
    try:
        for _ in range(2):
            idle.append(subprocess.Popen(run + ["tok-a", "--", prog, "-hog", "1"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
            if "HOLDING" not in idle[-1].stdout.readline():
                print("share_test: an idle process of alice's could not start")
                return False
        a = busy(([*run, "tok-a"], [prog]), 4, 6, [])
        b = busy(([*run, "tok-b"], [prog]), 4, 7, [])
        got_a, got_b = kernels(finish(a), "alice's busy process"), kernels(finish(b), "bob")
        for p in idle:
            p.communicate("go\n", timeout=60)
    finally:
        for p in idle:
            p.kill()
        stop_server(proc)
    if not got_a or not got_b:
        return False
    print(f"share_test: alice's busy process (two idle siblings) ran {got_a} kernels, bob "
          f"{got_b}: 1:{got_b / got_a:.2f} (about 1:1)")
    if not 0.55 <= got_b / got_a <= 1.8:
        print("share_test: FAIL: a busy process should get its tenant's whole share")
        return False
    return True


def main():
    bindir, progs = sys.argv[1], sys.argv[2]
    ok = True
    with tempfile.TemporaryDirectory(prefix="remora-share-") as tmp:
        # Shares up to 0.6 are declared here: lift open mode's default cap of 0.5.
        proc, _, address = start_server(bindir, "shm", tmp, ["--open-max-fraction", "1"])
        run = ([os.path.join(bindir, "remora"), "run", "--server", address],
               [os.path.join(progs, "host_threads")])
        try:
            small = busy(run, 6, 1, ["--gpu-compute", "0.2"])
            large = busy(run, 6, 2, ["--gpu-compute", "0.6"])
            a, b = kernels(finish(small), "the 0.2 tenant"), kernels(finish(large), "the 0.6 tenant")
            if a and b:
                print(f"share_test: compute 0.2 vs 0.6 ran {a} vs {b} kernels: 1:{b / a:.2f}")
                if not 2.0 <= b / a <= 6.5:
                    print("share_test: FAIL: expected about 1:3")
                    ok = False
            else:
                ok = False
            capped = kernels(finish(busy(run, 4, 3, ["--gpu-compute-limit", "0.3"])),
                             "the capped tenant")
            alone = kernels(finish(busy(run, 4, 4, [])), "the uncapped tenant")
            if capped and alone:
                print(f"share_test: limit 0.3 alone ran {capped} kernels, no limit {alone}: "
                      f"{capped / alone:.2f}")
                if not 0.1 <= capped / alone <= 0.55:
                    print("share_test: FAIL: a 0.3 limit should hold an idle GPU to about 0.3")
                    ok = False
            else:
                ok = False
        finally:
            stop_server(proc)
        ok = two_processes_share_a_limit(bindir, progs, tmp) and ok
        ok = idle_siblings_leave_their_part(bindir, progs, tmp) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
