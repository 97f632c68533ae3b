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

from conformance.core import converters
from conformance.core.schema import Invalid, one_line


def _converter(spec: str):
    """``--converter module:callable``, loaded (an argparse ``type``)."""
    try:
        return converters.load(spec)
    except converters.ConverterSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _named_converter(spec: str) -> tuple[str, object]:
    """``--converter module:callable`` as (spec, the loaded callable)."""
    return spec, _converter(spec)


def _replay_converter(args, meta: dict, folder: Path):
    """The converter a bundle replays with: ``--converter`` if given, else the one the bundle
    records (bundles written before that was recorded: the project's). None, after one line
    on stderr, when it cannot be loaded."""
    if args.converter is not None:
        return args.converter[1]
    recorded = meta.get("converter")
    spec = recorded["spec"] if recorded else converters.PROJECT
    if recorded is None:
        print(f"conformance repro: warning: {folder} does not say which converter made it "
              f"(written before bundles recorded it); replaying with {spec}", file=sys.stderr)
    try:
        convert = converters.load(spec)
    except converters.ConverterSpecError as exc:
        print(f"conformance repro: {folder} was made with --converter {spec}, which cannot be "
              f"loaded here ({exc}); pass --converter module:callable to replay with another",
              file=sys.stderr)
        return None
    made_with, now = (recorded or {}).get("version"), converters.version(spec)
    if made_with != now and recorded is not None:
        print(f"conformance repro: warning: {folder} was made with {spec} version "
              f"{made_with}; replaying with version {now}", file=sys.stderr)
    return convert


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
    from conformance.core.bundle import bundle_name

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
    from conformance.core.bundle import BundleError
    from conformance.core.harness import Spec
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
    from conformance.core.bundle import load_case
    from conformance.core.harness import Harness

    folder = _bundle_folder(args)
    try:
        meta, case = load_case(folder)
        spec = _spec(meta, folder)
    except Invalid as exc:
        print(f"conformance repro: {exc}", file=sys.stderr)
        return 1
    convert = _replay_converter(args, meta, folder)
    if convert is None:
        return 1
    # the bundle's case is judged on every backend, whatever layouts a run would batch
    harness = Harness(convert, c_all_layouts=True)
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
    if outcome.unsupported:
        names = ", ".join(v.backend for v in outcome.unsupported)
        print(f"conformance repro: the converter refuses the case, so {names} had nothing to "
              "run and nothing can be said about the failure", file=sys.stderr)
        return 1
    print("no unexpected disagreement: the failure is gone")
    return 0


def _run_files(parser, names, *, verb: str, folder_results_json: bool = False) -> list[Path]:
    """The results files named on the command line: .jsonl files, run folders (their .jsonl
    files, or those of the runs below them: a shard's .runs folder) or one results.json;
    with ``folder_results_json``, a folder without .jsonl files may hold a results.json."""
    paths = []
    for name in names:
        path = Path(name)
        if not path.exists():
            parser.error(f"{name!r} does not exist; expected a results .jsonl file, a run "
                         "folder or a results.json file")
        found = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        if folder_results_json and path.is_dir() and not found and (
                path / "results.json").is_file():
            found = [path / "results.json"]
        if not found:
            parser.error(f"{name!r} holds no .jsonl results files"
                         + (" nor a results.json" if folder_results_json else ""))
        paths.extend(found)
    if any(p.suffix == ".json" for p in paths) and len(paths) > 1:
        parser.error(f"a results .json file is {verb} on its own; to combine runs, pass "
                     "their .jsonl files or run folders")
    return paths


def _result_paths(args) -> list[Path]:
    paths = _run_files(args.parser, args.results, verb="rendered")
    for name in args.baseline:
        if not Path(name).exists():
            args.parser.error(f"--baseline {name!r} does not exist; expected an earlier "
                              "results.json, a .jsonl file or a run folder")
    return paths


def _report(args) -> int:
    from conformance.core import inputs
    from conformance.core.results import DuplicateShard, write_results
    from conformance.report import render_report, trend

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


def _upstream_doc(args):
    """The results document of the runs given to ``conformance upstream`` (None: registry)."""
    from conformance.core import inputs

    if not args.runs:
        return None
    paths = _run_files(args.parser, args.runs, verb="read", folder_results_json=True)

    def warn(message: str) -> None:
        print(f"conformance upstream: warning: {message}", file=sys.stderr)

    if paths[0].suffix == ".json":
        return inputs.load_document(paths[0], warn)
    return inputs.merge_files(paths, warn)


