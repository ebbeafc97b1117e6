"""Write one CSV of scores and labels per simulated client, and print the `flwr run` command.

    python -m fedeval_flower_example.prepare_data --clients 20 --out data

Scores come from a small generated task (two overlapping normal score
distributions), so the example needs no download.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import fedeval as fe
from fedeval.flower.simulate import write_partitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--out", default="data")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    labels = rng.integers(0, 2, args.examples)
    scores = np.clip(rng.normal(0.4 + 0.25 * labels, 0.15), 0.0, 1.0)
    fed = fe.Federation.from_arrays(scores, labels)
    out = Path(args.out).resolve()
    write_partitions(fed, args.clients, out, rng=rng)
    report = out.parent / "fedeval-flower-report"
    # The bound on a client's examples is a public input the operator declares; it must
    # not be read off the data (that would publish the largest client's size). Here it
    # is the design of the generated data: the examples are split evenly, so no file
    # holds more than ceil(examples / clients) of them (200 with the defaults).
    bound = max(-(-args.examples // args.clients), 1)
    print(f"wrote {args.clients} client files to {out}")
    print("run the evaluation with:")
    # The cohort is the number of simulated SuperNodes: a setting, declared public.
    print(
        f'  flwr run . --stream --run-config \'data-path="{out}/client_{{partition-id}}.csv" '
        f'out-dir="{report}" max-examples-per-client={bound} cohort-size={args.clients}\''
    )


if __name__ == "__main__":
    main()
