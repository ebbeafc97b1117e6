"""Run the fedeval Flower apps on a local simulation federation.

:func:`simulate` partitions a :class:`~fedeval.data.Federation` into one file
per simulated client, starts ``flwr.simulation.run_simulation`` with the
fedeval ClientApp and ServerApp, and returns what the ServerApp wrote
(``flower_result.json``; the report is next to it). It backs the CLI
shortcut ``fedeval flower-sim`` (:func:`run_flower_sim_command`) and the tests.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedeval.cli_common import (  # shared with cli: --help imports no flwr
    add_flower_sim_arguments,
    print_json,
)
from fedeval.data import Federation
from fedeval.privacy.models import PrivacyModel
from fedeval.privacy.sampling import assign_groups, uniform_seed
from fedeval.randomness import RNGLike, as_generator

__all__ = [
    "add_flower_sim_arguments",
    "quiet_flower_environment",
    "run_flower_sim_command",
    "run_flower_simulation",
    "simulate",
    "write_partitions",
]


def quiet_flower_environment(flwr_home: str | Path | None = None) -> None:
    """Set the environment a local simulation needs (DESIGN.md, Flower notes).

    No telemetry, no runtime dependency installation, and ``FLWR_HOME`` in a
    temporary directory unless already set.
    """
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    os.environ.setdefault("FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION", "1")
    if flwr_home is not None:
        os.environ["FLWR_HOME"] = str(flwr_home)
    else:
        os.environ.setdefault("FLWR_HOME", tempfile.mkdtemp(prefix="fedeval-flwr-home-"))
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")


def write_partitions(
    fed: Federation,
    n_clients: int,
    out_dir: str | Path,
    *,
    rng: RNGLike = None,
) -> tuple[list[Path], int]:
    """Write one CSV (``score``, ``label``) per simulated Flower client.

    Federation clients are spread over ``n_clients`` parts at random (each part
    gets whole federation clients); a federation with one example per client
    (no client column) is therefore split i.i.d. by example.

    Returns
    -------
    (paths, largest)
        ``paths[i]`` is partition i's file; ``largest`` the size of the largest
        part. It is a fact of the data, not a public bound: under DP the operator
        declares ``max-examples-per-client`` without looking at the clients' sizes.

    Raises
    ------
    ValueError
        Fewer federation clients than ``n_clients``, or a multiclass task.
    """
    if fed.kind != "binary":
        raise ValueError("Flower evaluation needs a binary task (1-D scores)")
    if n_clients < 1 or n_clients > fed.n_clients:
        raise ValueError(f"cannot split {fed.n_clients} client(s) into {n_clients} Flower clients")
    part = assign_groups(fed.n_clients, n_clients, as_generator(rng))[fed.client_index]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    paths = []
    largest = 0
    for i in range(n_clients):
        sel = part == i
        p = out / f"client_{i}.csv"
        pd.DataFrame({"score": fed.scores[sel], "label": fed.labels[sel]}).to_csv(p, index=False)
        paths.append(p)
        largest = max(largest, int(sel.sum()))
    return paths, largest


class _NoRunSimulationDeprecation(logging.Filter):
    """Drop flwr's notice that ``run_simulation`` is deprecated in favour of ``flwr run``.

    ``fedeval flower-sim`` is the in-process path on purpose (one command, no
    SuperLink); ``examples/flower`` shows ``flwr run`` and the deployment engine. The
    notice is noise for users of the command, who cannot act on it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not ("DEPRECATED FEATURE" in text and "run_simulation" in record.getMessage())


