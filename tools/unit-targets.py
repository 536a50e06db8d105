#!/usr/bin/env python3
"""Prints the ninja outputs that the "unit" suite of a meson build dir needs (its test programs
and what they depend on), so that the sanitizer build compiles only those:
    ninja -C build-asan $(tools/unit-targets.py build-asan)"""
import json
import os
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build-asan"
info = json.loads(subprocess.check_output(
    ["meson", "introspect", build, "--tests", "--targets"]))
targets = {t["id"]: t for t in info["targets"]}
wanted = set()
for test in info["tests"]:
    if "husk:unit" in test["suite"]:
        wanted.update(test["depends"])
root = os.path.realpath(build)
outs = sorted(os.path.relpath(f, root) for i in wanted for f in targets[i]["filename"])
if not outs:
    sys.exit(f"{sys.argv[0]}: no unit tests in {build}")
print(" ".join(outs))