def _upstream(args) -> int:
    import re

    import converter
    from conformance.registries import all_rows
    from conformance.upstream import issues as upstream

    try:
        doc = _upstream_doc(args)
    except Invalid as exc:
        print(f"conformance upstream: {exc}", file=sys.stderr)
        return 1
    upstream.inner_graphs_on_cvm()
    rows = all_rows()
    opset = args.opset or converter.default_opset()
    if doc is None:
        cells, unmatched = upstream.registry_cells(rows, opset), []
    else:
        cells, unmatched = upstream.results_cells(doc, rows)
    causes = upstream.group(cells)
    if args.only:
        pattern = re.compile(args.only)
        causes = [c for c in causes if pattern.search(c.slug)
                  or any(pattern.search(r) for r in c.records)
                  or any(pattern.search(f"{x.row.name}[{x.dtype}]") for x in c.cells)]
        if not causes:
            print(f"conformance upstream: --only {args.only!r} matches no root cause",
                  file=sys.stderr)
            return 1
    try:
        upstream.build(causes, args.converter,
                       progress=lambda text: print(f"  {text}", file=sys.stderr))
        summary = upstream.main_output(causes, args.output)
    except OSError as exc:
        print(f"conformance upstream: cannot write {exc.filename or args.output}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1
    for cause in causes:
        shown = sum(r.shown for r in cause.repros)
        print(f"{cause.slug}: {len(cause.records)} records, {len(cause.cells)} cells, "
              f"{shown}/{len(cause.repros)} cases show the bug"
              + (f"; already reported upstream: {cause.reported}" if cause.reported else ""))
    print(f"{summary['causes']} root causes covering {summary['records']} records "
          f"({summary['cells']} cells) written to {args.output}")
    status = 0
    for line in [*summary["problems"], *unmatched]:
        print(f"no script: {line}")
    if summary["problems"]:
        status = 1
    if args.verify:
        status = max(status, _verify(causes, args.output))
    if args.report and doc is not None:
        from conformance.report import render_report
        from conformance.upstream import upstream_issue

        doc["upstream"] = upstream_issue.report_entries(args.output, args.report)
        print(render_report(doc, args.report))
    elif args.report:
        print("conformance upstream: --report needs a run (its results are the report)",
              file=sys.stderr)
        return 2
    return status


def _verify(causes, out: Path) -> int:
    """Run each script in a clean interpreter; a cause whose cases show must exit 1."""
    from concurrent.futures import ThreadPoolExecutor

    from conformance.upstream import issues as upstream

    def check(cause):
        return cause, upstream.run_clean(out / cause.slug / "repro.py", python=sys.executable)

    bad = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for cause, (code, output) in pool.map(check, causes):
            # the script's rule: 1 while a case shows, else 3 if a case cannot be judged
            want = 1 if any(r.shown for r in cause.repros) else \
                3 if any(r.unjudged for r in cause.repros) else 0
            verdict = "verified" if code == want else f"MISMATCH (expected exit {want})"
            bad += code != want
            print(f"verify {cause.slug}: exit {code} {verdict}")
            if code != want:
                print("  " + "\n  ".join(output.strip().splitlines()[-8:]))
    return 1 if bad else 0


def _bisect(args) -> int:
    import json

    import converter
    from conformance.registries import all_rows
    from conformance.upstream import bisect
    from conformance.upstream import issues as upstream

    def log(text: str) -> None:
        print(f"  {text}", file=sys.stderr)

    upstream.inner_graphs_on_cvm()
    rows = all_rows()
    try:
        if Path(args.record).is_dir():
            cell = bisect.bundle_cell(Path(args.record), rows)
        else:
            cell = bisect.resolve(args.record, rows, args.opset or converter.MIN_OPSET,
                                  args.package)
        package = args.package or upstream.blamed_package(cell.known)
        if package is None:
            raise bisect.BisectError(f"{args.record!r}: the record names no package at fault; "
                                     "give --package")
        causes = upstream.group([cell])
        upstream.build(causes, args.converter)
        if causes[0].problems:
            raise bisect.BisectError(f"{args.record!r}: no script: {causes[0].problems[0]}")
        out = args.output or bisect.CACHE / "scripts"
        upstream.main_output(causes, out)
        script = out / causes[0].slug / "repro.py"
        print(f"record {cell.name}: {cell.known.reason}\nscript: {script}")
        found, skipped = bisect.releases(package, low=args.min, high=args.max)
    except (bisect.BisectError, Invalid) as exc:
        print(f"conformance bisect: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"conformance bisect: cannot write {exc.filename}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    for version, why in skipped.items():
        print(f"  {package} {version}: skipped, {why}")
    if not found:
        print(f"conformance bisect: no release of {package} between {args.min or 'the first'} "
              f"and {args.max or 'the last'} has a wheel for this Python", file=sys.stderr)
        return 1
    print(f"searching {len(found)} releases of {package}: {found[0]} .. {found[-1]}")
    result = bisect.search(found, bisect.judge_with(script, package, log), package)
    for version in sorted(result.tested, key=found.index):
        print(f"  {package} {version}: {result.tested[version]}")
    print(f"first tested release showing it: {result.first_shown or 'none'}")
    print(f"fixed in: {result.fixed or 'not fixed in a tested release'}"
          + (f"; since: {result.since}" if result.since else ""))
    if result.suggestion:
        print(f'suggested record bound: versions="{result.suggestion}"')
    (script.parent / "bisect.json").write_text(json.dumps(
        {**result.as_dict(), "record": cell.name,
         "since": result.since and f"{package} {result.since}",
         "fixed": result.fixed and f"{package} {result.fixed}"}, indent=1), encoding="utf-8")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    repro = sub.add_parser("repro", help="replay a repro bundle on every backend")
    repro.add_argument("bundle", help="a bundle folder, or a test id such as 'exp[float32]'")
    repro.add_argument("--converter", default=None, type=_named_converter,
                       help="converter under test, module:callable (default: the one the "
                            "bundle records, else converter:to_onnx)")
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
    upstream = sub.add_parser(
        "upstream", help="one issue text and standalone script per upstream root cause")
    upstream.add_argument("runs", nargs="*", metavar="RUN_DIR_OR_RESULTS",
                          help="run folders, .jsonl files or one results.json (default: every "
                               "upstream record of the registry and its example)")
    upstream.add_argument("-o", "--output", type=Path, default=Path("reports/upstream"),
                          help="folder to write <root-cause>/issue.md and repro.py into "
                               "(default: %(default)s)")
    upstream.add_argument("--only", metavar="REGEX",
                          help="only root causes whose slug, record (row:index) or cell "
                               "(row[dtype]) matches")
    upstream.add_argument("--opset", type=int, help="opset of the registry's examples "
                          "(default: the converter's default)")
    upstream.add_argument("--verify", action="store_true",
                          help="run every script in a clean interpreter and check its status")
    upstream.add_argument("--report", type=_output, metavar="HTML",
                          help="also render the run's report, with its upstream section")
    upstream.add_argument("--converter", default="converter:to_onnx", type=_converter,
                          help="converter under test, module:callable (default: %(default)s)")
    upstream.set_defaults(func=_upstream, parser=upstream)
    bisect = sub.add_parser(
        "bisect", help="find the releases of the package at fault that show a divergence")
    bisect.add_argument("record", metavar="RECORD_OR_BUNDLE",
                        help="row:index (sign:0), row[dtype] (sign[int64]) or a bundle folder")
    bisect.add_argument("--package", help="package to bisect (default: the record's)")
    bisect.add_argument("--min", metavar="VERSION", help="oldest release to try")
    bisect.add_argument("--max", metavar="VERSION", help="newest release to try")
    bisect.add_argument("--opset", type=int, help="opset of the example (default: the "
                        "converter's oldest, which older releases can load)")
    bisect.add_argument("-o", "--output", type=Path,
                        help="folder for the script and bisect.json (default: the cache)")
    bisect.add_argument("--converter", default="converter:to_onnx", type=_converter,
                        help="converter under test, module:callable (default: %(default)s)")
    bisect.set_defaults(func=_bisect, parser=bisect)
    # argparse reports usage errors by exiting; main returns every status instead
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


if __name__ == "__main__":
    sys.exit(main())
