"""tm-webrecord: every HTTP exchange the command makes, recorded while it goes on to the real origins, in the
format tm-webreplay serves. As root, Chromium (tm-run's browser workload, record = DIR) loads
tests/integration/web_site.py's live multi-origin site through the recorder; the site is stopped, and the
recording alone is replayed: every object the page loaded byte for byte (curl through tm-webreplay) and the page
whole in Chromium ("complete 38"). As the unprivileged user, whose outermost shell meets no host on this machine
(/dev/net/tun is root's: no pasta), the live origins are a replay's: tm-webreplay serves Mahimahi's recording of
the same site, tm-webrecord nested inside it records curl fetching every object, and that recording replays
byte for byte. Bad input is refused in one line; nothing is left after SIGKILL."""
import json
import os
import random
import re
import socket
import subprocess
import threading

import pytest

import web_site
from conftest import read_until, sh
from test_webreplay import INDEX, RECORDINGS, UNTIL, decoded, fetch_all, killed_leaves_nothing, marked, public_copy

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
# curl through the recorder: each URL of $1 (names given by --resolve lines in $2), "STATUS VERSION URL" a line.
RECORD_FETCH = r'''
while read -r url; do
  curl -sS --max-time 20 --cacert "$TM_WEBRECORD_CA" $(cat "$2") -H "Accept-Encoding: gzip" -o /dev/null \
    -w "%{http_code} %{http_version} $url\n" "$url" || echo "000 0 $url"
done <"$1"
'''


def index_objects(site):
    return [o for o in site.objects if o.page == "index"]


def record(tools, directory, *options, cmd):
    return tools.shell("tm-webrecord", *options, str(directory), cmd=cmd)


def records(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("save."))


def check_replayed(who, tools, public_tmp, recording, site, urls):
    """Every URL fetched through a replay of RECORDING: the site's bytes."""
    got, stderr = fetch_all(who, tools, public_tmp, str(recording), urls)
    assert "unmatched" not in stderr, stderr
    for url in urls:
        status, _, body = got[url]
        o = site.object(url)
        assert status == o.status, (url, status, stderr)
        if o.status == 200:
            assert decoded(body) == site.expected(url), url
    return got


@pytest.fixture(scope="module")
def live_site(tmp_path_factory, root):
    with web_site.serving(tmp_path_factory.mktemp("live") / "site") as site:
        yield site


