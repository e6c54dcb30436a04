"""The HTML leaderboard: self-contained, escaped, and working in a real headless browser.

The page is built from the committed result files of the single-head track in force (plus a
hostile entry, a hostile failure record and a hostile refusal) with the board's own row functions. The
browser test needs Chromium and its driver (Debian: ``apt-get install chromium
chromium-driver``; ``.ci/run`` installs them); it skips where none is installed, and fails
instead in CI (``CI=true``). Its screenshot is kept under ``$CIRCUIT_GYM_ARTIFACTS`` (else
the test's temporary directory) and the path is printed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.html_page import write_page
from circuit_gym.leaderboard.tracks import TRACKS
from circuit_gym.leaderboard.transfer_tables import rank_transfer_rows, transfer_about, transfer_row

TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)
CIRCUIT = B.transfer_benchmark(B.IN_FORCE).track(B.CIRCUIT)
HOSTILE_NAME = '<script>window.__pwned="name"</script>"><img src=x onerror="window.__pwned=\'img\'">'
HOSTILE_REASON = (
    "</pre><script>window.__pwned='reason'</script><img src=x onerror=window.__pwned='onerror'> & more"
)
HOSTILE_REFUSAL = "evil.json: name '<iframe src=\"https://example.com\"></iframe>' is not valid"


class _Tags(HTMLParser):
    """Counts the elements of a page and collects any event-handler attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter = Counter()
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.counts[tag] += 1
        self.handlers += [(tag, name) for name, _ in attrs if name.startswith("on")]


def _results(track: str) -> list[dict]:
    out = []
    for path in sorted(TRACKS[track].results_dir.glob("*.json")):
        result = json.loads(path.read_text())
        result["board"] = {"check": "verified", "reference": result["name"]}
        out.append(result)
    return out


def _page(path: Path, track: str, rows: list[dict], **kwargs) -> Path:
    return write_page(path, transfer=[(track, transfer_about(track), rows)], **{"about": "", **kwargs})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(page path, ranked rows, entries): the committed entries, one of them renamed to a hostile
    name, isolation recorded on some, a hostile failure and refusal."""
    out = tmp_path_factory.mktemp("board")
    entries = _results(TRACK)
    assert len(entries) >= 4, "the committed board has its references"
    hostile = copy.deepcopy(next(e for e in entries if e["name"] == "random"))
    hostile["name"], hostile["board"] = HOSTILE_NAME, {"check": "hash-checked", "reference": None}
    hostile["provenance"]["policy"] = "<b>bold</b>:make_policy"
    hostile["isolation"] = {"complete": False, "mechanism": "landlock", "missing": ["<net>", "pid namespace"]}
    entries.append(hostile)
    rows = rank_transfer_rows([transfer_row(e) for e in entries])
    failed = [{"name": "crashes", "track": TRACK, "board": {"check": "hash-checked"},
               "failure": {"type": "PolicyFailureError", "reason": HOSTILE_REASON}}]  # fmt: skip
    page = _page(
        out / "index.html", TRACK, rows, about="test <board> & co", failed=failed, refused=[HOSTILE_REFUSAL]
    )
    return page, rows, entries


def test_page_is_self_contained_and_escapes_every_untrusted_string(built):
    page, rows, _ = built
    text = page.read_text()
    tags = _Tags()
    tags.feed(text)
    assert tags.counts["script"] == 1 and not tags.counts["iframe"]  # only the page's own script
    assert not tags.handlers, tags.handlers  # no element has an on* attribute
    assert (
        HOSTILE_NAME not in text
        and HOSTILE_REASON not in text
        and "<iframe" not in text
        and "<b>bold" not in text
    )
    assert "&lt;script&gt;window.__pwned=&quot;name&quot;&lt;/script&gt;" in text  # shown, as text
    assert "&lt;/pre&gt;&lt;script&gt;window.__pwned=&#x27;reason&#x27;" in text
    # nothing is fetched at view time: no URL in any src or href
    assert re.findall(r'(?:src|href)="([^"]*)"', text) == []
    assert "default-src 'none'" in text  # and the CSP forbids any request anyway
    assert text.count("<tr>") == len(rows) + 1  # header + one row per entry
    # isolation: an entry without the complete sandbox says so, and its title what was missing
    white_box = sum(r["white_box"] for r in rows)  # the scorer's own process: not isolated either
    assert white_box and text.count("(not isolated)") == white_box + 1
    assert 'title="scored without isolation (&lt;net&gt;; pid namespace)"' in text


def test_each_kind_of_track_has_its_own_columns(built, tmp_path):
    """The single-head track's table shows best-of-1 and best-of-5 per column, the circuit track's CPR."""
    page, _, _ = built
    assert "private model: best-of-1" in page.read_text() and "private model: CPR" not in page.read_text()
    rows = rank_transfer_rows([transfer_row(e) for e in _results(CIRCUIT)])
    text = _page(tmp_path / "p.html", CIRCUIT, rows).read_text()
    assert "private model: CPR" in text and "best-of-1" not in text
    assert f'id="{CIRCUIT}"' in text and text.count("<tr>") == len(rows) + 1


def _browser():
    """A headless Chromium through Selenium, or None where none is installed."""
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "selenium is not installed (pip install selenium)"
    if not (binary and driver):
        return None, "no Chromium and chromedriver (Debian: apt-get install chromium chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options), None


def _artifacts(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("CIRCUIT_GYM_ARTIFACTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_page_in_a_real_browser_loads_holds_every_entry_and_sorts(built, tmp_path):
    page, rows, _ = built
    driver, why = _browser()
    if driver is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser test: {why}")
        pytest.skip(why)
    from selenium.webdriver.common.by import By

    try:
        driver.get(page.as_uri())
        names = lambda: [  # noqa: E731
            row.find_elements(By.TAG_NAME, "td")[1].get_attribute("data-sort")
            for row in driver.find_elements(By.CSS_SELECTOR, f"[id='{TRACK}'] tbody tr")
        ]
        assert names() == [r["name"] for r in rows]  # every entry, in the board's order
        assert driver.execute_script("return window.__pwned === undefined")  # no injected code ran
        failure = driver.find_element(By.CSS_SELECTOR, "#failed pre").text
        assert "window.__pwned='reason'" in failure  # the hostile reason is shown as text

        column = "unseen task, unseen model: best-of-1"
        header = next(th for th in driver.find_elements(By.CSS_SELECTOR, f"[id='{TRACK}'] th")
                      if th.text.startswith(column))  # fmt: skip
        k1 = {r["name"]: r["unseen_task_unseen_model_k1"] for r in rows}
        assert [k1[n] for n in names()] != sorted(k1.values())  # the board's order is not this column's
        header.click()
        assert [k1[n] for n in names()] == sorted(k1.values()) and header.get_attribute(
            "aria-sort"
        ) == "ascending"
        header.click()
        assert [k1[n] for n in names()] == sorted(k1.values(), reverse=True)
        assert header.get_attribute("aria-sort") == "descending"
        entry = driver.find_element(By.XPATH, f"//table[@id='{TRACK}']//th[normalize-space()='entry']")
        entry.click()
        assert names() == sorted(r["name"] for r in rows)  # text columns sort as text

        shot = _artifacts(tmp_path) / "leaderboard_page.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        print(f"screenshot of the leaderboard page: {shot}")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors  # no console errors (a CSP block of the script would be one)
    finally:
        driver.quit()