def run_flower_simulation(
    *,
    num_supernodes: int,
    client_config: Mapping[str, Any],
    server_config: Mapping[str, Any],
    num_cpus_per_client: float = 1.0,
    verbose: bool = False,
) -> dict[str, Any]:
    """Start one Flower simulation of the fedeval apps; return ``flower_result.json``.

    Parameters
    ----------
    num_supernodes : int
        Simulated nodes; node i has ``partition-id = i``.
    client_config : mapping
        ClientApp defaults (``data-path`` with ``{partition-id}``, columns, ...).
    server_config : mapping
        ServerApp settings; ``out-dir`` is where the report goes.

    Raises
    ------
    ValueError
        Settings the ServerApp refuses (:func:`~fedeval.flower.run_privacy.check_run`).
    RuntimeError
        The ServerApp failed (its error, e.g. not enough clients, is in the message).
    """
    quiet_flower_environment()
    from flwr.simulation import run_simulation

    from fedeval.flower.client_app import make_client_app
    from fedeval.flower.server_app import ERROR_FILE, RESULT_FILE, ServerSettings, make_server_app

    server = {"num-clients": num_supernodes, **dict(server_config)}
    ServerSettings.from_config(server)  # a refused run fails here, before Ray starts
    out = Path(str(server.get("out-dir", "fedeval-flower-report")))
    out.mkdir(parents=True, exist_ok=True)
    for f in (RESULT_FILE, ERROR_FILE):
        (out / f).unlink(missing_ok=True)
    flwr_logger = logging.getLogger("flwr")
    quiet = _NoRunSimulationDeprecation()
    flwr_logger.addFilter(quiet)
    try:
        run_simulation(
            server_app=make_server_app(server),
            client_app=make_client_app(client_config),
            num_supernodes=num_supernodes,
            backend_config={
                "client_resources": {"num_cpus": num_cpus_per_client, "num_gpus": 0.0},
                "init_args": {"logging_level": "ERROR", "log_to_driver": verbose},
            },
            verbose_logging=verbose,
        )
    finally:
        flwr_logger.removeFilter(quiet)
    if (out / ERROR_FILE).exists():
        raise RuntimeError((out / ERROR_FILE).read_text().strip())
    if not (out / RESULT_FILE).exists():
        raise RuntimeError("the Flower simulation ended without a result (see the log above)")
    result: dict[str, Any] = json.loads((out / RESULT_FILE).read_text())
    return result


def _privacy_setting(privacy: Sequence[PrivacyModel | str]) -> str | list[PrivacyModel]:
    """Short names travel as the run config's comma list, model objects as they are."""
    names = [p for p in privacy if isinstance(p, str)]
    if len(names) == len(privacy):
        return ",".join(names)
    if names:
        raise ValueError("give privacy as model objects or as short names, not a mix")
    return [p for p in privacy if not isinstance(p, str)]


