#!/usr/bin/env python3
"""How much of a wasm module's code each Rust module takes.

Reads the function bodies (code section) and their names (the `name` custom section that
rustc writes unless symbols are stripped), demangles the legacy Rust mangling enough to get
the module path, and prints code bytes per path prefix, largest first.

Usage: python3 tools/wasm-sizes.py FILE.wasm [DEPTH] [PREFIX ...]
  DEPTH   how many path segments to group by (default 4: kubeloop_core::loops::kubelet::shell)
  PREFIX  print only paths starting with these (e.g. kubeloop_core)

The page's raw module (before wasm-bindgen and wasm-opt, which drop the names) is
target/wasm32-unknown-unknown/web/kubeloop-web.wasm after `trunk build --release`.
Generic functions are counted in the module of their definition, inlined code in its caller.
"""
import re, sys
from collections import Counter


def leb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def sections(b):
    i = 8
    while i < len(b):
        sid = b[i]
        size, j = leb(b, i + 1)
        yield sid, b[j:j + size]
        i = j + size


def imported_functions(payload):
    n, i = leb(payload, 0)
    count = 0
    for _ in range(n):
        for _ in range(2):
            ln, i = leb(payload, i)
            i += ln
        kind = payload[i]
        i += 1
        if kind == 0:
            _, i = leb(payload, i)
            count += 1
        elif kind == 1:
            i += 1
            flags, i = leb(payload, i)
            _, i = leb(payload, i)
            if flags & 1:
                _, i = leb(payload, i)
        elif kind == 2:
            flags, i = leb(payload, i)
            _, i = leb(payload, i)
            if flags & 1:
                _, i = leb(payload, i)
        elif kind == 3:
            i += 2
        else:
            _, i = leb(payload, i)
    return count


def demangle(name):
    """The path of a legacy-mangled Rust symbol (`_ZN4core3fmt5write17h..E`)."""
    if not name.startswith("_ZN"):
        return name
    i, parts = 3, []
    while i < len(name) and name[i] != "E":
        m = re.match(r"\d+", name[i:])
        if not m:
            break
        n = int(m.group())
        i += len(m.group())
        parts.append(name[i:i + n])
        i += n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    path = "::".join(parts)
    for a, b in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","), ("..", "::"), ("$u7b$", "{"), ("$u7d$", "}")):
        path = path.replace(a, b)
    # `<T as Trait>::f` and `<T>::f`: count under T's path.
    m = re.match(r"<([^ >]+)", path)
    if m:
        path = m.group(1).lstrip("&") + path[m.end():].split(">::", 1)[-1] if ">::" in path else m.group(1)
    return path


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    b = open(sys.argv[1], "rb").read()
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    prefixes = sys.argv[3:]
    imports, bodies, names = 0, [], {}
    for sid, payload in sections(b):
        if sid == 2:
            imports = imported_functions(payload)
        elif sid == 10:
            n, i = leb(payload, 0)
            for _ in range(n):
                size, j = leb(payload, i)
                bodies.append(size + (j - i))
                i = j + size
        elif sid == 0:
            ln, i = leb(payload, 0)
            if payload[i:i + ln] != b"name":
                continue
            i += ln
            while i < len(payload):
                sub = payload[i]
                size, j = leb(payload, i + 1)
                if sub == 1:
                    n, k = leb(payload, j)
                    for _ in range(n):
                        idx, k = leb(payload, k)
                        ln, k = leb(payload, k)
                        names[idx] = payload[k:k + ln].decode("utf-8", "replace")
                        k += ln
                i = j + size
    if not names:
        sys.exit("no name section: build without stripping symbols")
    total = sum(bodies)
    groups = Counter()
    for k, size in enumerate(bodies):
        path = demangle(names.get(imports + k, "?"))
        groups["::".join(path.split("::")[:depth])] += size
    print(f"{total:>10}  all code ({len(bodies)} functions)")
    for path, size in groups.most_common():
        if prefixes and not any(path.startswith(p) for p in prefixes):
            continue
        print(f"{size:>10}  {100 * size / total:5.1f}%  {path}")


if __name__ == "__main__":
    main()
