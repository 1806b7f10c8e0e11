#!/usr/bin/env python3
"""deploy.k8s_manifests: every kustomization under deploy/k8s renders with
`kubectl kustomize`, and what the rendered objects say agrees with the code they run:
the entrypoint's variables, the device plugin's and webhook's flags, the socket, stub
and kubelet paths, the ports, the probes, the drain, the webhook's route and the
examples' annotations (each example pod is sent through the real webhook)."""
import argparse
import base64
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
    return cond


def render(path):
    r = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: kubectl kustomize {path}:\n{r.stderr}")
        sys.exit(1)
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def one(objs, kind, name):
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(found) != 1:
        print(f"FAIL: expected one {kind}/{name}, found {len(found)}")
        sys.exit(1)
    return found[0]


def flags(args):
    """--name=value args as a dict."""
    out = {}
    for a in args:
        check(a.startswith("--") and "=" in a, f"argument {a!r} is not --name=value")
        k, _, v = a.partition("=")
        out[k] = v
    return out


def help_text(binary):
    r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def mounts_of(container, volumes):
    """container mount path -> the volume's hostPath (None if not a hostPath)."""
    vols = {v["name"]: v for v in volumes}
    return {m["mountPath"]: vols[m["name"]].get("hostPath", {}).get("path")
            for m in container.get("volumeMounts", [])}


def check_node(objs, src, plugin_bin):
    ds = one(objs, "DaemonSet", "remora-node")
    spec = ds["spec"]["template"]["spec"]
    cs = {c["name"]: c for c in spec["containers"]}
    server, plugin = cs["server"], cs["device-plugin"]
    node_sh = open(os.path.join(src, "deploy/docker/remora-node.sh")).read()
    read_vars = set(re.findall(r"\bREMORA_[A-Z_]+", node_sh))
    env = env_of(server)
    for name in env:
        check(name in read_vars or name.startswith("NVIDIA_"),
              f"server env {name} is not read by remora-node.sh")
    check(server.get("args") == ["serve"], "server container must run `remora-node serve`")
    dockerfile = open(os.path.join(src, "deploy/docker/Dockerfile")).read()
    check('ENTRYPOINT ["/opt/remora/bin/remora-node"]' in dockerfile,
          "the remora image's entrypoint is not remora-node")
    # Ports: what the servers listen on is what the pod declares and Prometheus scrapes.
    ports = {p["name"]: p["containerPort"] for p in server["ports"]}
    check(ports.get("grpc-gpu0") == int(env["REMORA_GRPC_PORT"]), "gRPC port mismatch")
    check(ports.get("metrics-gpu0") == int(env["REMORA_METRICS_PORT"]), "metrics port mismatch")
    ann = ds["spec"]["template"]["metadata"]["annotations"]
    check(ann.get("prometheus.io/port") == env["REMORA_METRICS_PORT"],
          "prometheus.io/port is not GPU 0's metrics port")
    for probe in ("livenessProbe", "readinessProbe"):
        check(server[probe]["exec"]["command"] == ["/opt/remora/bin/remora-node", "probe"],
              f"{probe} does not run remora-node probe")
    # The drain: the pod outlives the servers' grace period.
    if "REMORA_GRACE_PERIOD" in env:
        check(spec["terminationGracePeriodSeconds"] > int(env["REMORA_GRACE_PERIOD"]),
              "terminationGracePeriodSeconds does not exceed REMORA_GRACE_PERIOD")
    # Paths: the socket directory the servers use is a host directory the plugin sees
    # under the same path (it names host paths in Allocate), and the stub libraries the
    # init container installs are where the plugin and the webhook mount them from.
    vols = spec["volumes"]
    smounts, pmounts = mounts_of(server, vols), mounts_of(plugin, vols)
    sock = env["REMORA_SOCKET_DIR"]
    check(smounts.get(sock) == sock, f"server's {sock} is not the host's {sock}")
    pf = flags(plugin["args"])
    check(pmounts.get(pf["--socket-dir"]) == pf["--socket-dir"] == sock,
          "plugin's --socket-dir is not the servers' socket host directory")
    check(pmounts.get(pf["--kubelet-dir"]) == "/var/lib/kubelet/device-plugins"
          == pf["--kubelet-dir"], "plugin's --kubelet-dir is not the kubelet's directory")
    init = {c["name"]: c for c in spec["initContainers"]}["install-stub"]
    stub_host = mounts_of(init, vols)["/target"]
    check(pf["--stub-dir"] == stub_host, "plugin's --stub-dir is not where the stubs go")
    check("/remora/lib" in " ".join(init["command"]) and
          "COPY --from=build /opt/remora/lib/stub /remora/lib" in dockerfile,
          "the init container copies from where the stub image keeps the libraries")
    if plugin_bin:
        h = help_text(plugin_bin)
        for f in pf:
            check(f in h, f"remora-device-plugin --help does not know {f}")
        check(plugin["command"] == ["/opt/remora/bin/remora-device-plugin"],
              "plugin command is not the bundled binary")
        for res in ("remora.io/gpu-memory", "remora.io/gpu-compute"):
            check(res.encode() in open(plugin_bin, "rb").read(),
                  f"remora-device-plugin does not advertise {res}")
    return stub_host, pf


