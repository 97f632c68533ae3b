"""The ``conformance`` command: replay a repro bundle, or merge results into a report.

Misuse never ends in a traceback: a wrong argument is a usage error (argparse's message,
exit status 2) and an unusable file is one line on stderr saying what is wrong with it and
what was expected (exit status 1). The heavy imports (PyTensor, the harness) happen only in
the subcommand that needs them.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from conformance import converters
from conformance.schema import Invalid, one_line


def _converter(spec: str):
    """``--converter module:callable``, loaded (an argparse ``type``)."""
    try:
        return converters.load(spec)
    except converters.ConverterSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _output(name: str) -> Path:
    """``-o``: the HTML file to write; results.json is written next to it."""
    path = Path(name)
    if path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{name!r} is a folder; expected the HTML file to write, e.g. "
            f"{str(path / 'conformance.html')!r}")
    if path.name == "results.json":
        raise argparse.ArgumentTypeError(
            f"{name!r}: the results are written next to the report as results.json, so the "
            "report needs another name, e.g. conformance.html")
    if path.with_name("results.json").is_dir():
        raise argparse.ArgumentTypeError(
            f"{name!r}: {str(path.with_name('results.json'))!r}, where the results go, is a "
            "folder")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise argparse.ArgumentTypeError(f"{name!r}: {str(parent)!r} is a file, not a folder")
    return path


def _bundle_folder(args) -> Path:
    """The bundle folder named by the argument: a folder, or a test id under --report-dir."""
    from conformance.bundle import bundle_name

    folder = Path(args.bundle)
    if not folder.is_dir():
        folder = Path(args.report_dir) / "repro" / bundle_name(args.bundle)
        if not args.bundle or not bundle_name(args.bundle) or not folder.is_dir():
            args.parser.error(f"{args.bundle!r} is neither a bundle folder nor a test id with a "
                              f"bundle under {folder.parent}")
    if not (folder / "meta.json").is_file():
        args.parser.error(f"{str(folder)!r} is not a repro bundle: it has no meta.json; expected "
                          "a folder written by a conformance run, e.g. reports/repro/exp-float32")
    return folder


def _spec(meta: dict, folder: Path):
    """The test a bundle replays, with every name in it checked against this checkout."""
    from conformance.backends import BACKENDS, REFERENCE
    from conformance.bundle import BundleError
    from conformance.harness import Spec
    from conformance.registries import all_rows

    rows = {row.name: row for row in all_rows()}
    row = rows.get(meta["row"])
    if row is None:
        close = difflib.get_close_matches(meta["row"], list(rows), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise BundleError(f"{folder}: meta.json row {meta['row']!r} is not one of the "
                          f"{len(rows)} registry rows{hint}")
    unknown = [b for b in meta["backends"] if b not in BACKENDS]
    if unknown:
        raise BundleError(f"{folder}: meta.json backends {unknown} are unknown; expected names "
                          f"from {', '.join(BACKENDS)}")
    backends = tuple(dict.fromkeys([REFERENCE.name, *meta["backends"]]))
    if len(backends) < 2:
        raise BundleError(f"{folder}: meta.json backends name only the reference "
                          f"{REFERENCE.name!r}, so nothing would be compared; expected at least "
                          f"one of {', '.join(b for b in BACKENDS if b != REFERENCE.name)}")
    return Spec(row, meta["dtype"], meta["opset"], backends, meta.get("opset_label", ""))


def _repro(args) -> int:
    from conformance.bundle import load_case
    from conformance.harness import Harness

    folder = _bundle_folder(args)
    try:
        meta, case = load_case(folder)
        spec = _spec(meta, folder)
    except Invalid as exc:
        print(f"conformance repro: {exc}", file=sys.stderr)
        return 1
    # the bundle's case is judged on every backend, whatever layouts a run would batch
    harness = Harness(args.converter, c_all_layouts=True)
    try:
        harness.graph(spec, case)
    # params and layouts come from the file; the row's build function may refuse them any way
    except Exception as exc:  # noqa: BLE001
        print(f"conformance repro: {folder}: row {spec.row.name!r} cannot build a graph from the "
              f"bundle's case ({one_line(exc)}); expected the static layouts and params the run "
              "recorded", file=sys.stderr)
        return 1
    outcome = harness.run(spec, case)
    print(f"case: {outcome.description}  (opset {spec.opset})")
    for verdict in outcome.verdicts:
        status = verdict.outcome.upper()
        print(f"  {verdict.backend:<16} {status:<5} {verdict.comparison.message}")
    if not outcome.verdicts:
        print(f"conformance repro: no backend judged the case (backends: "
              f"{', '.join(spec.backends)}), so nothing can be said about the failure",
              file=sys.stderr)
        return 1
    if outcome.unexpected:
        print(f"still failing; blame: {outcome.blame}")
        return 1
    print("no unexpected disagreement: the failure is gone")
    return 0


def _result_paths(args) -> list[Path]:
    paths = []
    for name in args.results:
        path = Path(name)
        if not path.exists():
            args.parser.error(f"{name!r} does not exist; expected a results .jsonl file, a run "
                              "folder or a results.json file")
        # a folder: its run files, or those of the runs below it (a shard's .runs folder)
        found = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        if not found:
            args.parser.error(f"{name!r} holds no .jsonl results files")
        paths.extend(found)
    if any(p.suffix == ".json" for p in paths) and len(paths) > 1:
        args.parser.error("a results .json file is rendered on its own; to combine runs, pass "
                          "their .jsonl files or run folders")
    for name in args.baseline:
        if not Path(name).exists():
            args.parser.error(f"--baseline {name!r} does not exist; expected an earlier "
                              "results.json, a .jsonl file or a run folder")
    return paths


def _report(args) -> int:
    from conformance import inputs, trend
    from conformance.report import render_report
    from conformance.results import DuplicateShard, write_results

    paths = _result_paths(args)

    def warn(message: str) -> None:
        print(f"conformance report: warning: {message}", file=sys.stderr)

    try:
        if paths[0].suffix == ".json":
            doc = inputs.load_document(paths[0], warn)
        else:
            doc = inputs.merge_files(paths, warn)
        baselines = [inputs.load_any(Path(name), warn) for name in args.baseline]
    except (Invalid, DuplicateShard) as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return 1
    if baselines:
        labels = [_run_label(b, name) for b, name in zip(baselines, args.baseline, strict=True)]
        doc["trend"] = trend.compute(doc, baselines, labels)
    out = args.output
    results = out.with_name("results.json")
    if any(Path(name).resolve() == results.resolve() for name in args.baseline):
        warn(f"{results} was a baseline and now holds this run's results (copy baselines "
             "elsewhere to keep them)")
    try:
        write_results(doc, results)
        print(render_report(doc, out))
    except OSError as exc:
        print(f"conformance report: cannot write {exc.filename or out}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return 0


def _run_label(doc: dict, name: str) -> str:
    """A baseline's short name: when it started (2026-01-31 12:00), else its file name."""
    started = str(doc.get("run", {}).get("started") or "")
    return started[:16].replace("T", " ") if started else Path(name).name


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    repro = sub.add_parser("repro", help="replay a repro bundle on every backend")
    repro.add_argument("bundle", help="a bundle folder, or a test id such as 'exp[float32]'")
    repro.add_argument("--converter", default="converter:to_onnx", type=_converter,
                       help="converter under test, module:callable (default: %(default)s)")
    repro.add_argument("--report-dir", default="reports")
    repro.set_defaults(func=_repro, parser=repro)
    report = sub.add_parser("report", help="merge results (JSON lines) into one HTML report")
    report.add_argument("results", nargs="+",
                        help="results .jsonl files or run folders holding them, or one "
                             "results.json file")
    report.add_argument("-o", "--output", default="reports/conformance.html", type=_output)
    report.add_argument("--baseline", action="append", default=[], metavar="FILE",
                        help="an earlier results.json (or .jsonl file, or run folder) to show "
                             "the trend against; repeat for several, oldest first")
    report.set_defaults(func=_report, parser=report)
    # argparse reports usage errors by exiting; main returns every status instead
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


if __name__ == "__main__":
    sys.exit(main())