def simulate(
    fed: Federation,
    n_clients: int,
    *,
    privacy: Sequence[PrivacyModel | str] = ("sa",),
    out_dir: str | Path = "fedeval-flower-report",
    data_dir: str | Path | None = None,
    rng: RNGLike = None,
    client_seed: int | None = None,
    max_examples_per_client: int | None = None,
    cohort_size: int | None = None,
    **server_options: Any,
) -> dict[str, Any]:
    """Evaluate ``fed`` on ``n_clients`` simulated Flower clients.

    Parameters
    ----------
    fed : Federation
        Binary task; split over the simulated clients by :func:`write_partitions`.
    n_clients : int
    privacy : sequence of privacy models, or of {"sa", "distdp", "ldp"}
        Evaluations to run, in order, in the same simulation. Short names are
        built from ``epsilon``, ``noise``, ``delta``, ... in ``server_options``
        (the run config's form); model objects are used as given.
    out_dir : path
        Report directory (``report.html``, ``report.md``, ``results.json``,
        ``flower_result.json``).
    data_dir : path, optional
        Where the partitions are written (default: a temporary directory).
    rng : int, Generator or None
        Partitioning and server randomness.
    client_seed : int, optional
        Tests only: makes the clients' noise reproducible.
    max_examples_per_client : int, optional
        The public bound on one client's examples (every client keeps at most
        that many, at random). Required under DP; secure aggregation alone
        takes the largest size the clients declare when it is not given.
    cohort_size : int, optional
        The number of clients the server selects, declared public: the height,
        the SecAgg+ parameters and the noise shares are planned from it and it
        is published as given, while the numbers of clients that took part are
        published only where the privacy model makes them public. Default:
        ``n_clients``, the simulated cohort, which the caller chose (it is a
        setting, not a fact of the data); 0 declares none (then a DP setting
        under which the number of clients is not public is refused).
    **server_options
        ServerApp settings with underscores for dashes (``epsilon=1.0``,
        ``height=6``, ``max_dropouts=1``, ``secagg=False``,
        ``allow_plaintext_shares=True``, ``allow_sa_with_dp=True``,
        ``total_epsilon=2.0``, ...).

    Returns
    -------
    dict
        The content of ``flower_result.json``.

    Raises
    ------
    ValueError
        Settings the ServerApp refuses, e.g. DP without ``max_examples_per_client``.
    """
    gen = as_generator(rng)
    data = (
        Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="fedeval-parts-"))
    )
    write_partitions(fed, n_clients, data, rng=gen)
    lo, hi = fed.score_range
    client_config: dict[str, Any] = {
        "data-path": str(data / "client_{partition-id}.csv"),
        "score-column": "score",
        "label-column": "label",
        "score-min": lo,
        "score-max": hi,
    }
    if client_seed is not None:
        client_config["client-seed"] = int(client_seed)
    server: dict[str, Any] = {
        "privacy": _privacy_setting(privacy),
        "score-min": lo,
        "score-max": hi,
        "max-examples-per-client": int(max_examples_per_client or 0),
        "cohort-size": int(n_clients if cohort_size is None else cohort_size),
        "out-dir": str(out_dir),
        "seed": uniform_seed(gen),
    }
    for k, v in server_options.items():
        if v is not None:
            server[k.replace("_", "-")] = v
    return run_flower_simulation(
        num_supernodes=n_clients, client_config=client_config, server_config=server
    )


# ------------------------------------------------------------------------ CLI
def run_flower_sim_command(args: argparse.Namespace) -> int:
    """Handler of ``fedeval flower-sim``: partition FILE over N clients and run the apps.

    Returns 0 on success; raises ValueError on bad input (the CLI prints it and
    exits with status 2).
    """
    import importlib.util

    import fedeval as fe

    if importlib.util.find_spec("flwr") is None:
        raise ValueError("fedeval flower-sim needs the flower extra: pip install 'fedeval[flower]'")
    if args.clients < 3:
        raise ValueError(f"--clients must be >= 3 (SecAgg+ needs 3 clients), got {args.clients}")
    if any(p != "sa" for p in args.privacy) and args.epsilon is None:
        raise ValueError("--privacy distdp/ldp needs --epsilon")
    fed = fe.read(
        args.file,
        score=args.score,
        label=args.label,
        client=args.client,
        score_range=(args.score_min, args.score_max),
    )
    try:
        result = simulate(
            fed,
            args.clients,
            privacy=args.privacy,
            out_dir=args.out,
            rng=args.seed,
            epsilon=args.epsilon,
            noise=args.noise,
            delta=args.delta,
            height=args.height,
            branching=args.branching,
            n_buckets=args.buckets,
            n_quantiles=args.quantiles,
            max_dropouts=args.max_dropouts,
            min_clients=args.min_clients,
            clip_probability=args.clip_probability,
            max_examples_per_client=args.max_examples_per_client,
            secagg=not args.no_secagg,
            allow_plaintext_shares=args.allow_plaintext_shares,
            allow_sa_with_dp=args.allow_sa_with_dp,
            total_epsilon=args.total_epsilon,
            total_delta=args.total_delta,
            thresholds=",".join(str(t) for t in args.thresholds),
        )
    except RuntimeError as exc:
        raise ValueError(f"Flower simulation failed: {exc}") from None
    if args.json:
        # The evaluation schema of `fedeval evaluate --json` (estimates, standard errors,
        # receipts; written by the ServerApp as results.json), plus the run's facts. The
        # released sums themselves stay in flower_result.json.
        payload = json.loads((Path(args.out) / "results.json").read_text())
        payload["flower"] = _run_summary(result)
        out = Path(args.out)
        payload["report"] = {
            "html": str(out / "report.html"),
            "markdown": str(out / "report.md"),
            "json": str(out / "results.json"),
            "flower_result": str(out / "flower_result.json"),
        }
        print_json(payload)
        return 0
    from fedeval.cli_common import public_facts

    models = [_model_of(p, args) for p in args.privacy]
    print(_input_line(public_facts(fed, models), args))
    for name, ev in result["evaluations"].items():
        print(f"{name:>16}: ROC AUC {ev['roc_auc']:.4f}  {_counts_text(ev)}")
        print(f"{'':>18}{ev['guarantee']}")
        if "note" in ev:
            print(f"{'':>18}note: {ev['note']}")
    total = result["privacy_ledger"]["total"]
    if total is not None:
        delta = f", δ={total['delta']:.3g}" if total["delta"] else ""
        print(
            f"\n{'run total':>16}: ε={total['epsilon']:.4g}{delta}, neighbours "
            f"{total['neighbouring']} (one ledger over the DP settings)"
        )
    if result["privacy_ledger"]["exact_release"]:
        print(f"{'':>18}{result['privacy_ledger']['exact_release']}")
    print("(failed or rejected clients are named in the server log, not in the result)")
    print(f"\nreport: {Path(args.out) / 'report.html'}")
    return 0


