#!/usr/bin/env python3
"""tests/client_stub/coverage_test.py - the stub libraries' exports against the call table.

For each stub library, every symbol it exports must be an entry point of
client_stub/<name>_entries.def (served: the calls.def rows it may send, or LOCAL) or a
refusal of client_stub/<name>_refused.def, and not both; every row an entry names must be a
row of proto/calls.def; and every row the server handles for tenants (SYNC or ORDERED, below
the administration ids) must be sent by some entry point of some library. Removing a row, a
refusal or an entry fails here.

usage: coverage_test.py <source root> <name>=<library> ...   (name: cudart, cublas, ...)
"""
import re
import subprocess
import sys


def exported_by(lib):
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        check=True).stdout
    names = {f[2].split("@")[0] for f in (l.split() for l in nm.splitlines()) if len(f) >= 3}
    return {s for s in names if not s.startswith("lib")}


def read(path):
    try:
        return open(path).read()
    except FileNotFoundError:
        return ""


def main():
    root, libs = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    rows = {m[1]: (int(m[0]), m[2]) for m in re.findall(
        r"^REMORA_CALL\(\s*(\d+),\s*(\w+),\s*(\w+)", read(f"{root}/proto/calls.def"), re.M)}
    errors, sent = [], set()
    for name, lib in sorted(libs.items()):
        exported = exported_by(lib)
        refused = set(re.findall(r"^REFUSED\((\w+)\)",
                                 read(f"{root}/client_stub/{name}_refused.def"), re.M))
        entries = dict(re.findall(r'^REMORA_ENTRY\((\w+), "([^"]*)"\)',
                                  read(f"{root}/client_stub/{name}_entries.def"), re.M))
        for s in sorted(exported - refused - set(entries)):
            errors.append(f"{name}: {s}: exported, but neither an entry point nor a refusal")
        for s in sorted(refused & set(entries)):
            errors.append(f"{name}: {s}: both an entry point and a refusal")
        for s in sorted(set(entries) - exported):
            errors.append(f"{name}: {s}: an entry point the library does not export")
        for s, named in entries.items():
            if named == "LOCAL":
                continue
            for r in named.split():
                if r not in rows:
                    errors.append(f"{name}: {s}: sends {r}, which is not a row of calls.def")
                sent.add(r)
        print(f"{name}: {len(exported)} exports: {len(entries)} entry points, "
              f"{len(refused)} refusals")
    for r, (rid, cls) in sorted(rows.items()):
        if rid < 3000 and cls in ("SYNC", "ORDERED") and r not in sent and r != "Goodbye":
            errors.append(f"calls.def row {r}: no entry point sends it")
    for e in errors:
        print(e)
    print(f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