def decode(path):
    """The record at PATH as protoc's text format."""
    out = subprocess.run(["protoc", "--decode=tracemod.web.pb.RequestResponse", "--proto_path", SRC,
                          "web/http_record.proto"], input=path.read_bytes(), capture_output=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode(errors="replace")


def test_every_protocol_is_recorded_with_its_fields(root, tools, public_tmp, live_site):
    """The record's fields (docs/web-recording.md): address, port, scheme, name, protocol; HTTP/1.1 plain and over
    TLS (a chunked gzip body kept with its framing), HTTP/2 (the reason phrase supplied, :authority as Host), a
    request body both ways; the files numbered in the order the responses completed."""
    site = live_site
    resolve = " ".join(site.curl_resolve())
    curl = f'curl -sS -o /dev/null --cacert "$TM_WEBRECORD_CA" -H "Accept-Encoding: gzip" {resolve}'
    v6 = "https://v6.replay.test/v6.json"
    script = "\n".join([f"{curl} {site.plain_url}", f"{curl} --http1.1 {INDEX}", f"{curl} {INDEX}",
                         f"{curl} --http1.1 -d a=1 {INDEX}", f"{curl} -d b=2 {INDEX}", f"{curl} {v6}"])
    directory = public_tmp / "rec"
    r = root.run(record(tools, directory, "--upstream-ca", site.ca, cmd=sh(script)))
    assert r.returncode == 0, r.stderr
    names = records(directory)
    assert names == [f"save.{n:08d}" for n in range(1, 7)], names + [r.stderr]
    plain, h1, h2, post1, post2, inet6 = (decode(directory / n) for n in names)
    assert 'ip: "10.77.0.1"' in plain and "port: 80" in plain and "scheme: HTTP\n" in plain, plain
    assert 'protocol: "http/1.1"' in plain and 'host: "www.replay.test"' in plain, plain
    for text, protocol in ((h1, "http/1.1"), (h2, "h2")):
        assert 'ip: "10.77.0.1"' in text and "port: 443" in text and "scheme: HTTPS" in text, text
        assert f'protocol: "{protocol}"' in text and 'host: "www.replay.test"' in text, text
        assert 'first_line: "GET / HTTP/1.1"' in text and 'first_line: "HTTP/1.1 200 OK"' in text, text
    assert 'value: "chunked"' in h1 and re.search(r'body: "[0-9a-f]+\\r\\n\\037\\213', h1), h1
    assert 'key: "Host"\n    value: "www.replay.test"' in h2 and 'value: "chunked"' not in h2, h2
    assert 'body: "a=1"' in post1 and 'body: "b=2"' in post2 and 'protocol: "h2"' in post2, post2
    assert 'ip: "fd77::3"' in inet6 and 'host: "v6.replay.test"' in inet6 and 'inet6' in inet6, inet6  # IPv6 too
    assert '"HTTP/1.1 405 Not Allowed"' in post1 and '"HTTP/1.1 405 Method Not Allowed"' in post2, post1 + post2


# A UDP datagram to $1 port 443, and the answer: "answered", or the error the kernel reported.
UDP_443 = r'''
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.connect((sys.argv[1], 443))
try:
    s.send(b"quic?")
    s.recv(100)
    print("answered")
except OSError as e:
    print(type(e).__name__)
'''


def test_quic_is_refused_so_browsers_fall_back_to_tcp(root, tools, public_tmp, live_site):
    """UDP to 443 from the command is rejected in P, though the origin answers it without the recorder."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("10.77.0.1", 443))

    def echo():
        while True:
            data, peer = server.recvfrom(100)
            server.sendto(data, peer)

    threading.Thread(target=echo, daemon=True).start()
    try:
        cmd = ["python3", "-c", UDP_443, "10.77.0.1"]
        without = root.run(tools.delay(0, cmd=cmd))
        with_recorder = root.run(record(tools, public_tmp / "rec", cmd=cmd))
    finally:
        server.close()
    assert without.stdout.strip() == "answered", without.stderr
    assert with_recorder.stdout.strip() == "ConnectionRefusedError", with_recorder.stdout + with_recorder.stderr


def test_chromium_records_the_live_site_and_the_recording_replays_it(root, tools, public_tmp, live_site):
    site = live_site
    directory = public_tmp / "recording"
    ca = site.ca
    exp = public_tmp / "record.toml"
    args = [f"--host-resolver-rules={site.resolver_rules()}"]
    exp.write_text(f'name = "record"\nisolated = false\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "browser"\n'
                   f'browser = "chromium"\nserver = "https://www.replay.test"\nrecord = "{directory}"\n'
                   f'ca = "{ca}"\nurls = ["{INDEX}"]\nloads = 1\nuntil = {UNTIL}\n'
                   f'browser_args = {list(args)!r}\n'.replace("'", '"'))
    r = root.run([tools.path("tm-run"), str(exp), "-o", str(public_tmp / "out"), "-q"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = os.listdir(public_tmp / "out" / "runs")
    with open(public_tmp / "out" / "runs" / run / "result.json") as f:
        (load,) = json.load(f)["loads"]
    assert load["title"] == f"complete {web_site.PAGE_OBJECTS}", load  # the live site, through the recorder
    assert set(load["protocols"]) == {"h2"}, load  # HTTP/2 both ways: the origin chose it, the recorder relayed it
    names = records(directory)
    print(f"recorded {len(names)} exchanges")
    assert len(names) >= web_site.PAGE_OBJECTS
    assert oct(os.stat(directory / "ca.key").st_mode & 0o777) == "0o600"
    assert not [n for n in os.listdir(directory) if n.startswith(".")]
    site.stop()  # from here on, the recording alone
    urls = [o.url for o in index_objects(site)]
    check_replayed(root, tools, public_tmp, directory, site, urls)
    exp = public_tmp / "replay.toml"
    exp.write_text(f'name = "replay"\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "browser"\n'
                   f'browser = "chromium"\nreplay = "{directory}"\nurls = ["{INDEX}"]\nloads = 1\n'
                   f'until = {UNTIL}\n')
    r = root.run([tools.path("tm-run"), str(exp), "-o", str(public_tmp / "out2"), "-q"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = os.listdir(public_tmp / "out2" / "runs")
    with open(public_tmp / "out2" / "runs" / run / "result.json") as f:
        (load,) = json.load(f)["loads"]
    assert load["completed"] == 1 and load["title"] == f"complete {web_site.PAGE_OBJECTS}", load


def test_a_replay_recorded_from_inside_it_replays_byte_for_byte(who, tools, public_tmp):
    """tm-webreplay MAHIMAHI -- tm-webrecord DIR -- curl: the recorder in the replay's command namespace (its P),
    the replay's servers its origins (checked against the replay's CA), then DIR replayed on its own."""
    site = web_site.build_site(public_tmp / "content")
    recording = public_copy(public_tmp, RECORDINGS["mahimahi"])
    urls = [o.url for o in index_objects(site)]
    listing = public_tmp / "urls"
    listing.write_text("".join(u + "\n" for u in urls))
    resolve = public_tmp / "resolve"  # none needed: the replay's DNS answers; curl wants the file
    resolve.write_text("")
    for f in (listing, resolve):
        os.chmod(f, 0o644)
    directory = public_tmp / "rerecorded"
    inner = record(tools, directory, "--upstream-ca", str(public_tmp / "ca" / "ca.pem"),
                   cmd=sh(RECORD_FETCH, listing, resolve))
    r = who.run(tools.shell("tm-webreplay", "--ca-dir", str(public_tmp / "ca"), recording, cmd=inner), timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(urls) and all(l.split()[0] != "000" for l in lines), r.stdout + r.stderr
    # Mahimahi recorded every origin over HTTP/1.1, the replay offers that alone, and the recorder relays what the
    # origin chose.
    assert all(l.split()[1] == "1.1" for l in lines if l.split()[2].startswith("https")), r.stdout
    assert len(records(directory)) == len(urls)
    check_replayed(who, tools, public_tmp, directory, site, urls)


@pytest.mark.parametrize("case", ["a file", "not writable"])
def test_bad_input_is_one_line_and_exit_2(user, tools, public_tmp, case):
    path = public_tmp / "dir"
    if case == "a file":
        path.write_text("x")
        os.chmod(path, 0o644)
    else:
        path.mkdir()
        os.chmod(path, 0o555)
    r = user.run(record(tools, path, cmd=["true"]))
    assert r.returncode == 2, r.stderr
    line, *hint = r.stderr.splitlines()  # the error in one line, then every tool's usage hint
    assert line.startswith("tm-webrecord: ") and str(path) in line, r.stderr
    assert hint[0].startswith("usage: tm-webrecord") and len(hint) == 2, r.stderr
    assert os.listdir(path) == [] if case != "a file" else path.read_text() == "x"


def test_nothing_is_left_after_sigkill(who, tools, public_tmp, spawn):
    directory = public_tmp / "rec"
    p = spawn(who, record(tools, directory, cmd=sh("echo ready; exec sleep 1000")),
              env={"TM_TEST_MARK": str(public_tmp)})
    read_until(p, "ready")
    mine = marked(str(public_tmp))
    assert any("--proxy" in c for c in mine.values()), mine  # the recorder runs
    assert killed_leaves_nothing(p, str(public_tmp)) == {}
    assert sorted(os.listdir(directory)) == ["ca.key", "ca.pem"]


def encoded_record(text):
    """A RequestResponse in protoc's text format, encoded."""
    out = subprocess.run(["protoc", "--encode=tracemod.web.pb.RequestResponse", "--proto_path", SRC,
                          "web/http_record.proto"], input=text.encode(), capture_output=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_megabytes_both_ways_are_relayed_and_recorded_whole(who, tools, public_tmp):
    """A 3 MB response and a 2.5 MB request body, over HTTP/2 and HTTP/1.1 (flow control, many TLS records):
    the client gets every byte, and each record holds the bytes the origin (a replay) sent or received."""
    big = random.Random(21).randbytes(3_000_000)
    upload = random.Random(22).randbytes(2_500_000)
    origin = public_tmp / "origin"
    origin.mkdir()
    octal = "".join(f"\\{b:03o}" for b in big)
    for n, (method, path, body) in enumerate([("GET", "/big.bin", octal), ("POST", "/upload", "ok")], 1):
        length = len(big) if method == "GET" else 2
        (origin / f"save.{n}").write_bytes(encoded_record(
            f'ip: "10.9.0.1" port: 443 scheme: HTTPS host: "big.test" protocol: "h2" '
            f'request {{ first_line: "{method} {path} HTTP/1.1" header {{ key: "Host" value: "big.test" }} }} '
            f'response {{ first_line: "HTTP/1.1 200 OK" header {{ key: "Content-Length" value: "{length}" }} '
            f'body: "{body}" }}'))
    (public_tmp / "upload").write_bytes(upload)
    for f in [origin, *origin.iterdir(), public_tmp / "upload"]:
        os.chmod(f, 0o755 if f.is_dir() else 0o644)
    script = f"""
for v in --http2 --http1.1; do
  curl -sS $v --cacert "$TM_WEBRECORD_CA" -o "{public_tmp}/got$v" -w "%{{http_version}} " https://big.test/big.bin
  curl -sS $v --cacert "$TM_WEBRECORD_CA" -H "Expect:" --data-binary @"{public_tmp}/upload" -o /dev/null \\
    -w "%{{http_version}} %{{size_upload}} " https://big.test/upload
done"""
    directory = public_tmp / "rec"
    inner = record(tools, directory, "--upstream-ca", str(public_tmp / "ca" / "ca.pem"), cmd=sh(script))
    r = who.run(tools.shell("tm-webreplay", "--ca-dir", str(public_tmp / "ca"), str(origin), cmd=inner), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "2", "2500000", "1.1", "1.1", "2500000"], r.stdout
    for v in ("--http2", "--http1.1"):
        assert (public_tmp / f"got{v}").read_bytes() == big, v
    recorded = [(directory / n).read_bytes() for n in records(directory)]
    assert len(recorded) == 4
    assert big in recorded[0] and upload in recorded[1] and big in recorded[2] and upload in recorded[3]
