"""tm-webreplay on web recordings others made, years ago, with other tools (tests/data/web/real/: its README.md
says where each comes from and what is odd in it; issue 29).

Every recording whose page has its document (14 of 16) is loaded in Chromium and in Firefox through tm-run's
browser workload (replay = the recording, behind tm-delay 3), once as root and once as the unprivileged user
(each browser loads half the recordings as root and the other half as the user, the halves swapped between the
browsers: all four pairings of browser and user run, at half the cost of loading every page four times), each
tm-run with a fresh, empty HOME: the load completes; the page renders (its DOM and its text at least about half of what
a good load of it holds, as measured for each); its screenshot is kept (TM_TEST_ARTIFACTS/webreplay-real/); and
every request the replay could not answer is one that no entry of the recording can answer (RECORDINGS' `never`,
each checked against the recording, with why). A request the recording does hold an answer to must never miss.

The other two hold no page to render (bodies replaced by whoever committed the file, or never saved): they are
read and served all the same. tm-webreplay refuses neither, says in one line each what it left out or mended,
and curl gets the recorded statuses."""
import json
import os
import re
import shutil
from dataclasses import dataclass

import pytest

from conftest import BINDIR, DATA, make_public, sh

REAL = os.path.join(DATA, "web", "real")
BROWSER_RUN_TIMEOUT = 300  # seconds for one tm-run of 4 to 10 pages (each load takes 1.5 to 8 s)


@dataclass(frozen=True)
class Recording:
    file: str  # in REAL
    url: str  # the page
    dom_bytes: int  # floors: about half of what Chromium and Firefox give for the page (the lower of the two)
    text_bytes: int
    never: tuple = ()  # what the page may ask for that no entry can answer ("*": any text), each with why


# A screenshot of tweets far down mitmproxy.org's page, loading="lazy": a browser asks for it when layout puts it
# near enough to the viewport (unstyled, or as Chromium laid the page out before its style sheet applied, once in
# four runs); none of the four recordings of the page has it.
MITMPROXY_LAZY_IMAGE = "https://mitmproxy.org/data/twitter-timeline.png"
RECORDINGS = {
    # The 302 to the mobile site is followed; every object the page asked for in 2010 is there.
    "cnn": Recording("2010-fiddler-cnn.com.har", "http://www.cnn.com/", 6_800, 700),
    "google-cz": Recording("2010-firebug-google.cz.har", "http://www.google.cz/", 4_900, 160, (
        # The page's timing beacon (client-side instrumentation), carrying this load's times in rt=: the file
        # has no /csi at all (Firebug saved the page before it went).
        "http://www.google.cz/csi?*",)),
    "softwareishard": Recording(
        "2010-firebug-softwareishard.com.har", "http://www.softwareishard.com/blog/firebug/firebug-16-beta-1-released/",
        16_000, 3_100),
    "google-kr": Recording("2015-chrome-devtools-google.co.kr.har",
                           "https://www.google.co.kr/?gfe_rd=cr&ei=jlVxVrnxDKOT8QePopPwBg&gws_rd=ssl", 93_000, 90, (
        # The logo and the bar's sprite as a screen of one device pixel per CSS pixel takes them (the page's
        # media queries): the recording was made on a high-density screen and holds only /2x/ and i2_2ec824b0.png.
        "https://www.google.co.kr/images/branding/googlelogo/1x/googlelogo_color_272x92dp.png",
        "https://ssl.gstatic.com/gb/images/i1_1967ca6a.png")),
    "sitespeed": Recording("2016-chrome-devtools-run.sitespeed.io.har", "https://run.sitespeed.io/", 6_200, 40, (
        # analytics.js's pageview beacon, a fresh random a= each time, sent this time to /r/collect: the one
        # recorded went to /collect.
        "https://www.google-analytics.com/r/collect?*",)),
    "gitgrimbo": Recording("2016-ie11-f12-gitgrimbo.github.io.har", "http://gitgrimbo.github.io/harviewer/issue-62/",
                           2_200, 400),
    "nghttp2": Recording("2017-chrome-devtools-nghttp2.org.har", "https://www.nghttp2.org/", 3_600, 600, (
        # The fonts Google Fonts' style sheets name: the file has no fonts.gstatic.com at all, so the name does not
        # resolve.
        "https://fonts.gstatic.com/*",
        # Recorded with status 0 and no response (blocked when it was recorded): left out, its name unresolved.
        "https://platform.twitter.com/widgets.js")),
    "filamentgroup": Recording("2017-firefox54-filamentgroup.com.har", "https://www.filamentgroup.com/", 3_000, 400, (
        # The web app manifest the page links to, which Chromium fetches (when it pleases) and Firefox 54 did not.
        "https://www.filamentgroup.com/webappmanifest.json",)),
    # Only the HTML documents have their bodies (Browsertime's chrome-har): the page renders unstyled, and its
    # objects are answered with their recorded headers and empty bodies.
    "wikimedia": Recording("2020-chrome-har-browsertime-wikimediafoundation.org.har",
                           "https://wikimediafoundation.org/", 25_000, 3_600),
    "mitmproxy-brave": Recording("2023-brave-devtools-mitmproxy.org.har", "https://mitmproxy.org/", 11_000, 1_200, (
        # The icon fonts' other formats: their woff2 files were recorded without content, served empty, do not
        # decode, and the browser falls back to the next src of each @font-face (woff, then ttf), never recorded.
        "https://mitmproxy.org/webfonts/*.woff", "https://mitmproxy.org/webfonts/*.ttf", MITMPROXY_LAZY_IMAGE)),
    "mitmproxy-charles": Recording("2023-charles-mitmproxy.org.har", "https://mitmproxy.org/?=", 11_000, 1_300, (
        # Charles saved the document alone: everything the page names is missing.
        "https://mitmproxy.org/*",)),
    "mitmproxy-firefox": Recording("2023-firefox111-mitmproxy.org.har", "https://mitmproxy.org/", 11_000, 1_300, (
        # Not in Firefox 111's export: the page renders unstyled.
        "https://mitmproxy.org/style.min.css", MITMPROXY_LAZY_IMAGE)),
    "mitmproxy-safari": Recording("2023-safari-webinspector-mitmproxy.org.har", "https://mitmproxy.org/", 11_000, 1_200,
                                  (MITMPROXY_LAZY_IMAGE,)),
    "yahoo": Recording("mahimahi-yahoo.com", "https://www.yahoo.com/", 290_000, 2_600, (
        # lastUpdate= in the path is the load's clock (the recorded request's is 1565154011, 2019).
        "https://www.yahoo.com/_td_api/resource/notificationHistory;*",
        # An @font-face src for Internet Explorer (an EOT, no format()), which Firefox fetches and Chrome 71, which
        # recorded the page, did not: the file has no /os/fontserver/ at all.
        "https://s.yimg.com/os/fontserver/1.0.2/Advance_rc4-rollup.eot",
        # The horoscope widget's data, which the recording browser never asked for.
        "https://www.yahoo.com/tdv2_fp/remote?*")),
}


