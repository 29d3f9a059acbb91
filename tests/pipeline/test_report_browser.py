"""The report in a real browser: headless Chromium (Debian's ``chromium``; ``make test`` installs it)
loads ``report.html`` of the scripted scenario from disk, runs its scripts, and the DOM it ends with
is checked: every section, a section per group with its status, times rewritten to local time, the
tables sorting and filtering, and not one console message (a script error would log one)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from groupcoord.pipeline.report import slug

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.spark

#: appended to a copy of the report: clicks the summary table's "Lag (records)" header twice and
#: types into its filter, writing what the page then shows into the DOM for the dump
_PROBE = """<script>
(function(){
  var table=document.querySelector('#summary table.data');
  var th=Array.prototype.filter.call(table.tHead.rows[0].cells,
    function(c){return c.textContent==='Lag (records)'})[0];
  var order=function(){return Array.prototype.map.call(table.tBodies[0].rows,function(r){
    return r.cells[0].textContent}).join(',')};
  th.click();document.body.setAttribute('data-asc',order());
  th.click();document.body.setAttribute('data-desc',order());
  var box=table.previousElementSibling;box.value=%s;box.dispatchEvent(new Event('input'));
  document.body.setAttribute('data-visible',Array.prototype.filter.call(table.tBodies[0].rows,
    function(r){return r.style.display!=='none'}).map(function(r){return r.cells[0].textContent}).join(','));
})();
</script></body>"""


def render(page: Path) -> tuple[str, list[str]]:
    """(the DOM after the page's scripts ran, the browser's console messages)."""
    if not CHROMIUM.exists():
        pytest.fail("headless Chromium is needed: apt-get install -y chromium (make test does this)")
    done = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def test_console_messages_are_seen_when_a_script_fails(tmp_path: Path) -> None:
    """The check below can fail: a page whose script throws logs the error where we look."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>notDefined();</script></body></html>")
    _, console = render(page)
    assert len(console) == 1 and "Uncaught ReferenceError: notDefined is not defined" in console[0]


def test_report_renders_every_section_without_script_errors(scripted: Any, tmp_path: Path) -> None:
    _, result = scripted
    status = pd.read_parquet(result.out / "tables" / "group_status")
    lags = dict(zip(status["group_id"], status["total_lag"], strict=True))
    page = tmp_path / "report.html"
    target = sorted(lags)[0]
    page.write_text(
        Path(result.report).read_text().replace("</body>", _PROBE % repr(target), 1), encoding="utf-8"
    )
    dom, console = render(page)
    assert console == []
    for section in ("summary", "legend"):
        assert f'<section id="{section}"' in dom
    for group, state in zip(status["group_id"], status["status"], strict=True):
        found = re.search(rf'<section id="{re.escape(slug(group))}" class="group">(.*?)</section>', dom, re.S)
        assert found is not None, group
        body = found.group(1)
        assert f">{state}</span></h2>" in body
        for heading in ("Lag over time", "Rebalances", "Partitions", "Partition movements"):
            assert f"<h3>{heading}</h3>" in body
        assert f'href="#{slug(group)}"' in dom  # the table of contents links to it
    # the script rewrote every time to local time (keeping the UTC text as its title)
    times = re.findall(r'<time data-ms="\d+"[^>]*>', dom)
    assert times and all('title="' in t and " UTC" in t for t in times)
    # sorting by lag (numeric, not text) and filtering
    by_lag = sorted(lags, key=lambda g: (lags[g], g))
    asc = re.search(r'data-asc="([^"]*)"', dom)
    desc = re.search(r'data-desc="([^"]*)"', dom)
    assert asc is not None and desc is not None
    assert [lags[g] for g in asc.group(1).split(",")] == [lags[g] for g in by_lag]
    assert [lags[g] for g in desc.group(1).split(",")] == [lags[g] for g in reversed(by_lag)]
    visible = re.search(r'data-visible="([^"]*)"', dom)
    assert visible is not None
    assert visible.group(1).split(",") == [g for g in desc.group(1).split(",") if target in g]


#: clicks the "Rebalances" header of the protocols table and writes the rows' order into the DOM
_PROTOCOLS_PROBE = """<script>
(function(){
  var table=document.querySelector('#protocols table.data');
  var th=Array.prototype.filter.call(table.tHead.rows[0].cells,
    function(c){return c.textContent==='Rebalances'})[0];
  th.click();
  var text=function(r,i){return r.cells[i].textContent};
  document.body.setAttribute('data-protocols',Array.prototype.map.call(table.tBodies[0].rows,
    function(r){return text(r,0)+'/'+text(r,1)+'='+text(r,2)}).join(','));
})();
</script></body>"""


def test_the_protocols_side_by_side_section_renders_and_sorts(mixed_simulation: Any, tmp_path: Path) -> None:
    """A mixed simulation's report (classic and consumer-protocol twins): the "Protocols side by
    side" section is in the page and its contents, with one row per protocol and cause, sorts by
    the number of rebalances, without a script error."""
    from groupcoord.pipeline.compare import protocol_comparison

    _, result, _ = mixed_simulation
    rb = pd.read_parquet(result.out / "tables" / "rebalances")
    expected = protocol_comparison(rb)
    page = tmp_path / "report.html"
    page.write_text(Path(result.report).read_text().replace("</body>", _PROTOCOLS_PROBE, 1), encoding="utf-8")
    dom, console = render(page)
    assert console == []
    assert '<section id="protocols"><h2>Protocols side by side</h2>' in dom
    assert '<a href="#protocols">Protocols side by side</a>' in dom
    shown = re.search(r'data-protocols="([^"]*)"', dom)
    assert shown is not None
    rows = shown.group(1).split(",")
    assert sorted(rows) == sorted(
        f"{r['cause']}/{r['protocol']}={r['rebalances']}" for _, r in expected.iterrows()
    )
    counts = [int(r.rsplit("=", 1)[1]) for r in rows]
    assert counts == sorted(counts)  # numeric order after one click
