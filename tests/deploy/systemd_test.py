#!/usr/bin/env python3
"""tests/deploy/systemd_test.py - the systemd unit's commands work as written.

Reads deploy/systemd/remora-server@.service and remora-server.env, expands the
instance (%i = 0) and the environment as systemd does, swaps the installed paths
for the build's and the fixed addresses for free ones, then runs what systemd would:
ExecStartPre (--check) must pass with a good tenants file and fail, naming the
mistake, with a broken one; ExecStart must serve (ready, /metrics answering);
ExecReload's SIGHUP must read the tenants file again; SIGTERM (KillSignal)
must stop it with status 0 (a drain with no tenant ends at once); TimeoutStopSec
must leave room for the drain's grace period.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def load_env(path):
    env = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    return env


def expand(line, env, instance):
    """%i, ${VAR} (one word) and $VAR (split into words), as systemd expands them."""
    line = line.replace("%i", instance)
    line = re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), line)
    return re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), "") if m.group(1) != "MAINPID"
                  else "$MAINPID", line)


def main():
    unit_path, env_path, server = sys.argv[1], sys.argv[2], sys.argv[3]
    unit = open(unit_path).read()
    env = load_env(env_path)
    keys = dict(re.findall(r"^(ExecStartPre|ExecStart|ExecReload|KillSignal|TimeoutStopSec)=(.*)$",
                           unit, re.M))
    ok = True

    def check(cond, what, detail=""):
        nonlocal ok
        if not cond:
            print(f"systemd_test: {what}\n{detail}")
            ok = False

    check(keys.get("ExecReload", "").endswith("kill -HUP $MAINPID"), "ExecReload is not SIGHUP")
    check(keys.get("KillSignal") == "SIGTERM", "KillSignal is not SIGTERM")
    for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/run/remora",
                      "Environment=CUDA_VISIBLE_DEVICES=%i"):
        check(re.search("^" + re.escape(hardening) + "$", unit, re.M) is not None,
              "the unit lacks " + hardening)
    for var in ("REMORA_DEVICE", "REMORA_TENANTS", "REMORA_GRPC", "REMORA_METRICS",
                "REMORA_GRACE_PERIOD"):
        check(var in env, "remora-server.env does not set " + var)
    # systemd must not SIGKILL the server while SIGTERM's drain may still run.
    check("--grace-period ${REMORA_GRACE_PERIOD}" in keys.get("ExecStart", ""),
          "ExecStart does not pass REMORA_GRACE_PERIOD")
    stop, grace = keys.get("TimeoutStopSec", ""), env.get("REMORA_GRACE_PERIOD", "")
    check(stop.isdigit() and grace.replace(".", "", 1).isdigit() and int(stop) > float(grace),
          f"TimeoutStopSec ({stop}) is not above REMORA_GRACE_PERIOD ({grace})")
    # systemd's own reading of the unit, where systemd is present.
    if shutil.which("systemd-analyze") and os.path.isdir("/run/systemd/system"):
        v = subprocess.run(["systemd-analyze", "verify", unit_path], capture_output=True,
                           text=True, timeout=60)
        check("remora-server@.service:" not in v.stderr, "systemd-analyze verify", v.stderr)
    with tempfile.TemporaryDirectory(prefix="remora-systemd-") as tmp:
        tenants = os.path.join(tmp, "tenants.yaml")

        def command(line):
            line = expand(line, env, "0")
            line = line.replace("/usr/local/bin/remora-server", server)
            line = line.replace("/etc/remora/tenants.yaml", tenants)
            line = line.replace("/run/remora/", tmp + "/")
            line = re.sub(r"0\.0\.0\.0:\d+", "127.0.0.1:0", line)
            return shlex.split(line)

        with open(tenants, "w") as f:
            f.write("tenants:\n  - {name: alice, token: tok-a, gpu-fraction: 0.25}\n")
        pre = subprocess.run(command(keys["ExecStartPre"]), capture_output=True, text=True,
                             timeout=60)
        check(pre.returncode == 0 and "ready to serve" in pre.stdout, "--check failed",
              pre.stdout + pre.stderr)
        with open(tenants + ".bad", "w") as f:
            f.write("tenants:\n  - {name: bob}\n")
        bad = subprocess.run([a.replace(tenants, tenants + ".bad")
                              for a in command(keys["ExecStartPre"])], capture_output=True,
                             text=True, timeout=60)
        check(bad.returncode != 0 and "has no token" in bad.stderr,
              "--check passed a broken tenants file", bad.stdout + bad.stderr)

        log_path = os.path.join(tmp, "server.log")
        with open(log_path, "w+") as log:
            proc = subprocess.Popen(command(keys["ExecStart"]), stdout=log,
                                    stderr=subprocess.STDOUT)
            text = ""
            deadline = time.time() + 30
            while time.time() < deadline and "event=ready" not in text:
                time.sleep(0.05)
                log.seek(0)
                text = log.read()
            check("event=ready" in text, "ExecStart did not serve", text)
            m = re.search(r"transport=metrics .*port=(\d+)", text)
            check(m is not None, "no metrics listener", text)
            if m:
                body = urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics",
                                              timeout=10).read().decode()
                check("remora_tenants 0" in body, "/metrics did not answer", body)
            proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 20
            while time.time() < deadline and len(re.findall(r"event=tenants ", text)) < 2:
                time.sleep(0.05)
                log.seek(0)
                text = log.read()
            check(len(re.findall(r"event=tenants ", text)) >= 2, "SIGHUP did not reload", text)
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "timeout"
            check(code == 0, f"SIGTERM ended it with {code}", text)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
