#!/usr/bin/env python3
"""tests/cuda/tenants_test.py - a server that admits the tenants of a file only.

Starts remora-server --tenants FILE (alice with 64 MiB guaranteed, 256 MiB at
most; an admin token) and checks, with unmodified CUDA programs over the
stub, that
  - vector_add with alice's token passes, and the server logs it as alice with
    the file's request and limit, whatever the program declared;
  - without a token, or with a wrong one, the program fails at its first CUDA
    call, and the stub says the token names no tenant;
  - remora list needs the admin token and then shows alice's project;
  - after the file is rewritten and SIGHUP reaches the server (through its
    supervisor), carol's token is admitted and alice's no longer is.
Over grpcs (gRPC with TLS, a self-signed certificate the clients trust through
REMORA_TLS_ROOT_CERT) all of the above holds too, and a client that does not
trust the certificate, or speaks plaintext to the TLS port, is told it cannot
reach the server and why.
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

BOOK = """
projects:
  - {name: research, gpu-compute: 0.5}
tenants:
  - {name: alice, token: tok-alice, project: research, gpu-memory: 64Mi, gpu-memory-limit: 256Mi}
admin-token: tok-root
"""


def main():
    bindir, progs, transport = sys.argv[1], sys.argv[2], sys.argv[3]
    ok = True

    def check(cond, what, detail=""):
        nonlocal ok
        if not cond:
            print(f"tenants_test: {what}\n{detail}")
            ok = False

    with tempfile.TemporaryDirectory(prefix="remora-tenants-") as tmp:
        book = os.path.join(tmp, "tenants.yaml")
        with open(book, "w") as f:
            f.write(BOOK)
        proc, log, address = start_server(bindir, transport, tmp, ["--tenants", book])
        remora = os.path.join(bindir, "remora")
        vector_add = os.path.join(progs, "vector_add")

        def run(*args):
            return subprocess.run([remora, "run", "--server", address, *args, "--", vector_add],
                                  capture_output=True, text=True, timeout=300)

        r = run("--token", "tok-alice", "--gpu-fraction", "0.9")
        check(r.returncode == 0 and "PASS" in r.stdout, "alice's run failed", r.stdout + r.stderr)
        log.seek(0)
        check(re.search(r"event=open .*tenant=alice/vector_add-\d+@\S+ .*"
                        r"request=67108864 limit=268435456", log.read()),
              "the server did not admit alice with the file's quota")
        for args in ([], ["--token", "tok-mallory"]):
            r = run(*args)
            check(r.returncode != 0 and "names none of them" in r.stderr,
                  f"a run with {args or 'no token'} was not refused as it should be",
                  r.stdout + r.stderr)

        if transport == "grpcs":
            untrusting = {k: v for k, v in os.environ.items() if k != "REMORA_TLS_ROOT_CERT"}
            r = subprocess.run([remora, "run", "--server", address, "--token", "tok-alice", "--",
                                vector_add], capture_output=True, text=True, timeout=300,
                               env=untrusting)
            check(r.returncode != 0 and "over TLS, trusting the certificates in" in r.stderr,
                  "a client without the server's certificate was not told why it failed",
                  r.stdout + r.stderr)
            plain = address.replace("grpcs://", "grpc://")
            r = subprocess.run([remora, "run", "--server", plain, "--token", "tok-alice", "--",
                                vector_add], capture_output=True, text=True, timeout=300)
            check(r.returncode != 0 and "plaintext" in r.stderr,
                  "a plaintext client of the TLS port was not told why it failed",
                  r.stdout + r.stderr)

        lst = [remora, "list", "--server", address]
        r = subprocess.run(lst, capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and "admin token" in r.stderr, "remora list without the token",
              r.stdout + r.stderr)
        r = subprocess.run(lst + ["--token", "tok-root"], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 0 and "PROJECT" in r.stdout, "remora list with the token",
              r.stdout + r.stderr)

        with open(book, "w") as f:
            f.write("tenants:\n  - {name: carol, token: tok-carol, gpu-fraction: 0.1}\n")
        proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 20
        while time.time() < deadline:
            log.seek(0)
            if len(re.findall(r"comp=server event=tenants ", log.read())) >= 2:
                break
            time.sleep(0.05)
        r = run("--token", "tok-carol")
        check(r.returncode == 0 and "PASS" in r.stdout, "carol's run after the reload failed",
              r.stdout + r.stderr)
        r = run("--token", "tok-alice")
        check(r.returncode != 0, "alice was still admitted after the reload", r.stdout)
        check(proc.poll() is None, "remora-server exited on SIGHUP")
        return finish_server(proc, log, ok, "tenants_test")


if __name__ == "__main__":
    sys.exit(main())
