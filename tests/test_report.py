"""Report rendering: one offline file with a summary, the filterable matrix, cell details,
plots, coverage and trend; every text taken from the results renders inert."""

from __future__ import annotations

import re

from conformance.core.results import ResultsWriter, error_bin, merge
from conformance.report import context, matrix, render_report
from conformance.report.code import counterexample

HOSTILE = '<script>alert("x")</script>\'"&'
#: Breaks out of text, attributes and script blocks if anything is not escaped.
NASTY = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">\'"&{{7*7}}'


def doc(op="exp", message="onnxruntime: out[0]=1 but pytensor-py=2"):
    return {
        "schema_version": 1,
        "run": {"profile": "dev", "backends": ["pytensor-py", "onnxruntime"],
                "reference": "pytensor-py", "versions": {"onnx": "1"}},
        "tests": [{
            "test": f"{op}[float32]", "op": op, "category": "elemwise", "dtype": "float32",
            "outcome": "failed", "examples": 3, "known": [], "value_classes": {},
            "backends": {"onnxruntime": {"pass": 2, "fail": 1, "xfail": 0, "max_abs_err": 0.5}},
            "failure": {"message": message, "blame": "converter", "case": f"{op}(float32[])",
                        "inputs": [0.0], "expected": [1.0], "actual": {"onnxruntime": [2.0]},
                        "notes": [], "repro": "conformance repro reports/repro/x"},
        }],
    }


def _cell(p=0, f=0, x=0, ulp=None):
    hist = {"0": p} if p else {}
    if ulp:
        hist = {**hist, **ulp}
    return {"pass": p, "fail": f, "xfail": x, "max_abs_err": 0.0, "max_rel_err": 0.0,
            "max_ulp_err": 0.0, "err_hist": {"abs": hist, "rel": hist, "ulp": hist}}


def _test(test, op, dtype, outcome, backends, *, category="elemwise", failure=None, known=(),
          seen=None, classes=None, label=""):
    return {"test": test, "op": op, "category": category, "dtype": dtype, "opset": 21,
            "opset_label": label, "outcome": outcome, "duration": 0.5,
            "examples": max((sum(c[k] for k in ("pass", "fail", "xfail"))
                             for c in backends.values()), default=0),
            "known": list(known), "xfail_seen": seen or {}, "failure": failure,
            "backends": backends, "value_classes": classes or {}, "outcomes_seen": {outcome: 1}}