def _input_line(facts: Mapping[str, Any], args: argparse.Namespace) -> str:
    """What ``flower-sim`` ran on: the file (public facts only) and the simulated cohort.

    The file's own clients (one per row without ``--client``) are not the Flower
    clients: its rows, or its clients, are split over ``--clients`` simulated
    clients, the cohort the command declares public.
    """
    lo, hi = facts["score_range"]
    m = facts["n_examples"]
    examples = f"{m:,} examples" if m is not None else "number of examples not public"
    parts = "its rows" if args.client is None else f"its clients (column {args.client!r})"
    return (
        f"input: {facts['kind']} task, {examples}, score domain [{lo:g}, {hi:g}]\n"
        f"Flower simulation: {parts} split over {args.clients} simulated clients "
        "(the cohort size, declared public)"
    )


def _counts_text(ev: Mapping[str, Any]) -> str:
    """One evaluation's client counts, timing and bytes, where the counts are public."""
    facts = ev["facts"]
    timing = f"{ev['wall_seconds']:.2f}s"
    if facts["n_used"] is None:
        return f"clients used, failed and rejected: not public under this model  {timing}"
    return (
        f"clients used {facts['n_used']}/{facts['n_selected']}  failed {facts['n_failed']}  "
        f"rejected {facts['n_rejected']}  {timing}  {ev['bytes_sent_per_client']:.0f} B/client"
    )


_RAW_KEYS = ("released_sum", "released_levels")


def _run_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """``flower_result.json`` without the released vectors (facts, timing, bytes, ledger)."""
    out = {k: v for k, v in result.items() if k != "evaluations"}
    out["evaluations"] = {
        name: {k: v for k, v in ev.items() if k not in _RAW_KEYS}
        for name, ev in result.get("evaluations", {}).items()
    }
    return out


def _model_of(name: str, args: argparse.Namespace) -> PrivacyModel:
    """The model a ``--privacy`` name of ``fedeval flower-sim`` stands for (for public facts)."""
    from fedeval.privacy.models import privacy_model

    if name == "sa":
        return privacy_model("sa")
    kwargs: dict[str, Any] = {"noise": args.noise} if name == "distdp" else {}
    return privacy_model(name, epsilon=args.epsilon, delta=args.delta, **kwargs)
