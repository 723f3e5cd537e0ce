#!/usr/bin/env python3
"""Compares the losses of the first N steps of two receipt files (rank-0.jsonl).

Usage: compare_losses.py A.jsonl B.jsonl STEPS RELATIVE_TOLERANCE [FIRST_STEP_TOLERANCE]
Prints `max_rel_diff=<x> steps=<n> first_step=<y>` and exits 0 when every
step's losses agree within the tolerance (|a - b| <= tol * |b|; step 1 within
FIRST_STEP_TOLERANCE when given), 1 when not, 2 on unreadable input. Step 1's
loss is the forward pass of the initial parameters alone, before any update
amplifies an order difference: it holds a tighter tolerance.
"""
import json
import sys


def losses(path, steps):
    values = {}
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            values[record["step"]] = float(record["loss"])
    missing = [step for step in range(1, steps + 1) if step not in values]
    if missing:
        raise ValueError(f"{path}: no receipt for step(s) {missing}")
    return [values[step] for step in range(1, steps + 1)]


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    steps, tolerance = int(sys.argv[3]), float(sys.argv[4])
    first_tolerance = float(sys.argv[5]) if len(sys.argv) == 6 else tolerance
    try:
        first, second = losses(sys.argv[1], steps), losses(sys.argv[2], steps)
    except (OSError, ValueError, KeyError) as error:
        print(f"compare_losses.py: error: {error}", file=sys.stderr)
        return 2
    differences = [abs(a - b) / max(abs(b), 1e-30) for a, b in zip(first, second)]
    worst = max(differences)
    print(f"max_rel_diff={worst:.3g} steps={steps} first_step={differences[0]:.3g}")
    for step, (a, b) in enumerate(zip(first, second), start=1):
        print(f"  step {step}: {a!r} vs {b!r}", file=sys.stderr)
    return 0 if worst <= tolerance and differences[0] <= first_tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
