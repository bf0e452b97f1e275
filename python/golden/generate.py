#!/usr/bin/env python3
"""Write the golden vectors of tests/golden/ by executing the installed upstream code.

    python/golden/make.sh [OUT_DIR]            (makes the pinned venv when it is missing, then runs this)
    generate.py [--out DIR] [--family NAME]...

Every `expected` value is what agentlightning 1.0.x / verl (0.8.0, or 0.9.0 for the verl-0.9.0 reference stack) /
torch (CPU) returned for the recorded input;
nothing is re-implemented. Inputs are seeded, so a rerun on the same package versions writes the same files.
Schema: tests/golden/README.md (the schema of the shared golden vectors, plus the additions listed there).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # upstream messages print sets; a fixed hash seed keeps their order, and so the files, reproducible
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *argv],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    parser = argparse.ArgumentParser(prog="generate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "golden"))
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    from common import versions, write_family
    from families_agl import FAMILIES as AGL
    from families_verl import FAMILIES as VERL

    families = {**VERL, **AGL}
    unknown = sorted(set(args.family or []) - set(families))
    if unknown:
        print(f"generate.py: unknown families {unknown}; known: {sorted(families)}", file=sys.stderr)
        return 2
    v = versions()
    print(f"golden: agentlightning {v['agentlightning']} + verl {v['verl']} + torch {v['torch']}", file=sys.stderr)
    for name in args.family or families:
        source, make = families[name]
        cases = make()
        path = write_family(os.path.abspath(args.out), name, source, cases)
        n_raise = sum(1 for c in cases if isinstance(c["expected"], dict) and "raises" in c["expected"])
        print(f"golden: {path}: {len(cases)} cases ({n_raise} raising)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
