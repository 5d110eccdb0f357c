#!/usr/bin/env python3
"""The official Python client's own end-to-end suite (kubernetes-client/python
`kubernetes/e2e_test`, kept unmodified in ../shared/peer-suites/python-client-e2e) against
`kubeloop serve`: tests no one on this team wrote, run as their authors run them.

Every test must pass except those listed in tests/clients/python_e2e_known_failures.txt,
each with the reason kubeloop fails it. A listed test that passes fails the run too, so
that the list only ever shrinks with the code.

Usage: python3 tests/clients/python_e2e.py KUBELOOP_BINARY
(scripts/test runs it with the client, pytest and pytest-timeout in .tools/py). Where the
peer suites are absent, it says so and skips.
"""
import os, shutil, subprocess, sys, tempfile
import xml.etree.ElementTree as ET

import kubernetes

binary = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
suite = os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "peer-suites", "python-client-e2e"))
if not os.path.isdir(suite):
    print(f"skipped: the peer suite is not at {suite}")
    sys.exit(0)

known = {}
for line in open(os.path.join(here, "python_e2e_known_failures.txt")):
    line = line.strip()
    if line and not line.startswith("#"):
        test, _, why = line.partition("#")
        known[test.strip()] = why.strip()

tmp = tempfile.mkdtemp()
home = os.path.join(tmp, "home")
os.makedirs(os.path.join(home, ".kube"))
kubeconfig = os.path.join(home, ".kube", "config")
# The suite imports itself as `kubernetes.e2e_test` and reads its YAML by relative path.
package = os.path.join(os.path.dirname(kubernetes.__file__), "e2e_test")
shutil.rmtree(package, ignore_errors=True)
shutil.copytree(suite, package)
work = os.path.join(tmp, "work")
shutil.copytree(suite, os.path.join(work, "kubernetes", "e2e_test"))

serve = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--speed", "10", "--kubeconfig", kubeconfig], stdout=subprocess.PIPE, text=True)
try:
    first = serve.stdout.readline()
    assert "serving the Kubernetes API on https://" in first, first
    report = os.path.join(tmp, "report.xml")
    env = dict(os.environ, HOME=home)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "180", f"--junitxml={report}",
                    "--pyargs", "kubernetes.e2e_test"], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
finally:
    serve.terminate()
    serve.wait()

results = {}
for case in ET.parse(report).getroot().iter("testcase"):
    name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
    failed = case.find("failure") is not None or case.find("error") is not None
    skipped = case.find("skipped") is not None
    results[name] = "skipped" if skipped else ("failed" if failed else "passed")
    if failed:
        node = case.find("failure") if case.find("failure") is not None else case.find("error")
        results[name + "/why"] = (node.get("message") or "").splitlines()[0][:200] if node is not None else ""

problems = []
for name, outcome in sorted(results.items()):
    if name.endswith("/why"):
        continue
    if outcome == "failed" and name not in known:
        problems.append(f"FAIL {name}: {results.get(name + '/why', '')}")
    elif outcome == "passed" and name in known:
        problems.append(f"PASSES NOW (remove it from the known failures): {name}")
for name in known:
    if name not in results:
        problems.append(f"a known failure no longer exists in the suite: {name}")
counts = {o: sum(1 for k, v in results.items() if not k.endswith("/why") and v == o) for o in ("passed", "failed", "skipped")}
print(f"python client e2e: {counts['passed']} passed, {counts['failed']} failed (all known), {counts['skipped']} skipped")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
