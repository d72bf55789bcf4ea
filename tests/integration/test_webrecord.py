"""tm-webrecord: every HTTP exchange the command makes, recorded while it goes on to the real origins, in the
format tm-webreplay serves. As root, Chromium (tm-run's browser workload, record = DIR) loads
tests/integration/web_site.py's live multi-origin site through the recorder; the site is stopped, and the
recording alone is replayed: every object the page loaded byte for byte (curl through tm-webreplay) and the page
whole in Chromium ("complete 38"). As the unprivileged user, whose outermost shell meets no host on this machine
(/dev/net/tun is root's: no pasta), the live origins are a replay's: tm-webreplay serves Mahimahi's recording of
the same site, tm-webrecord nested inside it records curl fetching every object, and that recording replays
byte for byte. Every TCP port is intercepted but DNS's, and told by its first bytes (webrecord_far.py's far side
in an enclosing shell, as root and as the user): a dev server on 3000, TLS on 8443 and IPv6 are recorded and
replay byte for byte, an echo and a server that speaks first pass through unrecorded and are counted in the exit
line, DNS over TCP is not intercepted, a record that cannot be written fails the run, and a body over --max-body
is relayed whole, said and not recorded. Bad input is refused in one line; nothing is left after SIGKILL."""
import ipaddress
import json
import os
import random
import re
import socket
import subprocess
import threading
import urllib.parse

import pytest

import web_site
import webrecord_far
from conftest import HERE, read_until, sh
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
    request body both ways, origins on ports of their own (TLS on 8443, plain on 8080: the scheme is the first
    bytes', not the port's); the files numbered in the order the responses completed."""
    site = live_site
    resolve = " ".join(site.curl_resolve())
    curl = f'curl -sS -o /dev/null --cacert "$TM_WEBRECORD_CA" -H "Accept-Encoding: gzip" {resolve}'
    v6 = "https://v6.replay.test/v6.json"
    tls_8443, plain_8080 = (next(o.url for o in site.objects if o.port == p) for p in (8443, 8080))
    script = "\n".join([f"{curl} {site.plain_url}", f"{curl} --http1.1 {INDEX}", f"{curl} {INDEX}",
                         f"{curl} --http1.1 -d a=1 {INDEX}", f"{curl} -d b=2 {INDEX}", f"{curl} {v6}",
                         f"{curl} {tls_8443}", f"{curl} {plain_8080}"])
    directory = public_tmp / "rec"
    r = root.run(record(tools, directory, "--upstream-ca", site.ca, cmd=sh(script)))
    assert r.returncode == 0, r.stderr
    names = records(directory)
    assert names == [f"save.{n:08d}" for n in range(1, 9)], names + [r.stderr]
    plain, h1, h2, post1, post2, inet6, on_8443, on_8080 = (decode(directory / n) for n in names)
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
    assert "port: 8443" in on_8443 and "scheme: HTTPS" in on_8443 and 'protocol: "h2"' in on_8443, on_8443
    assert "port: 8080" in on_8080 and "scheme: HTTP\n" in on_8080 and 'ip: "10.77.0.3"' in on_8080, on_8080
    assert f"tm-webrecord: {directory}: 8 exchanges recorded; 0 connections not recorded" in r.stderr, r.stderr


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
    server.settimeout(0.1)
    stop = threading.Event()

    def echo():  # until stopped: a thread left in recvfrom would read from whatever reuses the descriptor
        while not stop.is_set():
            try:
                data, peer = server.recvfrom(100)
            except socket.timeout:
                continue
            server.sendto(data, peer)

    thread = threading.Thread(target=echo)
    thread.start()
    try:
        cmd = ["python3", "-c", UDP_443, "10.77.0.1"]
        without = root.run(tools.delay(0, cmd=cmd))
        with_recorder = root.run(record(tools, public_tmp / "rec", cmd=cmd))
    finally:
        stop.set()
        thread.join()
        server.close()
    assert without.stdout.strip() == "answered", without.stderr
    assert with_recorder.stdout.strip() == "ConnectionRefusedError", with_recorder.stdout + with_recorder.stderr


def loads_by_url(out):
    """The loads of tm-run's single run in OUT: {url: load}."""
    (run,) = os.listdir(out / "runs")
    with open(out / "runs" / run / "result.json") as f:
        return {load["url"]: load for load in json.load(f)["loads"]}


