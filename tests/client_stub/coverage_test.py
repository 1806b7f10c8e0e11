#!/usr/bin/env python3
"""tests/client_stub/coverage_test.py - the stub's libcudart exports against the call table.

Every symbol the stub's libcudart.so.13 exports must be an entry point of
client_stub/cudart_entries.def (served: the calls.def rows it may send, or LOCAL) or a
refusal of client_stub/cudart_refused.def, and not both; every row an entry names must be a
row of proto/calls.def; and every runtime row the server handles (ids below 1000, SYNC or
ORDERED) must be sent by some entry point. Removing a row, a refusal or an entry fails here.

usage: coverage_test.py <libcudart.so.13> <source root>
"""
import re
import subprocess
import sys


def main():
    lib, root = sys.argv[1], sys.argv[2]
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        check=True).stdout
    exported = {f[2].split("@")[0] for f in (l.split() for l in nm.splitlines()) if len(f) >= 3}
    exported = {s for s in exported if not s.startswith("lib")}
    refused = set(re.findall(r"^REFUSED\((\w+)\)", open(f"{root}/client_stub/cudart_refused.def").read(),
                             re.M))
    entries = dict(re.findall(r'^REMORA_ENTRY\((\w+), "([^"]*)"\)',
                              open(f"{root}/client_stub/cudart_entries.def").read(), re.M))
    rows = {m[1]: (int(m[0]), m[2]) for m in re.findall(
        r"^REMORA_CALL\(\s*(\d+),\s*(\w+),\s*(\w+)", open(f"{root}/proto/calls.def").read(), re.M)}
    errors = []
    for s in sorted(exported - refused - set(entries)):
        errors.append(f"{s}: exported, but neither an entry point nor a refusal")
    for s in sorted(refused & set(entries)):
        errors.append(f"{s}: both an entry point and a refusal")
    for s in sorted(set(entries) - exported):
        errors.append(f"{s}: an entry point the library does not export")
    sent = set()
    for s, named in entries.items():
        if named == "LOCAL":
            continue
        for r in named.split():
            if r not in rows:
                errors.append(f"{s}: sends {r}, which is not a row of calls.def")
            sent.add(r)
    for r, (rid, cls) in sorted(rows.items()):
        if rid < 1000 and cls in ("SYNC", "ORDERED") and r not in sent and r != "Goodbye":
            errors.append(f"calls.def row {r}: no entry point sends it")
    for e in errors:
        print(e)
    print(f"{len(exported)} exports: {len(entries)} entry points, {len(refused)} refusals; "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