# What Firefox's load of a page may end in that is the browser's and the page's doing, not the replay's: on a busy
# machine (2 loads of 8 with three busy loops beside it, none on a quiet one), yahoo.com's ad frame r-csc.html,
# which document.write()s what its window.name holds, stays at readyState "interactive" for good although every
# request of the page was answered and every frame in it loaded: its load event, and so the page's, never comes.
# tm-run says so in the load's row, and that row is what is checked then.
FIREFOX_NEVER_LOADS = {
    "yahoo": "timed out waiting for the load event: every request seen finished; 1 frame never loaded "
             "(https://s.yimg.com/rq/darla/3-15-0/html/r-csc.html)"}


def named(url, patterns):
    """Whether URL is one of PATTERNS (a * in one stands for any text)."""
    return any(re.fullmatch(".*".join(map(re.escape, p.split("*"))), url) for p in patterns)


def matrix_value(label):
    """The value naming both LABEL's page and its recording. tm-run's matrix varies each workload value on its own,
    and urls must be whole URLs before it fills them in: the value is the page's URL without its scheme, the label
    as a fragment (never sent: the request is the page's), and the recording lies at pages/VALUE."""
    scheme, rest = RECORDINGS[label].url.split("://", 1)
    return scheme, f"{rest}#{label}"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A directory holding every recording at pages/VALUE (matrix_value), readable by the unprivileged user."""
    d = make_public(tmp_path_factory.mktemp("webreplay-real"))
    for label, rec in RECORDINGS.items():
        target = d / "pages" / matrix_value(label)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        source = os.path.join(REAL, rec.file)
        if os.path.isdir(source):
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    for root, dirs, files in os.walk(d / "pages"):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return d


def share(browser, who):
    """The recordings BROWSER loads as WHO ("root" or "user"): every other one, the other half as the other
    user, and the halves swapped between the browsers, so that each recording is loaded in both browsers, once
    as root and once as the user."""
    labels = list(RECORDINGS)
    return labels[0::2] if (browser == "chromium") == (who == "root") else labels[1::2]


LOADS = [(browser, who) for browser in ("chromium", "firefox") for who in ("root", "user")]
CASES = [pytest.param((browser, who), label, id=f"{browser}-{who}-{label}")
         for browser, who in LOADS for label in share(browser, who)]


def write_experiment(directory, browser, scheme, labels):
    """One run per recording of LABELS whose page is SCHEME://..., each a load of its page in BROWSER, captured;
    None if there is none."""
    labels = [label for label in labels if matrix_value(label)[0] == scheme]
    if not labels:
        return None
    path = directory / f"{browser}-{scheme}.toml"
    path.write_text(f'name = "real pages over {scheme} in {browser}"\n[[shell]]\nrun = "tm-delay 3"\n[matrix.page]\n'
                    + "".join(f"{label} = {json.dumps(matrix_value(label)[1])}\n" for label in labels)
                    + f'[workload]\nkind = "browser"\nbrowser = "{browser}"\nreplay = "pages/{{page}}"\n'
                    f'urls = ["{scheme}://{{page}}"]\nloads = 1\ncapture = ["dom", "screenshot"]\n')
    os.chmod(path, 0o644)
    return path


def fresh_home(directory, who):
    directory.mkdir()
    os.chown(directory, who.uid, who.gid)
    return directory


def load_share(pages, browser, who):
    """(browser, user, {label: (the load's row, its run directory)}): each page of BROWSER's share for WHO (share)
    loaded once in the browser, by one tm-run per scheme, as WHO."""
    labels, rows = share(browser, "root" if who.uid == 0 else "user"), {}
    for scheme in ("http", "https"):  # two runs at once (--jobs 2): no time is checked here, and it saves a fifth
        name = f"{browser}-{who.name}-{scheme}"
        experiment = write_experiment(pages, browser, scheme, labels)
        if experiment is None:
            continue
        r = who.run([os.path.join(BINDIR, "tm-run"), str(experiment), "-o", str(pages / name), "-q", "--jobs", "2"],
                    env={"HOME": fresh_home(pages / f"{name}-home", who)}, timeout=BROWSER_RUN_TIMEOUT)
        assert r.returncode == 0, r.stdout + r.stderr
        for run in (pages / name / "runs").iterdir():
            with open(run / "result.json") as f:
                result = json.load(f)
            (row,) = result["loads"]
            rows[result["values"]["page"]] = (row, run)
    assert sorted(rows) == sorted(labels)
    return browser, who.name, rows


@pytest.fixture(scope="module")
def loads(pages, root, user):
    """A function (browser, "root" or "user") -> load_share's result, each share loaded once for the module (a
    parametrized module fixture would be set up again for every page of its share), its failure kept and said
    again for every page of it."""
    done = {}

    def get(browser, who):
        if (browser, who) not in done:
            try:
                done[browser, who] = load_share(pages, browser, root if who == "root" else user)
            except Exception as e:  # kept: each test of the share says it
                done[browser, who] = e
                raise
        if isinstance(done[browser, who], Exception):
            pytest.fail(f"the loads of {browser} as {who} failed: {done[browser, who]}")
        return done[browser, who]
    return get


def keep_screenshot(run, row, name):
    """The load's screenshot copied where it outlives the test (tests/run's TM_TEST_ARTIFACTS): its path."""
    artifacts = os.path.join(os.environ.get("TM_TEST_ARTIFACTS") or str(run.parent.parent.parent), "webreplay-real")
    os.makedirs(artifacts, exist_ok=True)
    path = os.path.join(artifacts, f"{name}.png")
    shutil.copy(run / row["screenshot_file"], path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", path
    return path


def unanswered(row):
    """The URLs of ROW's load that the replay did not answer: its misses, and the documents, style sheets, scripts
    and fonts (those its failures name) that failed with a network error (a name the replay does not resolve)
    rather than a recorded status."""
    errors = [f.split(": ", 1) for f in row["failures"]]
    return set(row["missed"]) | {url for why, url in errors if not why.startswith("HTTP status")}


@pytest.mark.parametrize("combo,label", CASES)
def test_the_recorded_page_renders_and_misses_only_what_its_recording_never_had(loads, combo, label):
    browser, user, rows = loads(*combo)
    rec, (row, run) = RECORDINGS[label], rows[label]
    if browser == "firefox" and not row["completed"] and row["error"] == FIREFOX_NEVER_LOADS.get(label):
        print(f"{browser} as {user}: {label}: {row['error']}")
        return
    assert row["completed"] == 1, row["error"]
    shot = keep_screenshot(run, row, f"{browser}-{user}-{label}")
    print(f"{browser} as {user}: {label}: dom_bytes {row['dom_bytes']}, text_bytes {row['text_bytes']}, "
          f"{row['requests']} requests, degraded {row['degraded']}, missed {row['missed']}; screenshot {shot}")
    assert row["dom_bytes"] >= rec.dom_bytes and row["text_bytes"] >= rec.text_bytes
    assert len(row["missed"]) == row["replay_misses"]  # all of them named: none left out of the check
    unexpected = sorted(url for url in unanswered(row) if not named(url, rec.never))
    assert unexpected == [], f"not answered, though not named as never recorded: {unexpected}"


# The recordings without a page to render, what tm-webreplay must say of each (a line of its standard error, after
# "tm-webreplay: PATH: "), and what curl must get: (URL, the recorded status, a header field or body it carries).
UNRENDERABLE = {
    # Whoever committed it replaced every body with "MANUALLY REMOVED", and those recorded in base64 are no
    # longer base64: left out. The others are served as they are, short.
    "2017-chrome-devtools-enorm-magazin.de.har": (
        ["23 entries could not be read and are left out (the first, entry 12: response.content.text is not base64)",
         "38 bodies are shorter than the size recorded for them (the first, entry 2: 16 of 63930 bytes): served as "
         "they are"],
        [("http://enorm-magazin.de/", 301, "location: https://enorm-magazin.de/"),
         ("https://enorm-magazin.de/", 200, "MANUALLY REMOVED"),
         ("https://enorm-magazin.de/sites/enorm-magazin.de/themes/enorm/enorm-favicon.png", 404, "x-tm-replay: miss")]),
    # WebPageTest saved no bodies (and says 0 for their sizes: their Content-Length tells), and split the Expires of
    # a Set-Cookie at its colon.
    "2015-webpagetest-en.wikipedia.org.NOBODIES.har": (
        ["99 responses were saved without their content: served with an empty body",
         "6 header fields changed to be sent: 0 joined values split, 6 names cut at the wrong colon mended, "
         "0 dropped (no token for a name, or a control byte in the value)"],
        [("https://en.wikipedia.org/wiki/Main_Page", 200, "set-cookie: WMF-Last-Access=29-Aug-2015;Path=/;HttpOnly;"),
         ("https://en.wikipedia.org/w/load.php?debug=false&lang=en&modules=startup&only=scripts&skin=vector&*", 200,
          "content-type: text/javascript"),
         ("https://upload.wikimedia.org/wikipedia/commons/thumb/7/7b/Erika_2015-08-28_1505Z.jpg/"
          "100px-Erika_2015-08-28_1505Z.jpg", 200, "content-type: image/jpeg")]),
}
CURL = 'for url; do printf "\\n=== %s\\n" "$url"; curl -sS --cacert "$TM_WEBREPLAY_CA" -D - "$url"; done'


@pytest.mark.parametrize("name", UNRENDERABLE)
def test_a_recording_without_a_page_is_read_and_served_as_recorded(who, tools, public_tmp, name):
    said, fetches = UNRENDERABLE[name]
    har = shutil.copy(os.path.join(REAL, name), public_tmp)
    os.chmod(har, 0o644)
    r = who.run(tools.shell("tm-webreplay", "--ca-dir", public_tmp / "ca", har,
                            cmd=sh(CURL, *(url for url, _, _ in fetches))))
    assert r.returncode == 0, r.stderr
    for line in said:
        assert f"tm-webreplay: {har}: {line}\n" in r.stderr, r.stderr
    parts = re.split(r"\n=== (\S+)\n", "\n" + r.stdout)[1:]
    answers = dict(zip(parts[::2], parts[1::2]))
    for url, status, carries in fetches:
        print(f"{url}: {answers[url].splitlines()[0]}")
        assert re.match(rf"HTTP/(1\.1|2) {status} ", answers[url]), answers[url][:300]  # http:// is HTTP/1.1
        assert carries.lower() in answers[url].lower(), answers[url][:2000]