def rich_doc(hostile: str = NASTY, *, coverage=True, speed=True) -> dict:
    """Failures, an expected failure, a strict XPASS, an error, and hostile text in op
    names, categories, messages, reasons, a backend name and the coverage lists."""
    exp_failure = {
        "message": "onnxruntime: out[1]=0.6931472 but pytensor-py=2.7182817 (abs err 2.03 > tol "
                   "1e-05) [exp(float32[2])]\nblame: converter",
        "blame": "converter", "case": "exp(float32[2])",
        "code": 'x0 = pt.tensor("x0", dtype="float32", shape=(None,))\nout = pt.exp(x0)',
        "inputs": [[0.0, 1.0]], "input_shapes": [[2]], "params": [],
        "expected": [[1.0, 2.7182817]],
        "actual": {"onnxruntime": [["-inf", 0.0]], "onnx-reference": [["-inf", 0.0]]},
        "notes": ["Failing test case: ..."], "bundle": "reports/repro/exp-float32",
        "repro": "conformance repro reports/repro/exp-float32",
    }
    max_known = [{"backends": ["onnxruntime"], "reason": "ReduceMax drops nan", "blame":
                  "onnxruntime", "dtypes": None}]
    tests = [
        _test("exp[float32]", "exp", "float32", "failed",
              {"pytensor-c": _cell(12), "onnxruntime": _cell(2, 10, ulp={"1e23": 10}),
               "onnx-reference": _cell(2, 10, ulp={"1e23": 10})},
              failure=exp_failure, classes={"0-d": 3, "nan/inf": 2}),
        _test("log[float64]", "log", "float64", "passed",
              {"pytensor-c": _cell(12), "onnxruntime": _cell(12, ulp={"1e0": 3}),
               "onnx-reference": _cell(12)}, classes={"empty": 2}),
        _test("max[float16]", "max", "float16", "xfailed",
              {"pytensor-c": _cell(9), "onnxruntime": _cell(5, 0, 4), "onnx-reference": _cell(9)},
              category="reductions", known=max_known, seen={"0": "onnxruntime: out=1 but nan"}),
        _test("max[float32]", "max", "float32", "failed",
              {"pytensor-c": _cell(9), "onnxruntime": _cell(9), "onnx-reference": _cell(9)},
              category="reductions", known=max_known, failure={
                  "message": "XPASS(strict) max[float32]: onnxruntime now agree (onnxruntime: "
                             "ReduceMax drops nan); remove this expected failure",
                  "blame": "onnxruntime"}),
        _test("sum[int32-opset17]", "sum", "int32", "error", {"pytensor-c": _cell(1)},
              category="reductions", label="opset17",
              failure={"message": "RuntimeError: boom", "blame": "unknown"}),
        _test(f"{hostile}[float32]", hostile, "float32", "failed",
              {"onnxruntime": _cell(0, 1), hostile: _cell(0, 1)}, category=hostile,
              known=[{"backends": [hostile], "reason": hostile, "blame": hostile}],
              failure={**exp_failure, "message": hostile, "blame": hostile, "case": hostile,
                       "code": hostile, "actual": {hostile: hostile}, "notes": [hostile],
                       "bundle": hostile, "repro": hostile}),
    ]
    out = {"schema_version": 1, "tests": tests, "run": {
        "profile": "ci", "max_examples": 12, "derandomize": True, "converter": "converter:to_onnx",
        "backends": ["pytensor-py", "pytensor-c", "onnxruntime", "onnx-reference"],
        "reference": "pytensor-py", "opsets": {"default": 21, "min": 17}, "shard": "1/1",
        "started": "2026-01-31T12:00:00Z", "versions": {"onnx": "1.17", hostile: hostile}}}
    if coverage:
        out["coverage"] = {"op_kinds": ["Elemwise{exp}", hostile], "uncovered": ["Scan"],
                           "onnx_ops": ["Exp", "Log", hostile]}
    if speed:
        out["speed"] = [{"op": op, "dtype": "float32", "backend": b, "median_us": us * factor}
                        for op, us in (("exp", 12.0), (hostile, 3.0))
                        for b, factor in (("onnxruntime", 1), ("pytensor-c", 4))]
    return out