def test_chromium_records_the_live_site_and_the_recording_replays_it(root, tools, public_tmp, live_site):
    """The page over HTTP/2, and the plain page with its script from a plain origin on 8080 (told by its first
    bytes: Mahimahi's recorder would have taken 8080 for nothing it records)."""
    site = live_site
    directory = public_tmp / "recording"
    ca = site.ca
    pages = [INDEX, site.plain_url]
    done = {INDEX: f"complete {web_site.PAGE_OBJECTS}", site.plain_url: "complete 2"}
    exp = public_tmp / "record.toml"
    args = [f"--host-resolver-rules={site.resolver_rules()}"]
    exp.write_text(f'name = "record"\nisolated = false\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "browser"\n'
                   f'browser = "chromium"\nserver = "https://www.replay.test"\nrecord = "{directory}"\n'
                   f'ca = "{ca}"\nurls = {pages!r}\nloads = 1\nuntil = {UNTIL}\n'
                   f'browser_args = {list(args)!r}\n'.replace("'", '"'))
    r = root.run([tools.path("tm-run"), str(exp), "-o", str(public_tmp / "out"), "-q"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    loads = loads_by_url(public_tmp / "out")
    for page in pages:
        assert loads[page]["title"] == done[page], loads[page]  # the live site, through the recorder
    # HTTP/2 both ways: the origin chose it, the recorder relayed it
    assert set(loads[INDEX]["protocols"]) == {"h2"}, loads[INDEX]
    names = records(directory)
    print(f"recorded {len(names)} exchanges")
    assert len(names) >= web_site.PAGE_OBJECTS + 3
    assert oct(os.stat(directory / "ca.key").st_mode & 0o777) == "0o600"
    assert not [n for n in os.listdir(directory) if n.startswith(".")]
    site.stop()  # from here on, the recording alone
    urls = [o.url for o in site.objects if o.page in ("index", "plain")] + [site.plain_url]
    assert any(urllib.parse.urlsplit(u).port == 8080 for u in urls)
    check_replayed(root, tools, public_tmp, directory, site, urls)
    exp = public_tmp / "replay.toml"
    exp.write_text(f'name = "replay"\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "browser"\n'
                   f'browser = "chromium"\nreplay = "{directory}"\nurls = {pages!r}\nloads = 1\n'
                   f'until = {UNTIL}\n'.replace("'", '"'))
    r = root.run([tools.path("tm-run"), str(exp), "-o", str(public_tmp / "out2"), "-q"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    loads = loads_by_url(public_tmp / "out2")
    for page in pages:
        assert loads[page]["completed"] == 1 and loads[page]["title"] == done[page], loads[page]


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


@pytest.mark.parametrize("size", ["0", "12xyz", "-1"])
def test_a_bad_max_body_is_one_line_and_exit_2(user, tools, public_tmp, size):
    path = public_tmp / "dir"
    r = user.run(record(tools, path, "--max-body", size, cmd=["true"]))
    assert r.returncode == 2, r.stderr
    line, *hint = r.stderr.splitlines()
    assert line.startswith(f"tm-webrecord: invalid --max-body '{size}'"), r.stderr
    assert hint[0].startswith("usage: tm-webrecord") and len(hint) == 2, r.stderr
    assert not path.exists()  # nothing made
def test_nothing_is_left_after_sigkill(who, tools, public_tmp, spawn):
    directory = public_tmp / "rec"
    p = spawn(who, record(tools, directory, cmd=sh("echo ready; exec sleep 1000")),
              env={"TM_TEST_MARK": str(public_tmp)})
    read_until(p, "ready")
    mine = marked(str(public_tmp))
    assert any("webrecord-proxy --dir" in c for c in mine.values()), mine  # the recorder runs
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


# The far side of the any-port tests, in the command namespace of an enclosing shell (tm-delay 0), which is the
# recorder's P: webrecord_far.py's servers on addresses of its own there, then tm-webrecord around the client.
# $1 the far side's source, $2 tm-webrecord, $3 DIR, $4 the far side's certificates, $5 more options of
# tm-webrecord (words); the client's argv after.
FAR_SHELL = r'''
far=$1 webrecord=$2 dir=$3 certs=$4 options=$5
shift 5
ip addr add 10.98.0.1/32 dev lo && ip addr add fd98::1/128 dev lo nodad && \
  python3 -c "$far" serve "$certs" 10.98.0.1 fd98::1 || exit 9
exec "$webrecord" "$dir" --upstream-ca "$certs/ca.pem" $options -- "$@"
'''
# A dev server's plain HTTP on 3000, TLS on 8443 and IPv6, recorded; a status not 200 too.
DEV_URLS = ["http://dev.test:3000/a.txt", "http://dev.test:3000/missing", "https://dev.test:8443/b.txt",
            "http://[fd98::1]:3000/c.txt"]
# The client: each of DEV_URLS into $1/N ("STATUS URL" a line); a client that does not trust the recording's CA
# and a port nothing listens on (curl's exit status); webrecord_far.py's probes ($2 its source).
ANY_PORT_CLIENT = r'''
out=$1 far=$2
r="--resolve dev.test:3000:10.98.0.1 --resolve dev.test:8443:10.98.0.1"
n=0
for u in ''' + " ".join(f"'{u}'" for u in DEV_URLS) + r'''; do
  n=$((n + 1))
  curl -sS --max-time 10 --cacert "$TM_WEBRECORD_CA" $r -o "$out/$n" -w "%{http_code} $u\n" "$u"
done
curl -sS --max-time 10 $r -o /dev/null https://dev.test:8443/untrusted 2>/dev/null; echo "untrusted $?"
curl -sS --max-time 10 -o /dev/null http://10.98.0.1:3999/ 2>/dev/null; echo "closed $?"
python3 -c "$far" probe 10.98.0.1 "$TM_OUTER:8479"
'''


def far_source():
    with open(os.path.join(HERE, "webrecord_far.py"), encoding="utf-8") as f:
        return f.read()


def record_far(who, tools, public_tmp, directory, client, *args, fsize=None, options=()):
    """tm-delay 0 -- (webrecord_far.py serving; tm-webrecord OPTIONS DIRECTORY -- sh -c CLIENT ARGS...), as WHO,
    with RLIMIT_FSIZE at FSIZE bytes if given."""
    certs = public_tmp / "far"
    certs.mkdir()
    web_site.make_certificates(str(certs), ["dev.test"], ["10.98.0.1", "fd98::1"])
    for f in [certs, *certs.iterdir()]:
        os.chmod(f, 0o755 if f.is_dir() else 0o644)
    argv = tools.delay(0, cmd=sh(FAR_SHELL, far_source(), tools.path("tm-webrecord"), directory, certs,
                                 " ".join(options), *sh(client, *args)))
    return who.run(argv if fsize is None else ["prlimit", f"--fsize={fsize}", "--", *argv])


def test_every_port_is_told_by_its_first_bytes(who, tools, public_tmp):
    """Plain HTTP on 3000 and TLS on 8443 are recorded with their ports and schemes (IPv6 too) and replay byte
    for byte; an echo (300 KB both ways, half-closed) and a server that speaks first work through the recorder,
    unrecorded; DNS over TCP reaches its server from the command's own address; a connection straight to the
    recorder's port is closed; the exit line counts it all."""
    out = public_tmp / "out"
    out.mkdir()
    os.chmod(out, 0o1777)
    directory = public_tmp / "rec"
    r = record_far(who, tools, public_tmp, directory, ANY_PORT_CLIENT, out, far_source())
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    answers = [webrecord_far.answer(urllib.parse.urlsplit(u).path) for u in DEV_URLS]
    assert lines[:len(DEV_URLS)] == [f"{status} {u}" for (status, _), u in zip(answers, DEV_URLS)], r.stdout
    peer = next(l for l in lines if l.startswith("dns peer ")).split()[2]
    assert lines[len(DEV_URLS):] == ["untrusted 60", "closed 56", "echo ok", "banner 220 far ready / 221 bye QUIT",
                                     f"dns peer {peer}", "self closed"], r.stdout + r.stderr
    assert ipaddress.ip_address(peer) in ipaddress.ip_network("100.64.0.0/10"), peer  # the command's, not P's
    assert (f"tm-webrecord: {directory}: 4 exchanges recorded; 4 connections not recorded (2 not HTTP, relayed as "
            "they were; 1 origin unreachable; 1 TLS handshake with the client failed)") in r.stderr.splitlines(), \
        r.stderr
    plain, missing, tls, inet6 = (decode(directory / n) for n in records(directory))
    for text in (plain, missing):
        assert 'ip: "10.98.0.1"' in text and "port: 3000" in text and "scheme: HTTP\n" in text, text
    assert "port: 8443" in tls and "scheme: HTTPS" in tls and 'host: "dev.test"' in tls, tls
    assert 'ip: "fd98::1"' in inet6 and "port: 3000" in inet6 and "scheme: HTTP\n" in inet6, inet6
    got, stderr = fetch_all(who, tools, public_tmp, str(directory), DEV_URLS)
    for n, (url, (status, body)) in enumerate(zip(DEV_URLS, answers), 1):
        assert (out / str(n)).read_bytes() == body, url  # relayed whole
        assert got[url][0] == status and got[url][2] == body, (url, got[url][:2], stderr)  # replayed whole


def test_a_record_that_cannot_be_written_fails_the_run(who, tools, public_tmp):
    """A file size limit (as a full disk would) stops a 325 KB exchange's record: the command still gets every
    byte and goes on, the file is named at once and in the exit line, and the run exits 1."""
    script = ('for p in big a.txt; do curl -sS --max-time 10 -o /dev/null -w "%{http_code} %{size_download}\\n" '
              'http://10.98.0.1:3000/$p; done')
    directory = public_tmp / "rec"
    r = record_far(who, tools, public_tmp, directory, script, fsize=100_000)
    assert r.returncode == 1, r.stdout + r.stderr
    big, small = len(webrecord_far.body("/big")), len(webrecord_far.body("/a.txt"))
    assert r.stdout.split("\n") == [f"200 {big}", f"200 {small}", ""], r.stdout + r.stderr
    failed = f"{directory}/save.00000001: File too large"
    assert f"tm-webrecord: cannot record an exchange: {failed}; the command goes on, but the recording is short " \
           "and the run will fail" in r.stderr.splitlines(), r.stderr
    assert (f"tm-webrecord: {directory}: 1 exchange recorded; 1 exchange not written (the first: {failed}); "
            "0 connections not recorded") in r.stderr.splitlines(), r.stderr
    assert records(directory) == ["save.00000002"]  # the number of the one not written stays unused


def test_a_body_over_max_body_is_relayed_whole_said_and_not_recorded(who, tools, public_tmp):
    """--max-body 100KB: the 325 KB response reaches the command whole, its exchange is named at once and not
    recorded, the same connection's next exchange is, the exit line counts it, and the run passes."""
    script = ('curl -sS --max-time 10 -o /dev/null -o /dev/null -w "%{http_code} %{size_download}\\n" '
              'http://10.98.0.1:3000/big http://10.98.0.1:3000/a.txt')
    directory = public_tmp / "rec"
    r = record_far(who, tools, public_tmp, directory, script, options=["--max-body", "100KB"])
    assert r.returncode == 0, r.stdout + r.stderr
    big, small = len(webrecord_far.body("/big")), len(webrecord_far.body("/a.txt"))
    assert r.stdout.split("\n") == [f"200 {big}", f"200 {small}", ""], r.stdout + r.stderr
    assert ("tm-webrecord: 10.98.0.1:3000: GET /big -> HTTP/1.1 200 OK: a body over --max-body (100000 bytes): "
            "relayed, not recorded") in r.stderr.splitlines(), r.stderr
    assert (f"tm-webrecord: {directory}: 1 exchange recorded; 1 connection not recorded (1 with a body over "
            "--max-body (relayed, that exchange not recorded))") in r.stderr.splitlines(), r.stderr
    assert records(directory) == ["save.00000001"]
    assert "GET /a.txt HTTP/1.1" in decode(directory / "save.00000001")


def test_a_dev_server_on_the_hosts_loopback_is_recorded_at_tm_base(root, tools, public_tmp):
    """The developer's own site on the host's 127.0.0.1, reached at $TM_BASE as any host service is: the
    recorder in P0 connects to $TM_BASE itself, and the host must be able to answer it (kernel path)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                webrecord_far.http(conn)

    threading.Thread(target=serve, daemon=True).start()
    directory = public_tmp / "rec"
    try:
        r = root.run(record(tools, directory, cmd=sh(f'curl -sS --max-time 10 http://"$TM_BASE":{port}/dev.js')))
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.encode() == webrecord_far.body("/dev.js"), r.stdout
    assert f"tm-webrecord: {directory}: 1 exchange recorded; 0 connections not recorded" in r.stderr, r.stderr
    (name,) = records(directory)
    text = decode(directory / name)
    assert 'ip: "100.127.255.1"' in text and f"port: {port}\n" in text and "scheme: HTTP\n" in text, text
