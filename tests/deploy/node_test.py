#!/usr/bin/env python3
"""deploy.node_bundle: the image layout (deploy/docker/bundle.sh) is self-contained and
its entrypoint (remora-node) serves one emulated GPU per index, probes, reloads, drains
and stops as the DaemonSet expects. Runs the bundle made from this build."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

# Libraries a bundle may leave to the system: glibc and the C++ runtime.
SYSTEM = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
          "ld-linux-x86-64.so.2", "libstdc++.so.6", "libgcc_s.so.1"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    return [l.split("[", 1)[1].split("]", 1)[0] for l in out.splitlines() if "(NEEDED)" in l]


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def check_closure(opt):
    """Every library a bundled file needs is in the bundle (its own directory for the
    stub, lib/deps or lib/emu for the rest) or is one the system must provide."""
    dirs = {d: set(os.listdir(os.path.join(opt, d)))
            for d in ("bin", "lib/deps", "lib/emu", "lib/stub")}
    checked = 0
    for d, names in dirs.items():
        have = dirs["lib/stub"] if d == "lib/stub" else dirs["lib/deps"] | dirs["lib/emu"]
        for name in names:
            path = os.path.join(opt, d, name)
            if os.path.islink(path) or not is_elf(path):
                continue
            checked += 1
            for lib in needed(path):
                if lib not in SYSTEM and lib not in have:
                    fail(f"{d}/{name} needs {lib}, which the bundle lacks")
    for want in ("lib/stub/libcudart.so.13", "lib/stub/libcublas.so.13",
                 "lib/stub/libcudnn.so.9", "lib/stub/libnvidia-ml.so.1",
                 "lib/emu/libcuda.so.1", "bin/remora-server", "bin/remora", "bin/remora-node"):
        if not os.path.exists(os.path.join(opt, want)):
            fail(f"bundle lacks {want}")
    print(f"closure: {checked} files, every dependency bundled or glibc/libstdc++")


def free_port_pair():
    for _ in range(100):
        s1, s2 = socket.socket(), socket.socket()
        try:
            s1.bind(("127.0.0.1", 0))
            p = s1.getsockname()[1]
            s2.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
        finally:
            s1.close()
            s2.close()
    fail("no two free adjacent ports")


def wait_for(what, pred, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.1)
    fail(f"timed out waiting for {what}")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Node:
    count = 0

    def __init__(self, opt, tmp, gpus, extra_env=None):
        Node.count += 1
        self.opt, self.run = opt, os.path.join(tmp, f"run{Node.count}")
        self.grpc, self.metrics = free_port_pair(), free_port_pair()
        self.env = dict(os.environ, REMORA_DEVICE="emu", REMORA_GPUS=gpus,
                        REMORA_SOCKET_DIR=self.run, REMORA_GRPC_HOST="127.0.0.1",
                        REMORA_GRPC_PORT=str(self.grpc), REMORA_METRICS_HOST="127.0.0.1",
                        REMORA_METRICS_PORT=str(self.metrics),
                        REMORA_TENANTS=os.path.join(tmp, "absent.yaml"),
                        LD_LIBRARY_PATH=os.path.join(opt, "lib/deps"),
                        REMORA_EMU_MEMORY="1G", REMORA_GRACE_PERIOD="5",
                        **(extra_env or {}))
        self.log = open(os.path.join(tmp, f"node{Node.count}.log"), "w+")
        self.proc = subprocess.Popen([os.path.join(opt, "bin/remora-node")], env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.ids = [int(g) for g in gpus.split(",")]

    def probe(self, gpus=None):
        env = dict(self.env, REMORA_GPUS=gpus) if gpus else self.env
        return subprocess.run([os.path.join(self.opt, "bin/remora-node"), "probe"], env=env,
                              capture_output=True, text=True, timeout=60).returncode

    def ready(self):
        wait_for("every GPU's server", lambda: self.probe() == 0)

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="remora-node-") as tmp:
        run(a, tmp)
    print("PASS")


def run(a, tmp):
    opt = os.path.join(tmp, "opt")
    subprocess.run([os.path.join(a.source, "deploy/docker/bundle.sh"), a.build, opt], check=True)
    check_closure(opt)

    node = Node(opt, tmp, "0,1")
    try:
        node.ready()
        for n in node.ids:
            if not os.path.exists(os.path.join(node.run, f"gpu{n}.sock")):
                fail(f"no socket for GPU {n}")
        if node.probe("0,1,2") == 0:
            fail("probe passed for GPU 2, which has no server")
        body = urllib.request.urlopen(
            f"http://127.0.0.1:{node.metrics + 1}/metrics", timeout=10).read().decode()
        if "remora_" not in body:
            fail("GPU 1's /metrics has no remora_ series")
        # A tenant through the bundled stub libraries (remora run finds ../lib/stub).
        prog = os.path.join(a.build, "cuda/vector_add")
        if os.path.exists(prog):
            r = subprocess.run([os.path.join(opt, "bin/remora"), "run", "--server",
                                f"unix:{node.run}/gpu1.sock", "--", prog],
                               env=node.env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                fail(f"vector_add through the bundle's stubs: rc {r.returncode}\n{r.stdout}{r.stderr}")
            print("tenant: vector_add passed through the bundled stub libraries on GPU 1")
        servers = children(node.proc.pid)
        if len(servers) != 2:
            fail(f"expected 2 servers under remora-node, found {servers}")
        node.proc.send_signal(signal.SIGHUP)  # every server reloads, none stops
        wait_for("both reloads", lambda: node.logtext().count("event=signal signal=1 ") +
                 node.logtext().count("event=signal signal=1\n") >= 2)
        if node.probe() != 0 or node.proc.poll() is not None:
            fail("a server stopped on SIGHUP")
        node.proc.send_signal(signal.SIGTERM)
        rc = node.proc.wait(timeout=60)
        if rc != 0:
            fail(f"remora-node exited {rc} on SIGTERM\n{node.logtext()[-3000:]}")
        for s in servers:
            wait_for(f"server {s} to exit", lambda: not alive(s), 30)
        print("signals: SIGHUP reloaded both servers; SIGTERM stopped both, exit 0")
    finally:
        if node.proc.poll() is None:
            node.proc.kill()

    # One server dies: the node stops the other and exits with a failure, so the
    # kubelet restarts the pod.
    node = Node(opt, tmp, "0,1")
    try:
        node.ready()
        servers = children(node.proc.pid)
        os.kill(servers[0], signal.SIGKILL)
        rc = node.proc.wait(timeout=60)
        if rc == 0:
            fail("remora-node exited 0 after a server was killed")
        wait_for("the other server to stop", lambda: not alive(servers[1]), 30)
        print(f"failure: a killed server ends the node (exit {rc}) and the other server")
    finally:
        if node.proc.poll() is None:
            node.proc.kill()

    bad = subprocess.run([os.path.join(opt, "bin/remora-node")],
                         env=dict(os.environ, REMORA_GPUS="0,x"), capture_output=True,
                         text=True, timeout=30)
    if bad.returncode == 0 or "not a number" not in bad.stderr:
        fail(f"a malformed REMORA_GPUS was accepted: {bad.returncode} {bad.stderr}")


if __name__ == "__main__":
    main()
