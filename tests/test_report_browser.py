"""The report in headless Chromium: no script errors, filters change what is shown, a cell
opens its details, and hostile text from the results stays text.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package; skipped
when any is missing. Chromium runs without network, GPU or sandbox (for containers)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conformance.report import render_report

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--window-size=1400,1000")

if not CHROMIUM.exists() or not Path(DRIVER).exists():
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail("CI must run the browser tests: .ci/run installs chromium and "
                    "chromium-driver, and that failed", pytrace=False)
    pytest.skip("headless browser tests need /usr/bin/chromium and chromedriver "
                "(apt-get install chromium chromium-driver)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="needs the selenium package")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_report import NASTY, rich_doc  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    path = render_report(rich_doc(), tmp_path_factory.mktemp("report") / "conformance.html")
    return path.resolve().as_uri()


@pytest.fixture
def page(browser, report):
    browser.get("about:blank")
    browser.get(report)
    browser.get_log("browser")  # drop entries from earlier pages
    return browser


def visible_tests(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#matrix-table tbody tr'))"
        ".filter(tr => !tr.hidden).map(tr => tr.cells[0].textContent)")


def errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def test_loads_without_script_errors_and_shows_every_test(page):
    assert page.execute_script("return typeof window.pwned") == "undefined"
    assert len(visible_tests(page)) == 6
    assert page.find_element(By.ID, "f-count").text == "6 of 6 tests"
    assert page.find_element(By.ID, "panel").get_attribute("hidden") is not None
    assert errors(page) == []


def test_filters_and_search_change_what_is_shown(page):
    Select(page.find_element(By.ID, "f-outcome")).select_by_value("failed")
    assert visible_tests(page) == ["exp[float32]", f"{NASTY}[float32]"]
    Select(page.find_element(By.ID, "f-outcome")).select_by_value("!passed")
    assert "log[float64]" not in visible_tests(page) and len(visible_tests(page)) == 5
    Select(page.find_element(By.ID, "f-category")).select_by_visible_text("reductions")
    assert visible_tests(page) == ["max[float16]", "max[float32]", "sum[int32-opset17]"]
    Select(page.find_element(By.ID, "f-blame")).select_by_visible_text("onnxruntime")
    assert visible_tests(page) == ["max[float16]", "max[float32]"]
    Select(page.find_element(By.ID, "f-opset")).select_by_visible_text("opset17")
    assert visible_tests(page) == [] and page.find_element(By.ID, "f-count").text == "0 of 6 tests"
    page.find_element(By.ID, "f-clear").click()
    page.find_element(By.ID, "f-search").send_keys("reducemax")
    WebDriverWait(page, 5).until(lambda d: len(visible_tests(d)) < 6)  # search is debounced
    assert visible_tests(page) == ["max[float16]", "max[float32]"]
    page.find_element(By.ID, "f-clear").click()
    Select(page.find_element(By.ID, "f-dtype")).select_by_visible_text("float64")
    assert visible_tests(page) == ["log[float64]"]
    Select(page.find_element(By.ID, "f-backend")).select_by_visible_text("onnx-reference")
    shown = page.execute_script(
        "return Array.from(document.querySelectorAll('#matrix-table [data-b]'))"
        ".filter(c => c.offsetParent !== null).map(c => c.dataset.b)")
    assert set(shown) == {"onnx-reference"} and len(shown) == 2   # header and one cell
    assert errors(page) == []


def test_summary_links_filter_the_matrix(page):
    page.find_element(By.CSS_SELECTOR, '#summary a[data-outcome="xfailed"]').click()
    assert visible_tests(page) == ["max[float16]"]
    page.execute_script("window.scrollTo(0, 0)")
    page.find_element(By.CSS_SELECTOR, '#summary a[data-blame="converter"]').click()
    assert visible_tests(page) == ["exp[float32]"]


def test_a_cell_opens_its_details(page):
    page.find_element(By.CSS_SELECTOR, '#row-0 td[data-b="onnxruntime"] a').click()
    panel = page.find_element(By.ID, "panel")
    assert panel.is_displayed()
    text = page.find_element(By.ID, "panel-body").text
    assert text.startswith("exp[float32] on onnxruntime")
    assert "Failure (blame: converter)" in text
    assert 'x0_value = np.array([0.0, 1.0], dtype="float32")' in text
    assert "conformance repro reports/repro/exp-float32" in text
    assert "reports/repro/exp-float32" in text.split("bundle:")[1]
    highlighted = page.find_elements(By.CSS_SELECTOR, "#panel tr.hl")
    assert [row.text.split()[0] for row in highlighted] == ["onnxruntime"]
    page.find_element(By.CSS_SELECTOR, '#panel .metric button[data-metric="ulp"]').click()
    assert "[1e23, 1e24)" in panel.text
    page.find_element(By.ID, "panel-close").click()
    assert not panel.is_displayed()
    page.find_element(By.CSS_SELECTOR, '#row-2 td[data-b="onnxruntime"] a').click()
    assert "reason: ReduceMax drops nan" in panel.text and "cell xfail" in panel.text
    assert errors(page) == []


def test_hostile_results_render_as_text(page):
    assert page.execute_script("return document.scripts.length") == 2
    assert page.find_elements(By.TAG_NAME, "img") == []
    page.find_element(By.CSS_SELECTOR, "#row-5 td a").click()
    panel = page.find_element(By.ID, "panel")
    assert page.find_element(By.ID, "panel-body").text.startswith(f"{NASTY}[float32]")
    assert panel.text.count(NASTY) >= 3          # title, message, reason ... all as text
    assert page.execute_script("return typeof window.pwned") == "undefined"
    assert page.find_elements(By.TAG_NAME, "img") == []
    assert errors(page) == []


#: the widths a report is read at: a laptop, the window size above, a desktop monitor
WIDTHS = (1280, 1400, 1920)
#: containers whose visible children must not cover one another: the navigation, the
#: filter bar, the summary's cards and its two columns (pass rates beside the run's settings),
#: the matrix's header row
LAID_OUT = ("header nav", "#filters", "#summary", "#summary .cards", "#summary .grid2",
            "#matrix-table thead tr")
#: each child is measured with everything drawn inside it (a table wider than its column
#: spills over the next one while the column's own box does not), cut to the boxes that
#: scroll or clip what they hold
OVERLAPS = """
const seen = e => {
  let r = e.getBoundingClientRect(), box = {left: r.left, right: r.right, top: r.top,
    bottom: r.bottom};
  for (let a = e.parentElement; a; a = a.parentElement) {
    const st = getComputedStyle(a), c = a.getBoundingClientRect();
    if (st.overflowX !== 'visible') { box.left = Math.max(box.left, c.left);
      box.right = Math.min(box.right, c.right); }
    if (st.overflowY !== 'visible') { box.top = Math.max(box.top, c.top);
      box.bottom = Math.min(box.bottom, c.bottom); }
  }
  return box.right > box.left && box.bottom > box.top ? box : null;
};
const extent = k => [k, ...k.querySelectorAll('*')].filter(e => e.offsetParent !== null)
  .map(seen).filter(r => r)
  .reduce((u, r) => u ? {left: Math.min(u.left, r.left), right: Math.max(u.right, r.right),
    top: Math.min(u.top, r.top), bottom: Math.max(u.bottom, r.bottom)} : r, null);
