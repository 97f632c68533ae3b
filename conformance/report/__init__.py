"""HTML report rendered from a results document with Jinja2 templates (autoescaped).

One self-contained file: inline CSS, inline SVG charts and a little inline JavaScript for
the matrix filters and the cell details panel. Data reaches the script only through the
``tojson`` filter inside a ``<script type="application/json">`` block, and the script
writes it with ``textContent``, so text from the results can never become markup.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jinja2

from conformance.report import code, matrix, sections

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("conformance", "report/templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
)


def _fmt_pct(value) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.0f}%" if value in (0, 1) else f"{100 * value:.1f}%"


_ENV.filters["pct"] = _fmt_pct
_ENV.filters["outputs"] = code.outputs

#: Outcome vocabulary of the report (``xpassed``: failed as a strict XPASS).
#: ``unsupported``: the converter refused every example of the test (a pytest skip).
STATUSES = ("passed", "failed", "xpassed", "xfailed", "unsupported", "error", "incomplete")


def context(doc: dict) -> dict:
    backends = matrix.backends_of(doc)
    rows = matrix.rows(doc, backends)
    statuses = Counter(row["status"] for row in rows)
    return {
        "run": doc.get("run", {}), "backends": backends, "rows": rows,
        "tests": len(rows), "ops": len({row["op"] for row in rows}),
        "statuses": [(s, statuses[s]) for s in STATUSES if statuses[s]]
                    + [(s, n) for s, n in sorted(statuses.items()) if s not in STATUSES],
        "settings": sections.run_settings(doc.get("run", {})),
        "versions": doc.get("run", {}).get("versions", {}),
        "cpu": sections.cpu_text(doc.get("run", {}).get("cpu")),
        "summary": sections.summary(rows, backends),
        "states": matrix.STATES, "symbols": matrix.SYMBOLS,
        "colors": {b: sections.svg.color(i) for i, b in enumerate(backends)},
        "filters": {
            "category": sorted({r["category"] for r in rows if r["category"]}),
            "dtype": sorted({r["dtype"] for r in rows}),
            "opset": sorted({r["opset"] for r in rows}),
            "outcome": [s for s in STATUSES if statuses[s]],
            "blame": sorted({b for r in rows for b in r["blames"]}),
        },
        "details": matrix.details(doc),
        # copied from the document, which is plain JSON data already (conformance.core.results)
        "data": {"backends": backends, "tests": matrix.cell_data(doc, backends)},
        "errors": sections.error_plots(doc, backends),
        "coverage": sections.coverage(doc, rows),
        "speed": sections.speed(doc, backends),
        "trend": sections.trend(doc, rows),
        "records": sections.records(doc),
        "upstream": sections.upstream(doc),
    }


def render_report(doc: dict, path: Path) -> Path:
    html = _ENV.get_template("report.html.j2").render(**context(doc))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
