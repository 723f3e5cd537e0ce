"""The ctest label `unit` is on exactly the tests of the unit-test programs.

  unit_label_test.py CTEST BUILD_DIR PROGRAM...

PROGRAM...: every GoogleTest program tests/unit/CMakeLists.txt defines. Reads ctest's own
description of the tests (--show-only=json-v1) and fails, naming them, on a
test of such a program without the label, a labelled test that runs something
else, or a program with no labelled test at all (tools/test-all.sh would skip
it under the sanitizers without a word).
"""

import json
import os
import subprocess
import sys


def labels_of(test):
    for prop in test.get("properties", []):
        if prop.get("name") == "LABELS":
            return set(prop.get("value", []))
    return set()


def main():
    ctest, build_dir = sys.argv[1], sys.argv[2]
    programs = {os.path.realpath(p) for p in sys.argv[3:]}
    if not programs:
        print("FAIL: no unit-test programs given")
        return 1
    # ctest names a test's program only once it exists.
    missing = sorted(p for p in programs if not os.path.exists(p))
    if missing:
        print("FAIL: not built (cmake --build BUILD --target unit_tests):\n  " + "\n  ".join(missing))
        return 1
    listing = subprocess.run([ctest, "--test-dir", build_dir, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    tests = json.loads(listing.stdout)["tests"]
    problems = []
    covered = set()
    for test in tests:
        command = test.get("command") or [""]
        program = os.path.realpath(command[0]) if command[0] else ""
        labelled = "unit" in labels_of(test)
        if program in programs:
            covered.add(program)
            if not labelled:
                problems.append(f"{test['name']} runs a unit-test program but has no label unit")
        elif labelled:
            problems.append(f"{test['name']} has the label unit but runs {command[0]!r}")
    for program in sorted(programs - covered):
        problems.append(f"{program}: no test of this unit-test program is labelled unit")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"PASS: {len(tests)} tests, {sum('unit' in labels_of(t) for t in tests)} labelled unit, "
          f"from {len(programs)} programs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