def check_webhook(objs, webhook_bin, stub_host, pf):
    dep = one(objs, "Deployment", "remora-webhook")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    wf = flags(c["args"])
    port = int(wf["--listen"].rsplit(":", 1)[1])
    check({p["name"]: p["containerPort"] for p in c["ports"]}.get("https") == port,
          "webhook containerPort is not its --listen port")
    check(wf["--stub-host-dir"] == stub_host, "webhook's --stub-host-dir is not the stubs' dir")
    check(wf.get("--memory-unit-mib", "1") == pf.get("--memory-unit-mib", "1"),
          "the webhook counts remora.io/gpu-memory in other units than the plugin")
    tls_mount = {m["mountPath"] for m in c["volumeMounts"]}
    check(os.path.dirname(wf["--tls-cert"]) in tls_mount, "webhook cert is not mounted")
    svc = one(objs, "Service", "remora-webhook")
    check(svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"],
          "webhook Service does not select the webhook pods")
    mwc = one(objs, "MutatingWebhookConfiguration", "remora-webhook")
    wh = mwc["webhooks"][0]
    ref = wh["clientConfig"]["service"]
    check(ref["name"] == svc["metadata"]["name"] and
          ref["namespace"] == svc["metadata"]["namespace"], "webhook points at another Service")
    svc_port = [p for p in svc["spec"]["ports"] if p["port"] == ref["port"]]
    check(svc_port and svc_port[0]["targetPort"] == "https", "webhook Service port mismatch")
    cert = one(objs, "Certificate", "remora-webhook")
    check(f'{ref["name"]}.{ref["namespace"]}.svc' in cert["spec"]["dnsNames"],
          "the webhook certificate does not name the Service")
    check(mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] ==
          f'{cert["metadata"]["namespace"]}/{cert["metadata"]["name"]}', "caBundle source")
    vol = [v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"][0]
    check(vol["secret"]["secretName"] == cert["spec"]["secretName"], "webhook TLS secret")
    if webhook_bin:
        h = help_text(webhook_bin)
        for f in wf:
            check(f in h, f"remora-webhook --help does not know {f}")
    return wh


def pods_of(objs):
    """(namespace, name, pod spec + metadata) for every pod an example creates."""
    for o in objs:
        meta = o["metadata"]
        if o["kind"] == "Pod":
            yield meta.get("namespace"), meta["name"], o
        elif o["kind"] in ("Deployment", "Job"):
            t = o["spec"]["template"]
            yield meta.get("namespace"), meta["name"], {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": dict(t["metadata"], generateName=meta["name"] + "-"),
                "spec": t["spec"]}


class Webhook:
    """The real remora-webhook over HTTPS with a throwaway certificate."""

    def __init__(self, binary, tmp, gpu_mib):
        crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", key, "-out", crt],
                       check=True, capture_output=True)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen([binary, f"--listen=127.0.0.1:{self.port}",
                                      f"--tls-cert={crt}", f"--tls-key={key}",
                                      f"--gpu-memory-mib={gpu_mib}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz",
                                       context=self.ctx, timeout=2)
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("FAIL: remora-webhook did not come up")

    def review(self, path, pod, namespace):
        req = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "request": {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                           "resource": {"group": "", "version": "v1", "resource": "pods"},
                           "operation": "CREATE", "namespace": namespace,
                           "name": pod["metadata"].get("name", ""), "object": pod}}
        r = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}",
                                   data=json.dumps(req).encode(),
                                   headers={"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(r, context=self.ctx, timeout=10))["response"]

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def check_examples(src, build, wh, webhook_bin, gpu_mib, tmp):
    objs = render(os.path.join(src, "deploy/k8s/examples"))
    labels = {o["metadata"]["name"]: o["metadata"].get("labels", {})
              for o in objs if o["kind"] == "Namespace"}
    sel = wh["namespaceSelector"]["matchLabels"]
    samples = set(os.listdir(os.path.join(build, "cuda"))) if os.path.isdir(
        os.path.join(build, "cuda")) else None
    hook = Webhook(webhook_bin, tmp, gpu_mib) if webhook_bin else None
    try:
        for ns, name, pod in pods_of(objs):
            check(ns in labels and all(labels[ns].get(k) == v for k, v in sel.items()),
                  f"example {name}'s namespace is not one the webhook mutates")
            # No escape: a tenant pod gets no NVIDIA device or driver library, and every
            # CUDA driver library it loads is Remora's (the audit module, set by the webhook
            # or by the pod itself).
            for v in pod["spec"].get("volumes", []):
                host = v.get("hostPath", {}).get("path", "")
                check("nvidia" not in host and "libcuda" not in host,
                      f"example {name} mounts {host} from the node: NVIDIA's device or driver")
            annotated = any(k.startswith("remora.io/")
                            for k in pod["metadata"].get("annotations", {}))
            for c in pod["spec"]["containers"]:
                res = c.get("resources", {})
                asked = list(res.get("limits", {})) + list(res.get("requests", {}))
                check(not any(k.startswith("nvidia.com/") for k in asked),
                      f"example {name} asks for an NVIDIA device ({asked})")
                if not annotated and any(e["name"] == "REMORA_SERVER" for e in c.get("env", [])):
                    audit = [e.get("value", "") for e in c.get("env", []) if e["name"] == "LD_AUDIT"]
                    check(audit and "libremora_confine.so" in audit[0],
                          f"example {name}: container {c['name']} does not set Remora's LD_AUDIT")
                cmd = " ".join(c.get("command", []))
                for prog in re.findall(r"/samples/(\w+)", cmd):
                    check(samples is None or prog in samples,
                          f"example {name} runs /samples/{prog}, which tests/cuda does not build")
            if not hook:
                continue
            resp = hook.review(wh["clientConfig"]["service"]["path"], pod, ns)
            ann = pod["metadata"].get("annotations", {})
            if not check(resp.get("allowed") is True,
                         f"the webhook refuses example {name}: {resp.get('status')}"):
                continue
            if any(k.startswith("remora.io/") for k in ann):
                patch = json.loads(base64.b64decode(resp["patch"]))
                text = json.dumps(patch)
                check("remora.io~1gpu-memory" in text or "remora.io/gpu-memory" in text,
                      f"example {name}: no remora.io/gpu-memory request in the patch")
                check("libremora_confine.so" in text,
                      f"example {name}: the patch does not set Remora's LD_AUDIT")
                if "remora.io/priority" in ann:
                    check("REMORA_PRIORITY" in text, f"example {name}: priority not passed on")
        print(f"examples: {len(list(pods_of(objs)))} pods rendered" +
              (", each admitted by remora-webhook" if hook else ""))
    finally:
        if hook:
            hook.close()


def check_docker(src):
    text = open(os.path.join(src, "deploy/docker/Dockerfile")).read()
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", text, re.M))
    for want in ("remora", "remora-stub", "remora-samples"):
        check(want in stages, f"Dockerfile has no stage {want}")
    for srcpath in re.findall(r"^COPY (?!--from)(\S+) ", text, re.M):
        check(srcpath == "." or os.path.exists(os.path.join(src, srcpath)),
              f"Dockerfile copies {srcpath}, which does not exist")
    for script in re.findall(r"(deploy/docker/\S+\.sh|scripts/\S+\.sh)", text):
        check(os.access(os.path.join(src, script), os.X_OK), f"{script} is not executable")
    for path in ("deploy/k8s/base", "deploy/k8s/examples"):
        k = yaml.safe_load(open(os.path.join(src, path, "kustomization.yaml")))
        for img in k.get("images", []):
            check(img["name"] in stages, f"{path} names image {img['name']}, no such stage")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--plugin", default="")
    ap.add_argument("--webhook", default="")
    a = ap.parse_args()
    if not shutil.which("kubectl"):
        print("FAIL: kubectl is not installed (scripts/setup.sh installs it)")
        sys.exit(1)
    check_docker(a.source)
    wh = None
    for overlay in ("gpu", "emulated"):
        objs = render(os.path.join(a.source, "deploy/k8s/overlays", overlay))
        stub_host, pf = check_node(objs, a.source, a.plugin)
        wh = check_webhook(objs, a.webhook, stub_host, pf)
        ds = one(objs, "DaemonSet", "remora-node")
        env = env_of(ds["spec"]["template"]["spec"]["containers"][0])
        want = {"gpu": "cuda", "emulated": "emu"}[overlay]
        check(env["REMORA_DEVICE"] == want, f"overlay {overlay} runs REMORA_DEVICE={env['REMORA_DEVICE']}")
        print(f"overlay {overlay}: {len(objs)} objects agree with the code")
        if overlay == "emulated":
            dep = one(objs, "Deployment", "remora-webhook")
            gpu_mib = int(flags(dep["spec"]["template"]["spec"]["containers"][0]["args"])
                          ["--gpu-memory-mib"])
    with tempfile.TemporaryDirectory() as tmp:
        check_examples(a.source, a.build, wh, a.webhook, gpu_mib, tmp)
    if failures:
        for f in failures:
            print("FAIL:", f)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
