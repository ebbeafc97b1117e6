"""Benchmark: the exact noise samplers against the floating-point ones they replaced (issue 24).

Times, on the same bit generator and interleaved run by run:

* discrete Laplace, ``--n-laplace`` draws (default 2^24) at ε/Δ ∈ {1, 0.125, 0.01}:
  the exact sampler (:class:`fedeval.privacy.mechanisms.exact_sampling.LaplaceSampler`
  as :func:`~fedeval.privacy.mechanisms.exact_sampling.sampler_for` chooses it for a
  large draw, what ``PolyaShares.sample_sum`` and ``DiscreteLaplace.sample`` use: half
  words at ε/Δ = 1 and 0.125, 63-bit words at 0.01) against a frozen
  copy of the removed ``discrete_laplace_by_inversion`` (53-bit float inversion,
  whose pmf has holes in its tail);
* discrete Gaussian, ``--n-gaussian`` draws (default 2^20) at σ ∈ {1, 10, 1000}:
  the exact vectorised CKS sampler (``DiscreteGaussian.sample``) against a frozen copy
  of the removed float sampler (numpy ``geometric`` proposals, float acceptance test);

each on PCG64 and on randomgen's ChaCha(rounds=20) (skipped if randomgen is missing).
Every cell is the range (min–max) over ``--repeats`` runs (default 3) of the time
and of the new/old ratio within a run; within a run the two samplers alternate in
blocks of 2^20 draws, so both see the same load on a shared machine. Target (printed, not asserted): discrete
Laplace new ≤ 1.5× old in every run. The 1-, 5- and 15-minute load averages
(``os.getloadavg``) are printed before and after: the machine is shared.

Run: ``.venv/bin/python benchmarks/bench_samplers.py [--repeats 5] [--n-laplace 1048576]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from fedeval.privacy.mechanisms.exact_sampling import gaussian_sampler, sampler_for

TARGET = 1.5
RATES = (Fraction(1), Fraction(1, 8), Fraction(1, 100))
SIGMAS = (1.0, 10.0, 1000.0)


# ------------------------------------------------------------------ frozen baselines


def old_discrete_laplace(alpha: float, n: int, gen: np.random.Generator) -> NDArray[np.int64]:
    """``discrete_laplace_by_inversion`` as it was before issue 24 (frozen copy, baseline)."""
    chunk_size = 1 << 16
    out = np.empty(n, dtype=np.int64)
    a = float(alpha)
    to_v = (1.0 + a) / (2.0 * a)
    per_log = 1.0 / math.log(a)
    chunk = min(n, chunk_size)
    v = np.empty(chunk, dtype=np.float64)
    sign = np.empty(chunk, dtype=np.int64)
    draw = gen.bit_generator.random_raw
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        raw = np.asarray(draw(m), dtype=np.uint64)
        vm, sm, o = v[:m], sign[:m], out[start : start + m]
        np.bitwise_and(raw, np.uint64(1), out=sm, casting="unsafe")
        np.right_shift(raw, np.uint64(11), out=raw)
        np.multiply(raw, -(2.0**-53), out=vm, casting="unsafe")
        vm += 1.0
        vm *= to_v
        np.log(vm, out=vm)
        vm *= per_log
        np.floor(vm, out=vm)
        np.copyto(o, vm, casting="unsafe")
        o += 1
        np.maximum(o, 0, out=o)
        np.negative(sm, out=sm)
        o ^= sm
        o -= sm
    return out


def old_discrete_gaussian(sigma: float, n: int, gen: np.random.Generator) -> NDArray[np.int64]:
    """``DiscreteGaussian.sample`` as it was before issue 24 (frozen copy, baseline)."""
    out = np.empty(n, dtype=np.int64)
    sigma2 = sigma**2
    t = math.floor(sigma) + 1
    p = 1.0 - math.exp(-1.0 / t)
    shift = sigma2 / t
    filled = 0
    rate = 0.5
    while filled < n:
        need = n - filled
        batch = int(need / rate * 1.1) + 64
        y = gen.geometric(p, size=batch).astype(np.int64) - gen.geometric(p, size=batch)
        accept_prob = np.exp(-((np.abs(y) - shift) ** 2) / (2.0 * sigma2))
        accepted = y[gen.random(batch) < accept_prob]
        rate = max(accepted.size / batch, 0.05)
        take = min(accepted.size, need)
        out[filled : filled + take] = accepted[:take]
        filled += take
    return out


# ------------------------------------------------------------------ timing


def bit_generators() -> dict[str, Callable[[int], np.random.BitGenerator]]:
    out: dict[str, Callable[[int], np.random.BitGenerator]] = {"PCG64": np.random.PCG64}
    try:
        from randomgen import ChaCha
    except ImportError:  # pragma: no cover - optional extra
        print("randomgen is not installed: ChaCha rows skipped")
        return out
    out["ChaCha20"] = lambda seed: ChaCha(seed=seed, rounds=20)
    return out


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def span(values: list[float], fmt: str) -> str:
    return f"{fmt.format(min(values))}–{fmt.format(max(values))}"


def run(
    name: str,
    old: Callable[[np.random.Generator, int], object],
    new: Callable[[np.random.Generator, int], object],
    n: int,
    make: Callable[[int], np.random.BitGenerator],
    repeats: int,
) -> tuple[str, list[float]]:
    """Time n draws of each, ``repeats`` times; within a run the two alternate in blocks.

    A run draws n values with each sampler in blocks of at most 2^20, old and new
    taking turns (and turns going first), so that both see the same machine load;
    its time is the sum over blocks.
    """
    gen = np.random.Generator(make(2024))
    block = min(n, 1 << 20)
    new(gen, block)  # build and cache the tables outside the timed runs
    olds, news, ratios = [], [], []
    for _ in range(repeats):
        t_old = t_new = 0.0
        for i, start in enumerate(range(0, n, block)):
            m = min(block, n - start)
            if i % 2:
                t_new += timed(lambda m=m: new(gen, m))
                t_old += timed(lambda m=m: old(gen, m))
            else:
                t_old += timed(lambda m=m: old(gen, m))
                t_new += timed(lambda m=m: new(gen, m))
        olds.append(t_old)
        news.append(t_new)
        ratios.append(t_new / t_old)
    row = (
        f"{name:<34s} {span(olds, '{:.3f}'):>13s} {span(news, '{:.3f}'):>13s} "
        f"{span(ratios, '{:.2f}'):>11s}"
    )
    return row, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-laplace", type=int, default=1 << 24)
    parser.add_argument("--n-gaussian", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    header = f"{'sampler':<34s} {'old (s)':>13s} {'new (s)':>13s} {'new/old':>11s}"
    laplace_ratios: list[float] = []
    for bg_name, make in bit_generators().items():
        print(f"\n{bg_name}: {args.n_laplace} discrete Laplace / {args.n_gaussian} Gaussian draws")
        print(header)
        for rate in RATES:
            sampler = sampler_for(rate, 1 << 14)
            alpha = math.exp(-float(rate))
            row, ratios = run(
                f"discrete Laplace ε/Δ = {float(rate):g}",
                lambda g, m, a=alpha: old_discrete_laplace(a, m, g),
                lambda g, m, s=sampler: s.sample(m, g),
                args.n_laplace,
                make,
                args.repeats,
            )
            laplace_ratios += ratios
            print(row)
        for sigma in SIGMAS:
            exact = gaussian_sampler(Fraction(sigma))
            row, _ = run(
                f"discrete Gaussian σ = {sigma:g}",
                lambda g, m, s=sigma: old_discrete_gaussian(s, m, g),
                lambda g, m, e=exact: e.sample(m, g),
                args.n_gaussian,
                make,
                args.repeats,
            )
            print(row)
    worst = max(laplace_ratios)
    verdict = "PASS" if worst <= TARGET else "FAIL"
    print(f"\ndiscrete Laplace: worst new/old {worst:.2f} (target <= {TARGET}): {verdict}")
    print("load average (1, 5, 15 min) after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
