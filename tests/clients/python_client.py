#!/usr/bin/env python3
"""A second real client against `kubeloop serve`: the official Python `kubernetes`
package lists, creates, patches, watches and reads logs, as a program would against a
real cluster, through the kubeconfig that serve writes.

Usage: python3 tests/clients/python_client.py KUBELOOP_BINARY
(scripts/test runs it with the package installed into .tools/py)
"""
import json, os, socket, ssl, subprocess, sys, tempfile, threading, time

import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

binary = sys.argv[1]
tmp = tempfile.mkdtemp()
kubeconfig = os.path.join(tmp, "kubeconfig")
proc = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig],
                        stdout=subprocess.PIPE, text=True)
failures = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(what)


try:
    first = proc.stdout.readline()
    assert "serving the Kubernetes API on https://" in first, first
    config.load_kube_config(config_file=kubeconfig)
    core, apps = client.CoreV1Api(), client.AppsV1Api()

    nodes = core.list_node()
    check("list nodes", len(nodes.items) == 4, [n.metadata.name for n in nodes.items])
    check("typed node status", all(any(c.type == "Ready" for c in n.status.conditions) for n in nodes.items))

    # Watch pods from the start while a Deployment comes up.
    events = []
    def watching():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_pod, namespace="default", timeout_seconds=20):
            pod = ev["object"]
            events.append((ev["type"], pod.metadata.name, pod.status.phase))
            ready = {n for t, n, p in events if p == "Running"}
            if len(ready) >= 3:
                w.stop()
    t = threading.Thread(target=watching)
    t.start()
    time.sleep(0.5)
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
        spec=client.V1DeploymentSpec(
            replicas=3,
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx:1.25",
                    command=["sh", "-c", "echo hello from kubeloop && nginx -g 'daemon off;'"])]))))
    created = apps.create_namespaced_deployment("default", body)
    check("create deployment", created.metadata.resource_version is not None and created.metadata.uid is not None)
    t.join(30)
    types = {e[0] for e in events}
    check("watch streams ADDED and MODIFIED pods", {"ADDED", "MODIFIED"} <= types, events[:5])
    check("watch sees three running pods", len({n for _, n, p in events if p == "Running"}) == 3, events[-5:])

    pods = core.list_namespaced_pod("default", label_selector="app=web")
    check("list with a label selector", len(pods.items) == 3, len(pods.items))
    running = core.list_pod_for_all_namespaces(field_selector="status.phase=Running")
    check("list with a field selector", len(running.items) == 3, len(running.items))
    log = core.read_namespaced_pod_log(pods.items[0].metadata.name, "default")
    check("pod logs", "hello from kubeloop" in log, log)

    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 1}})
    deadline = time.time() + 30
    while time.time() < deadline and len(core.list_namespaced_pod("default", label_selector="app=web").items) != 1:
        time.sleep(0.2)
    check("scale subresource", len(core.list_namespaced_pod("default", label_selector="app=web").items) == 1)

    try:
        core.read_namespaced_pod("nope", "default")
        check("404 for a missing pod", False, "no exception")
    except ApiException as e:
        check("404 for a missing pod", e.status == 404 and '"reason":"NotFound"' in e.body.replace(" ", ""), e.body)

    stale = apps.read_namespaced_deployment("web", "default")
    stale.metadata.resource_version = "1"
    try:
        apps.replace_namespaced_deployment("web", "default", stale)
        check("409 for a stale resourceVersion", False, "no exception")
    except ApiException as e:
        check("409 for a stale resourceVersion", e.status == 409 and "the object has been modified" in e.body, e.body)

    apps.delete_namespaced_deployment("web", "default", propagation_policy="Foreground")
    deadline = time.time() + 60
    while time.time() < deadline and (apps.list_namespaced_deployment("default").items or core.list_namespaced_pod("default").items):
        time.sleep(0.2)
    check("foreground deletion removes the pods, then the deployment",
          not apps.list_namespaced_deployment("default").items and not core.list_namespaced_pod("default").items)
    # What kubectl delete --wait does: list, then watch from the list's resourceVersion with
    # a name selector. An object deleted between the two is still reported as DELETED.
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="gone")))
    listed = core.list_namespaced_config_map("default", field_selector="metadata.name=gone")
    core.delete_namespaced_config_map("gone", "default")
    resp = core.list_namespaced_config_map("default", field_selector="metadata.name=gone", watch=True,
                                           resource_version=listed.metadata.resource_version, timeout_seconds=2, _preload_content=False)
    seen = [json.loads(l)["type"] for l in resp.read().decode().splitlines() if l.strip()]
    check("a watch from a listed resourceVersion sees a deletion that came before it started", seen == ["DELETED"], seen)
    # A watch that times out ends with a bookmark when bookmarks are allowed.
    resp = core.list_namespaced_pod("default", watch=True, allow_watch_bookmarks=True, timeout_seconds=2, _preload_content=False)
    lines = [json.loads(l) for l in resp.read().decode().splitlines() if l.strip()]
    check("a watch ends with a bookmark", lines and lines[-1]["type"] == "BOOKMARK" and lines[-1]["object"]["metadata"]["resourceVersion"], lines[-3:])

    # What a client sends that is not HTTP, or not sensible, gets a Status, and the
    # server carries on; so does a client that hangs up in the middle of a watch.
    host, port = config.kube_config.Configuration.get_default_copy().host.replace("https://", "").split(":")
    ctx = ssl.create_default_context(cafile=client.Configuration.get_default_copy().ssl_ca_cert)
    def raw(data):
        with socket.create_connection((host, int(port))) as sock, ctx.wrap_socket(sock, server_hostname=host) as tls:
            tls.sendall(data)
            return tls.recv(65536).decode(errors="replace")
    check("garbage is a 400", raw(b"GARBAGE\r\n\r\n").startswith("HTTP/1.1 400"))
    check("a huge body is a 413", raw(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n").startswith("HTTP/1.1 413"))
    check("a bad token is a 401", " 401 " in raw(b"GET /api/v1/pods HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n").split("\r\n")[0] + " ")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\n\r\n")  # plain HTTP to the TLS port
    token = yaml.safe_load(open(kubeconfig))["users"][0]["user"]["token"]
    sock = socket.create_connection((host, int(port)))
    tls = ctx.wrap_socket(sock, server_hostname=host)
    tls.sendall(f"GET /api/v1/pods?watch=1 HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    tls.recv(4096)
    sock.close()
    check("the server still answers", len(core.list_node().items) == 4)
finally:
    proc.kill()

# Watching from a compacted resourceVersion is 410 Gone with an Expired status: a fast
# cluster (400x) compacts its history every 5 simulated minutes.
fast = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--speed", "400", "--kubeconfig", kubeconfig + ".fast"], stdout=subprocess.PIPE, text=True)
try:
    fast.stdout.readline()
    config.load_kube_config(config_file=kubeconfig + ".fast")
    time.sleep(2)
    resp = client.CoreV1Api().list_pod_for_all_namespaces(watch=True, resource_version="1", _preload_content=False)
    first = json.loads(resp.read().decode().splitlines()[0])
    check("410 for an expired resourceVersion", first["type"] == "ERROR" and first["object"]["code"] == 410 and first["object"]["reason"] == "Expired", first)
finally:
    fast.kill()

if failures:
    print(f"{len(failures)} check(s) failed: {failures}")
    sys.exit(1)
print("python client: all checks passed")
