#!/usr/bin/env python3
"""Prints the failures in go test -json logs (scripts/flakehunt.sh writes
them): for each log, the tests that failed and the last lines each
printed, and any line that is not JSON (a build error, a panic's tail).

Usage: python3 scripts/flakehunt_fails.py LOG.json...
"""
import collections
import json
import sys


def main(paths):
    for path in paths:
        output = collections.defaultdict(list)
        failed, other = [], []
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    other.append(line)
                    continue
                test, action = e.get("Test"), e.get("Action")
                if action == "output" and test:
                    output[test].append(e["Output"])
                elif action == "fail":
                    failed.append(test or "(package)")
        if failed:
            print(f"== {path}: failed {failed}")
            for test in dict.fromkeys(failed):
                lines = [l for l in output.get(test, []) if not l.startswith("=== ")]
                print(f"  -- {test}")
                sys.stdout.write("".join("     " + l for l in lines[-30:]))
        if other:
            print(f"== {path}: lines that are not JSON")
            sys.stdout.write("".join(other[-20:]))


if __name__ == "__main__":
    main(sys.argv[1:])
