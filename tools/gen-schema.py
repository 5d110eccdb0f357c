#!/usr/bin/env python3
"""Generate crates/core/data/schema.json and crates/cli/data/openapi.json from the
real Kubernetes JSON schemas.

The schemas come from the `kubernetes-validate` package on PyPI (the
`v1.36.0-local-strict` set). Only the definitions reachable from the kinds
kubeloop serves are kept, without descriptions, in a compact form that
crates/core/src/schema.rs reads:

  "s" string, "y" bytes (a base64 string), "i" integer (int64), "i32" int32, "n" number, "b" boolean, "q" quantity,
  "io" int-or-string, "a" anything, "#<def>" a reference,
  {"o": {field: type}} an object with declared fields ("a": 1 if atomic),
  {"m": type} a map, {"l": type, "k": mergeKey, "x": patchStrategy,
  "t": listType, "mk": [mapKeys]} a list.

openapi.json holds the same reachable definitions with their descriptions, in
OpenAPI v3 form (`#/components/schemas/...` references, `allOf` around a
described reference, int-or-string and quantity formats), for the OpenAPI v3
documents that `kubeloop serve` publishes to kubectl (`explain`, validation).

Usage: python3 tools/gen-schema.py   (downloads kubernetes-validate into a
temporary folder with pip if it is not importable)
"""
import json, os, subprocess, sys, tempfile, glob

VERSION = "v1.36.0-local-strict"

def schema_dir():
    try:
        import kubernetes_validate  # noqa
        base = os.path.dirname(kubernetes_validate.__file__)
    except ImportError:
        tmp = tempfile.mkdtemp()
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                               "kubernetes-validate==1.37.0", "-d", tmp])
        whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
        subprocess.check_call(["unzip", "-q", whl, "-d", tmp])
        base = os.path.join(tmp, "kubernetes_validate")
    return os.path.join(base, "kubernetes-json-schema", VERSION)

# group/version, kind  ->  definition name
KINDS = {}
here = os.path.dirname(os.path.abspath(__file__))
kinds_file = os.path.join(here, "..", "crates", "core", "src", "foundation", "api.rs")

def main():
    d = schema_dir()
    defs = json.load(open(os.path.join(d, "_definitions.json")))["$defs"]
    # Find every definition that declares a group-version-kind.
    gvk_map = {}
    for name, s in defs.items():
        for gvk in s.get("x-kubernetes-group-version-kind", []):
            gv = gvk["version"] if not gvk["group"] else gvk["group"] + "/" + gvk["version"]
            gvk_map[gv + "/" + gvk["kind"]] = name
    wanted = [l.split('"')[1] for l in open(kinds_file) if l.strip().startswith("// schema:")]
    out_defs, out_kinds = {}, {}
    todo = []
    for w in wanted:
        if w not in gvk_map:
            sys.exit(f"no schema for {w}")
        out_kinds[w] = gvk_map[w]
        todo.append(gvk_map[w])

    def ty(s):
        if "$ref" in s:
            ref = s["$ref"].split("/")[-1]
            if ref in ("io.k8s.apimachinery.pkg.util.intstr.IntOrString",):
                return "io"
            if ref == "io.k8s.apimachinery.pkg.api.resource.Quantity":
                return "q"
            if ref in ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"):
                return "s"
            todo.append(ref)
            return "#" + ref
        t = s.get("type")
        if isinstance(t, list):
            t = [x for x in t if x != "null"]
            t = t[0] if t else None
        if "oneOf" in s:
            return "a"
        if t == "object" or "properties" in s:
            if "properties" in s:
                r = {"o": {k: ty(v) for k, v in sorted(s["properties"].items())}}
                if s.get("x-kubernetes-map-type") == "atomic":
                    r["a"] = 1
                return r
            ap = s.get("additionalProperties")
            if isinstance(ap, dict):
                return {"m": ty(ap)}
            return "a"
        if t == "array":
            r = {"l": ty(s.get("items", {}))}
            if "x-kubernetes-patch-merge-key" in s:
                r["k"] = s["x-kubernetes-patch-merge-key"]
            if "x-kubernetes-patch-strategy" in s:
                r["x"] = s["x-kubernetes-patch-strategy"]
            if "x-kubernetes-list-type" in s:
                r["t"] = s["x-kubernetes-list-type"]
            if "x-kubernetes-list-map-keys" in s:
                r["mk"] = s["x-kubernetes-list-map-keys"]
            return r
        if t == "integer" and s.get("format") == "int32":
            return "i32"
        if t == "string" and s.get("format") == "byte":
            return "y"
        return {"string": "s", "integer": "i", "number": "n", "boolean": "b"}.get(t, "a")

    while todo:
        n = todo.pop()
        if n in out_defs:
            continue
        out_defs[n] = None
        out_defs[n] = ty(defs[n])
    out = {"version": VERSION, "kinds": out_kinds, "defs": dict(sorted(out_defs.items()))}
    path = os.path.join(here, "..", "crates", "core", "data", "schema.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"wrote {path}: {len(out_kinds)} kinds, {len(out_defs)} definitions")
    write_openapi(defs, set(out_kinds.values()))


SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": True},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string", "format": "quantity"},
}


def v3(s, top=False):
    """One JSON-schema definition as an OpenAPI v3 schema."""
    out = {}
    for k, v in s.items():
        if k == "$ref":
            continue
        if k == "type":
            t = [x for x in v if x != "null"] if isinstance(v, list) else [v]
            if t:
                out["type"] = t[0]
        elif k == "properties":
            out["properties"] = {p: prop(ps) for p, ps in v.items()}
        elif k == "items":
            out["items"] = prop(v)
        elif k == "additionalProperties":
            if isinstance(v, dict):
                out["additionalProperties"] = prop(v)
        elif k == "enum" and top is False:
            out["enum"] = v
        elif k == "oneOf":
            continue
        else:
            out[k] = v
    return out


def prop(s):
    if "$ref" in s:
        ref = s["$ref"].split("/")[-1]
        if ref in SPECIAL:
            r = dict(SPECIAL[ref])
            if "description" in s:
                r["description"] = s["description"]
            return r
        target = {"$ref": "#/components/schemas/" + ref}
        rest = {k: v for k, v in s.items() if k != "$ref"}
        if not rest:
            return target
        r = {"allOf": [target]}
        r.update(v3(rest))
        r.setdefault("default", {})
        return r
    r = v3(s)
    if r.get("type") is None and "properties" not in r and "items" not in r:
        r.pop("type", None)
    return r


def refs(s):
    if isinstance(s, dict):
        if "$ref" in s:
            yield s["$ref"].split("/")[-1]
        for v in s.values():
            yield from refs(v)
    elif isinstance(s, list):
        for v in s:
            yield from refs(v)


def write_openapi(defs, kinds):
    names, todo = set(), list(kinds)
    while todo:
        n = todo.pop()
        if n not in names:
            names.add(n)
            todo.extend(refs(defs[n]))
    schemas = {}
    for n in sorted(names):
        if n in SPECIAL:
            continue
        s = v3(defs[n])
        if n in kinds:
            # The JSON schemas pin apiVersion and kind with an enum; the API server does not.
            for f in ("apiVersion", "kind"):
                if f in s.get("properties", {}):
                    s["properties"][f].pop("enum", None)
        schemas[n] = s
    path = os.path.join(here, "..", "crates", "cli", "data", "openapi.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"version": VERSION, "schemas": schemas}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"wrote {path}: {len(schemas)} schemas")

if __name__ == "__main__":
    main()
