#!/usr/bin/env python3
"""Generate crates/cli/data/protobuf.json: the protobuf field numbers of the Kubernetes
types that clients send as `application/vnd.kubernetes.protobuf`.

kubectl's typed clients (`auth can-i`, `create deployment`, `drain`'s evictions, ...)
encode request bodies in the Kubernetes protobuf wire format. `kubeloop serve` decodes
them with this table: for every message reachable from the kinds it serves, each field's
number, its JSON name and its type. Field numbers come from the prost bindings of the
`k8s-pb` crate (generated from the real generated.proto files); JSON names come from the
1.36 JSON schemas of `kubernetes-validate` (the proto names are the JSON names, which
prost turns into snake_case).

The same table gives each message's fields in Go struct order, in which `serve` writes
JSON bodies as the real API server does.

Usage: python3 tools/gen-protobuf.py   (fetches k8s-pb with cargo and
kubernetes-validate with pip if they are not already at hand)
"""
import glob, json, os, re, subprocess, sys, tempfile

K8S_PB = "0.9.0"
here = os.path.dirname(os.path.abspath(__file__))


def k8s_pb_dir():
    found = glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/k8s-pb-{K8S_PB}"))
    if found:
        return found[0]
    tmp = tempfile.mkdtemp()
    subprocess.check_call(["cargo", "new", "-q", "--vcs", "none", os.path.join(tmp, "p")])
    with open(os.path.join(tmp, "p", "Cargo.toml"), "a") as f:
        f.write(f'k8s-pb = "={K8S_PB}"\n')
    subprocess.check_call(["cargo", "fetch", "-q"], cwd=os.path.join(tmp, "p"))
    return glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/k8s-pb-{K8S_PB}"))[0]


def definitions():
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_schema", os.path.join(here, "gen-schema.py"))
    gen_schema = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_schema)
    d = gen_schema.schema_dir()
    return json.load(open(os.path.join(d, "_definitions.json")))["$defs"]


FIELD = re.compile(r'#\[prost\(([^)]*)tag = "(\d+)"\)\]\s*pub (r#)?(\w+):(.*?)(?=\n\s*(?:///|#\[|$))', re.S)
STRUCT = re.compile(r"pub struct (\w+) \{(.*?)\n\}", re.S)


def resolve(module, ty):
    """The full definition name of a Rust type path seen from `module`."""
    inner = re.sub(r"\s+", "", ty).rstrip(",").replace(",>", ">")
    for w in ("::core::option::Option<", "::prost::alloc::vec::Vec<"):
        if inner.startswith(w):
            inner = inner[len(w):-1]
    if "BTreeMap<" in inner:
        inner = inner.split(",", 1)[1][:-1]
    parts = inner.split("::")
    mod = list(module)
    while parts and parts[0] == "super":
        parts.pop(0)
        mod.pop()
    return "io.k8s." + ".".join(mod + parts)


def main():
    base = os.path.join(k8s_pb_dir(), "src")
    defs = definitions()
    # prost renames some types (`PodIP` becomes `PodIp`): find definitions case-blind.
    defs_ci = {n.lower(): d for n, d in defs.items()}
    messages, schemas = {}, {}
    for path in glob.glob(os.path.join(base, "**", "mod.rs"), recursive=True):
        module = os.path.relpath(os.path.dirname(path), base).split(os.sep)
        text = open(path).read()
        for name, body in STRUCT.findall(text):
            full = "io.k8s." + ".".join(module + [name])
            props = defs_ci.get(full.lower(), {}).get("properties", {})
            by_key = {p.lower(): p for p in props}
            fields = {}
            for attrs, tag, _, rust, ty in FIELD.findall(body + "\n"):
                kind = attrs.split(",")[0].strip()
                json_name = by_key.get(rust.replace("_", "").lower())
                if json_name is None:
                    first, *rest = rust.split("_")
                    json_name = first + "".join(w.title() for w in rest)
                repeated = "repeated" in attrs
                if kind.startswith("btree_map") or kind.startswith("map"):
                    value = attrs.split('"')[1].split(",")[1].strip()
                    t = ["map", resolve(module, ty.strip()) if value == "message" else value]
                elif kind == "message":
                    t = ["message", resolve(module, ty.strip())]
                else:
                    t = [kind.split("=")[0].strip()]
                fields[tag] = [json_name, repeated] + t
            messages[full] = fields
            schemas[full] = set(props)
    # A Go struct embedded `json:",inline"` (Volume's VolumeSource, Probe's ProbeHandler) is a
    # message field in protobuf but its fields are the parent's in JSON: a message field the
    # parent's schema does not name, whose own fields (and theirs, if inline in turn) the
    # parent's schema all names, case-blind. An embedded struct has no schema of its own, so
    # its JSON names are taken from the parent's (`downwardAPI`, not `downwardApi`).
    def flat(name, seen=()):
        out = []
        for f in messages.get(name, {}).values():
            if f[2] == "inline" and f[3] not in seen:
                out += flat(f[3], seen + (f[3],))
            else:
                out.append(f)
        return out

    changed = True
    while changed:
        changed = False
        for full, fields in messages.items():
            props = {p.lower(): p for p in schemas.get(full, ())}
            for f in fields.values():
                if f[2] != "message" or not props or f[0] in props.values():
                    continue
                inner = flat(f[3])
                if inner and all(g[0].lower() in props for g in inner):
                    f[2] = "inline"
                    for g in inner:
                        g[0] = props[g[0].lower()]
                    changed = True

    # Keep what is reachable from the served kinds, the reviews and the eviction.
    openapi = json.load(open(os.path.join(here, "..", "crates", "cli", "data", "openapi.json")))["schemas"]
    roots = [n for n, s in openapi.items() if "x-kubernetes-group-version-kind" in s]
    roots += ["io.k8s.api.authorization.v1." + k for k in ("SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview")]
    roots += ["io.k8s.api.authentication.v1.SelfSubjectReview", "io.k8s.api.authentication.v1.TokenRequest", "io.k8s.api.policy.v1.Eviction", "io.k8s.api.autoscaling.v1.Scale"]
    keep, todo = {}, [r for r in roots if r in messages]
    while todo:
        n = todo.pop()
        if n in keep or n not in messages:
            continue
        keep[n] = messages[n]
        for f in messages[n].values():
            if f[2] in ("message", "map", "inline") and f[3].startswith("io.k8s."):
                todo.append(f[3])
    kinds = {}
    for n in keep:
        for gvk in defs.get(n, {}).get("x-kubernetes-group-version-kind", []):
            gv = gvk["version"] if not gvk["group"] else gvk["group"] + "/" + gvk["version"]
            kinds[gv + "/" + gvk["kind"]] = n
    out = os.path.join(here, "..", "crates", "cli", "data", "protobuf.json")
    # The order in which prost declares a message's fields is generated.proto's, which
    # go-to-protobuf writes in the Go struct's field order: the order encoding/json writes
    # them in, and so the order of the real API server's JSON bodies.
    order = {n: [int(t) for t in fields] for n, fields in keep.items()}
    with open(out, "w") as f:
        json.dump({"k8s-pb": K8S_PB, "kinds": kinds, "messages": keep, "order": order}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"wrote {out}: {len(keep)} messages, {len(kinds)} kinds")


main()