const found = [];
for (const sel of arguments[0]) {
  for (const box of document.querySelectorAll(sel)) {
    const kids = Array.from(box.children).filter(k => k.offsetParent !== null)
      .map(k => [k, extent(k)]).filter(([, r]) => r);
    for (let i = 0; i < kids.length; i++) for (let j = i + 1; j < kids.length; j++) {
      const [a, ra] = kids[i], [b, rb] = kids[j];
      const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (w > 1 && h > 1) found.push(`${sel}: <${a.tagName.toLowerCase()} ${a.id || a.className}>`
        + ` and <${b.tagName.toLowerCase()} ${b.id || b.className}> overlap by ${w}x${h}px`);
    }
  }
}
return found;
"""


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory) -> str:
    """The rich report with errors over sixty decades of ulp: its histograms are drawn wider
    than any of the windows below."""
    doc = rich_doc()
    for test in doc["tests"]:
        for cell in test.get("backends", {}).values():
            if cell.get("err_hist"):
                cell["err_hist"]["ulp"] = {**cell["err_hist"]["ulp"], "1e-30": 1, "1e30": 1}
    path = render_report(doc, tmp_path_factory.mktemp("wide") / "conformance.html")
    return path.resolve().as_uri()


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_overlaps_at_common_widths(browser, wide_report, width):
    """At each width the page scrolls only down (the matrix scrolls inside its own box, the
    charts scale down), every control stays inside the window, and no two items of a bar
    cover each other."""
    browser.set_window_size(width, 1000)
    try:
        browser.get("about:blank")
        browser.get(wide_report)
        inner = browser.execute_script("return window.innerWidth")
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= inner, f"at {width}px the page is {scroll}px wide in a {inner}px window"
        outside = browser.execute_script(
            "return Array.from(document.querySelectorAll('#filters > *, header nav > *'))"
            ".filter(e => e.offsetParent !== null && e.getBoundingClientRect().right > "
            "window.innerWidth + 1).map(e => e.id || e.tagName)")
        assert outside == [], f"at {width}px these controls end outside the window: {outside}"
        assert browser.execute_script(OVERLAPS, list(LAID_OUT)) == []
    finally:
        browser.set_window_size(1400, 1000)