def test_report_is_self_contained_and_shows_matrix_and_failure(tmp_path):
    html = render_report(doc(), tmp_path / "r.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "report must work offline"
    assert 'class="fail"' in html and "exp[float32]" in html
    assert "conformance repro reports/repro/x" in html and "blame: converter" in html


def test_hostile_op_names_and_messages_render_inert(tmp_path):
    html = render_report(doc(op=HOSTILE, message=HOSTILE), tmp_path / "r.html").read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


def test_hostile_text_in_every_field_renders_inert(tmp_path):
    html = render_report(rich_doc(), tmp_path / "r.html").read_text()
    assert "<script>window.pwned" not in html and "<img" not in html
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "{{7*7}}" in html, "results text is data, never template source"
    data = html.split('<script type="application/json" id="report-data">')[1].split("</script>")[0]
    assert "<" not in data and ">" not in data, "data for the script must be \\u003c-escaped"


def test_summary_counts_pass_rates_blames_and_settings(tmp_path):
    ctx = context(rich_doc())
    summary = ctx["summary"]
    blames = {b["blame"]: b for b in summary["blames"]}
    assert blames["converter"]["fail"] == 2          # exp on onnxruntime and onnx-reference
    assert blames["onnxruntime"] == {"blame": "onnxruntime", "xfail": 1, "xpass": 1}
    reductions = next(c for c in summary["categories"] if c["name"] == "reductions")
    assert reductions["cells"]["onnxruntime"]["xpass"] == 1
    assert dict(ctx["statuses"])["xpassed"] == 1
    html = render_report(rich_doc(), tmp_path / "r.html").read_text()
    for text in ("Pass rate by category and backend", "Failing cells by blame", "max examples",
                 "default=21, min=17", "derandomized", "1.17"):
        assert text in html


def test_cell_details_show_code_values_blame_reason_repro_and_bundle(tmp_path):
    html = render_report(rich_doc(), tmp_path / "r.html").read_text()
    detail = html.split('id="d-0"')[1].split("</section>")[0]
    assert "Failure (blame: converter)" in detail
    assert 'x0_value = np.array([0.0, 1.0], dtype=&#34;float32&#34;)' in detail
    assert "# onnxruntime: [-inf, 0.0]" in detail and "out = pt.exp(x0)" in detail
    assert "conformance repro reports/repro/exp-float32" in detail
    assert "reports/repro/exp-float32" in detail.split("bundle:")[1]
    xfail = html.split('id="d-2"')[1].split("</section>")[0]
    assert "reason: ReduceMax drops nan" in xfail and "seen: onnxruntime: out=1 but nan" in xfail
    xpass = html.split('id="d-3"')[1].split("</section>")[0]
    assert "Strict XPASS" in xpass and "never seen in this run" in xpass
    assert '<td class="xpass" data-b="onnxruntime"' in html


def test_plots_coverage_and_speed_render_and_are_optional(tmp_path):
    html = render_report(rich_doc(), tmp_path / "r.html").read_text()
    errors = html.split('id="errors"')[1].split("</section>")[0]
    assert errors.index("<figcaption>exp</figcaption>") < errors.index("<figcaption>log")
    assert "Exact in every example" in errors and "max" in errors.split("Exact")[1]
    assert "Elemwise{exp}" in html and "Scan" in html and "Log" in html
    speed = html.split('id="speed"')[1].split("</section>")[0]
    assert "<svg" in speed and "exp on onnxruntime: 12 µs" in speed
    bare = render_report(rich_doc(coverage=False, speed=False), tmp_path / "b.html").read_text()
    assert "No converter coverage in these results" in bare
    assert "No timings in these results" in bare
    assert "examples per test" in bare


def test_a_legacy_results_file_without_new_fields_renders(tmp_path):
    old = rich_doc()
    for test in old["tests"]:
        test.pop("outcomes_seen")
        for cell in test["backends"].values():
            cell.pop("err_hist")
    html = render_report(old, tmp_path / "r.html").read_text()
    assert "No per-example error histograms" in html


def test_counterexample_code_reshapes_and_points_to_the_bundle_when_cut_short():
    code = counterexample({"case": "f(float64[2,2], int8[100])", "inputs": [
        [1.0, "nan", "-inf", -0.0], list(range(64))], "input_shapes": [[2, 2], [100]],
        "params": [["axis", 0]], "expected": "boom", "actual": {"onnxruntime": [[1, 2], 3]},
        "bundle": "reports/repro/f"}, "float64")
    assert 'x0_value = np.array([1.0, nan, -inf, -0.0], dtype="float64").reshape(2, 2)' in code
    assert 'x1_value = np.array([0, 1,' in code and 'dtype="int8")' in code
    assert "np.load('reports/repro/f/inputs.npz')" in code
    assert "params = {'axis': 0}" in code
    assert "# pytensor-py (reference) raised: boom" in code
    assert "# onnxruntime: out0 = [1, 2]" in code and "# onnxruntime: out1 = 3" in code


def test_merge_histograms_each_backends_errors_by_decade(tmp_path):
    writer = ResultsWriter(tmp_path / "main.jsonl")
    for outcome, err in (("pass", 0.0), ("pass", 3e-7), ("pass", 5e-7), ("fail", "inf"),
                         ("fail", 0.0), ("xfail", "nan")):
        writer.write({"kind": "example", "test": "exp[float32]", "classes": [],
                      "backends": {"onnxruntime": [outcome, err, err, err]}})
    for outcome in ("passed", "failed"):
        writer.write({"kind": "test", "test": "exp[float32]", "op": "exp", "outcome": outcome})
    writer.close()
    (test,) = merge([tmp_path / "main.jsonl"])["tests"]
    hist = test["backends"]["onnxruntime"]["err_hist"]
    assert hist["ulp"] == {"0": 1, "1e-7": 2, "inf": 1, "nan": 1}  # the unmeasured fail skipped
    assert test["outcomes_seen"] == {"passed": 1, "failed": 1}
    assert [error_bin(v) for v in (None, 0, 1e-7, 9.9e-7, 1, 12, "inf")] == [
        None, "0", "1e-7", "1e-7", "1e0", "1e1", "inf"]


def test_the_smallest_subnormal_error_and_an_infinite_speed_still_render(tmp_path):
    from conformance.report import svg

    assert svg.bin_range(["1e-324", "1e-322"]) == ["1e-324", "1e-323", "1e-322"]
    assert svg.dot_plot([("exp", {"onnxruntime": float("inf"), "pytensor-c": 2.0})],
                        ["onnxruntime", "pytensor-c"]).count("<circle") == 1


def test_coverage_shows_value_classes_per_operand(tmp_path):
    doc = rich_doc()
    # a binary op whose first operand drew nan and whose second (a float too) never did
    doc["tests"][0]["value_classes"] = {"nan/inf": 2, "nan/inf (x0)": 2, "float (x0)": 3,
                                        "float (x1)": 3, "0-d": 1, "0-d (x1)": 1}
    html = render_report(doc, tmp_path / "r.html").read_text()
    row = html.split('id="coverage"')[1].split("<td>exp</td>")[1].split("</tr>")[0]
    assert "x0 2" in row and "x1 never" in row and "x0 never" in row and "x1 1" in row
    # an op of one operand shows no breakdown
    log = html.split('id="coverage"')[1].split("<td>log</td>")[1].split("</tr>")[0]
    assert "x0" not in log


def test_a_backend_sharing_the_references_fault_is_blamed_in_its_cell(tmp_path):
    shared = {"backends": ["pytensor-c"], "shared_by": ["pytensor-numba"], "blame": "pytensor",
              "reason": "Python rounds with floor(x + 0.5)", "dtypes": None, "versions": None}
    test = _test("round[float64]", "round", "float64", "xfailed",
                 {"pytensor-c": _cell(x=1), "pytensor-numba": _cell(x=1)},
                 known=[shared], seen={"0": "pytensor-numba agrees with pytensor-py where ..."})
    d = {**doc(), "tests": [test]}
    d["run"] = {**d["run"], "backends": ["pytensor-py", "pytensor-c", "pytensor-numba"]}
    (row,) = matrix.rows(d, ["pytensor-c", "pytensor-numba"])
    assert [c["blames"] for c in row["cells"]] == [["pytensor"], ["pytensor"]]
    html = render_report(d, tmp_path / "r.html").read_text()
    assert "shared by pytensor-numba" in html


def test_a_passing_cell_shows_its_worst_error_in_ulps(tmp_path):
    """Accuracy is seen before it fails: a cell that passed with a 2-ulp error says so in the
    matrix; an exact cell shows none; one of 12,345 ulp is written with an exponent."""
    doc = rich_doc()
    cells = doc["tests"][0]["backends"]
    cells["pytensor-c"]["max_ulp_err"] = 2.0
    cells["onnx-reference"]["max_ulp_err"] = 12345.0
    html = render_report(doc, tmp_path / "r.html").read_text(encoding="utf-8")
    row = html.split('id="row-0"')[1].split("</tr>")[0]
    c_cell = row.split('data-b="pytensor-c"')[1].split("</td>")[0]
    assert '<small class="ulp">2 ulp</small>' in c_cell
    assert '<small class="ulp">1e+04 ulp</small>' in row.split('data-b="onnx-reference"')[1]
    assert "ulp</small>" not in row.split('data-b="onnxruntime"')[1].split("</td>")[0]
