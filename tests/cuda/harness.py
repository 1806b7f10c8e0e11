#!/usr/bin/env python3
"""tests/cuda/harness.py - run one CUDA program as a tenant of a live remora-server.

Starts remora-server on the emulated device (a private socket or a free gRPC
port), runs the program unmodified through `remora run`, and checks its exit
code (and, when it is expected to succeed, that it printed PASS and no FAIL).
Optional --stdout-file compares the program's stdout with a golden file;
--stderr-contains and --log-contains check the program's stderr and the
server's log against regular expressions.
The server's log is shown when anything fails.
"""
import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time


def make_cert(tmp):
    """A self-signed certificate for 127.0.0.1 and localhost: (cert, key) paths in tmp."""
    crt, key = os.path.join(tmp, "server.crt"), os.path.join(tmp, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    return crt, key


def start_server(bindir, transport, tmp, extra, env=None):
    """Starts remora-server on `transport`: shm, grpc, or grpcs (gRPC over TLS with
    a fresh self-signed certificate, which this process's children then trust
    through REMORA_TLS_ROOT_CERT). Returns (process, log file, address)."""
    log = open(os.path.join(tmp, "server.log"), "w+", errors="replace")
    args = [os.path.join(bindir, "remora-server"), "--device=emu"]
    scheme = transport + "://"
    if transport == "shm":
        sock = os.path.join(tmp, "gpu0.sock")
        args += ["--listen", "unix:" + sock]
        address = "unix:" + sock
    else:
        args += ["--grpc", "127.0.0.1:0"]
        address = None
    if transport == "grpcs":
        crt, key = make_cert(tmp)
        args += ["--tls-cert", crt, "--tls-key", key]
        os.environ["REMORA_TLS_ROOT_CERT"] = crt
    proc = subprocess.Popen(args + extra, stdout=log, stderr=subprocess.STDOUT,
                            env=None if env is None else {**os.environ, **env})
    deadline = time.time() + 30
    while time.time() < deadline:
        log.seek(0)
        text = log.read()
        if transport != "shm" and address is None:
            m = re.search(r"transport=grpc .*port=(\d+)", text)
            if m:
                address = scheme + "127.0.0.1:" + m.group(1)
        if "event=ready" in text and address:
            return proc, log, address
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    sys.stderr.write("remora-server did not start:\n" + log.read())
    proc.kill()
    sys.exit(1)


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return -999


def finish_server(proc, log, ok, who):
    """Stops the server; a failure (`ok` False, or an unclean exit) prints its log.
    Returns the test's exit code."""
    code = stop_server(proc)
    if code != 0:
        print(f"{who}: remora-server exited with {code}")
        ok = False
    if not ok:
        log.seek(0)
        print("---- remora-server log ----\n" + log.read())
    return 0 if ok else 1


def collect(p, timeout):
    """Waits for `p`; returns its stdout, stderr and exit code ("timeout" if killed)."""
    try:
        out, err = p.communicate(timeout=timeout)
        return out, err, p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return out, err, "timeout"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--transport", choices=["shm", "grpc"], default="shm")
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("--stdout-file")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--remora-arg", action="append", default=[])
    ap.add_argument("--server-arg", action="append", default=[],
                    help="an argument for remora-server (repeat for each)")
    ap.add_argument("--tenants", type=int, default=1,
                    help="run this many copies at once, each its own tenant")
    ap.add_argument("--also", action="append", default=[],
                    help="another program (a quoted command line) run at the same time as its "
                         "own tenant; it must exit 0 and print PASS (repeatable)")
    ap.add_argument("--stderr-contains", action="append", default=[],
                    help="a regex the program's stderr must match (repeatable)")
    ap.add_argument("--log-contains", action="append", default=[],
                    help="a regex the server's log must match (repeatable)")
    ap.add_argument("--sessions", type=int,
                    help="sessions the server must see (default: one per program run)")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = [p for p in a.program if p != "--"]
    with tempfile.TemporaryDirectory(prefix="remora-test-") as tmp:
        proc, log, address = start_server(a.bindir, a.transport, tmp, a.server_arg)
        run = [os.path.join(a.bindir, "remora"), "run", "--server", address] + a.remora_arg + ["--"]
        ok = True
        others = [run + shlex.split(line) for line in a.also]
        # A program may print bytes that are not UTF-8: its output is judged all the same.
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  errors="replace")
                 for c in [run + prog] * a.tenants + others]
        for i, p in enumerate(procs):
            out, err, rc = collect(p, a.timeout)
            if i >= a.tenants:  # an --also program: its own checks, no golden output
                name = a.also[i - a.tenants]
                if rc != 0 or "PASS" not in out or "FAIL" in out:
                    print(f"harness: [{name}] exit code {rc}, or no PASS:\n{out}{err}")
                    ok = False
                continue
            tag = f"[tenant {i}] " if len(procs) > 1 else ""
            sys.stdout.write(out)
            sys.stderr.write(err)
            if rc != a.expect:
                print(f"harness: {tag}exit code {rc}, expected {a.expect}")
                ok = False
            if a.expect == 0 and ("PASS" not in out or "FAIL" in out):
                print(f"harness: {tag}the program did not print PASS (or printed FAIL)")
                ok = False
            for pattern in a.stderr_contains:
                if not re.search(pattern, err, re.M):
                    print(f"harness: {tag}stderr does not match /{pattern}/")
                    ok = False
            if a.stdout_file:
                with open(a.stdout_file) as f:
                    want = f.read()
                if out != want:
                    print(f"harness: {tag}stdout differs from " + a.stdout_file)
                    ok = False
        # What the server logs as a session ends (event=closed) may come just after the
        # program has exited: wait for it a little.
        deadline = time.monotonic() + 10
        while True:
            log.seek(0)
            text = log.read()
            missing = [p for p in a.log_contains if not re.search(p, text, re.M)]
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        opened = text.count("event=open")
        for pattern in missing:
            print(f"harness: the server log does not match /{pattern}/")
            ok = False
        want = len(procs) if a.sessions is None else a.sessions
        if opened != want:
            print(f"harness: the server saw {opened} sessions, expected {want}")
            ok = False
        return finish_server(proc, log, ok, "harness")


if __name__ == "__main__":
    sys.exit(main())
