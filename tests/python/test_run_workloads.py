"""Workload parts on loopback sockets (no namespaces): TCP_INFO's offsets, the clients and servers of every
kind, the command workload's metric extraction."""
import json
import socket
import threading
import time

import pytest

from tracemod_run.errors import RunError
from tracemod_run.workloads import bulk, command, common, maxrate, registry, reqrep, web


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """server(module) serves a workload on a free loopback port in a thread; returns the port."""
    def start(mod):
        port = free_port()
        ready = str(tmp_path / f"ready{port}")
        threading.Thread(target=common.serve, args=(mod.handle, port, "127.0.0.1", ready), daemon=True).start()
        common.wait_ready(ready, 5)
        return port
    return start


def assert_declared(params, res):
    """RES reports only metrics and samples registry.outputs(PARAMS) declares (what tm-run checks an experiment's
    [[assert]] and [plot] against before the first run)."""
    metrics, samples = registry.outputs(params)
    assert set(res["metrics"]) <= metrics, set(res["metrics"]) - metrics
    assert set(res["samples"]) <= samples, set(res["samples"]) - samples


def test_tcp_info_fields_at_their_offsets():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    peer, _ = listener.accept()
    client.sendall(b"x" * 100000)
    got = 0
    while got < 100000:
        got += len(peer.recv(65536))
    time.sleep(0.05)
    info = common.tcp_info(client)
    assert info["state"] == 1  # TCP_ESTABLISHED
    assert info["bytes_acked"] == 100001 and info["bytes_sent"] == 100000  # the SYN counts as acknowledged
    assert info["pmtu"] >= 65535 and 0 < info["snd_mss"] < info["pmtu"]  # loopback's MTU
    assert info["rtt_us"] > 0 and info["min_rtt_us"] > 0 and info["total_retrans"] == 0
    assert common.tcp_info(peer)["bytes_received"] == 100000
    for s in (client, peer, listener):
        s.close()


def test_bulk_bytes_both_ways_and_flows(server):
    port = server(bulk)
    params = registry.validate({"kind": "bulk", "bytes": 300000, "direction": "both", "flows": 2})
    res = bulk.run_client(params, "127.0.0.1", port, 1)
    assert_declared(params, res)
    m = res["metrics"]
    assert m["bytes_down"] == m["bytes_up"] == 600000
    assert 0 < m["jain_index_down"] <= 1 and m["goodput_mbps_up"] > 0
    assert len(res["series"]["received_bytes_down"]) == 2
    assert res["series"]["received_bytes_up"][0][-1][1] == 300000


def test_maxrate_on_loopback_reports_both_rates(server):
    port = server(bulk)
    params = registry.validate({"kind": "maxrate", "seconds": 0.3})
    res = maxrate.run_client(params, "127.0.0.1", port, 1)
    assert_declared(params, res)
    assert registry.outputs(params)[0] >= set(registry.headline(params))
    m = res["metrics"]
    assert m["maxrate_mbps"] > 0 and m["maxrate_wire_mbps"] >= m["maxrate_mbps"]


def test_reqrep_counts_every_exchange(server):
    port = server(reqrep)
    params = registry.validate({"kind": "reqrep", "pairs": [[1, 1], [100, 5000]], "count": 7, "connects": 3})
    res = reqrep.run_client(params, "127.0.0.1", port, 5)
    assert_declared(params, res)
    assert len(res["samples"]["rtt_ms_1x1"]) == len(res["samples"]["rtt_ms_100x5000"]) == 7
    assert len(res["samples"]["connect_ms"]) == 3
    assert res["metrics"]["rtt_ms_min_1x1"] <= res["metrics"]["rtt_ms_p50_1x1"] <= res["metrics"]["rtt_ms_max_1x1"]
    with pytest.raises(registry.UsageError, match="pairs"):
        registry.validate({"kind": "reqrep", "pairs": [[0, 1]]})


@pytest.mark.parametrize("connection", ["session", "page", "file"])
def test_web_sessions_pages_and_files(server, connection):
    port = server(web)
    params = registry.validate({"kind": "web", "seconds": 0.6, "session_interval": 0.05, "think_median": 0.02,
                                "connection": connection, "reply_cap": 50000})
    res = web.run_client(params, "127.0.0.1", port, 9)
    assert_declared(params, res)
    m, s = res["metrics"], res["samples"]
    assert m["sessions"] > 3 and m["pages"] == len(s["page_ms"]) and m["files"] == sum(s["files_per_page"])
    assert len(s["reply_bytes"]) == m["files"] and max(s["reply_bytes"]) <= 50000
    assert m["unfinished_files"] == 0


def test_command_metrics_from_output():
    out = 'noise\n{"end": {"sum": {"bits_per_second": 12.5e6}}, "runs": [{"t": 3}]}\n'
    assert command.extract({"name": "bps", "json": "end.sum.bits_per_second"}, out, "") == 12.5e6
    assert command.extract({"name": "t", "json": "runs[0].t", "scale": 1000}, out, "") == 3000
    assert command.extract({"name": "x", "regex": r"time=([\d.]+)"}, "a time=0.25 b", "") == 0.25
    assert command.extract({"name": "x", "regex": r"\d+", "source": "stderr"}, "", "took 42") == 42
    with pytest.raises(RunError, match="matches nothing"):
        command.extract({"name": "x", "regex": "nope"}, "a", "")
    with pytest.raises(RunError, match="has 'a.b'"):
        command.extract({"name": "x", "json": "a.b"}, '{"a": 1}', "")
    with pytest.raises(RunError, match="is not a number"):
        command.extract({"name": "x", "regex": "(a)"}, "a", "")


def test_command_client_and_listening():
    params = registry.validate({"kind": "command", "client": "echo v=$TM_RUN_SERVER",
                                "metrics": [{"name": "v", "regex": r"v=127\.0\.0\.(\d)"}]})
    res = command.run_client(params, "127.0.0.1", 0, 1)
    assert res["metrics"]["v"] == 1
    assert_declared(params, res)
    with pytest.raises(RunError, match="exited with status 3: oops"):
        command.run_client(registry.validate({"kind": "command", "client": "echo oops >&2; exit 3"}), "h", 0, 1)
    s = socket.create_server(("127.0.0.1", 0))
    assert command.listening(s.getsockname()[1])
    s.close()
    with pytest.raises(registry.UsageError, match="exactly one of regex and json"):
        registry.validate({"kind": "command", "client": "true", "metrics": [{"name": "x"}]})


def test_wait_ready_times_out(tmp_path):
    with pytest.raises(RunError, match="did not become ready"):
        common.wait_ready(str(tmp_path / "never"), 0.05)


def test_workload_command_line(tmp_path, server):
    port = server(reqrep)
    out = tmp_path / "r.json"
    status = registry.main(["reqrep", "--client", "--host", "127.0.0.1", "--port", str(port), "--param", "count=2",
                            "--param", "pairs=[[1, 2]]", "--param", "connects=0", "--output", str(out)])
    assert status == 0
    assert json.loads(out.read_text())["params"]["pairs"] == [[1, 2]]
    with pytest.raises(registry.UsageError, match="--param 'count' must be a whole number"):
        registry.main(["reqrep", "--client", "--param", "count=many"])


def test_series_stay_small_however_long_the_run():
    from tracemod_run.workloads import transfer

    s = transfer.Series(0.01)
    for i in range(100000):  # 1000 s sampled every 10 ms
        s.add(i * 0.01, i)
    assert transfer.MAX_POINTS // 2 <= len(s.points) <= transfer.MAX_POINTS
    assert s.points[0] == (0.0, 0) and s.points[-1][0] > 990


def test_bulk_reports_beside_the_ready_file(tmp_path):
    port = free_port()
    ready = tmp_path / "server.ready"
    threading.Thread(target=bulk.serve, args=({}, port, "127.0.0.1", str(ready)), daemon=True).start()
    common.wait_ready(str(ready), 5)
    try:
        res = bulk.run_client(registry.validate({"kind": "bulk", "bytes": 100000, "direction": "up"}),
                              "127.0.0.1", port, 1)
    finally:
        bulk._report_dir = None
    assert res["metrics"]["bytes"] == 100000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.ready"]  # the report was read and removed


def serve_once(tmp_path, kind):
    """`tm-run workload KIND --server --once` in a thread on a free loopback port: (port, thread)."""
    port = free_port()
    ready = tmp_path / f"ready-{kind}"
    argv = [kind, "--server", "--once", "--host", "127.0.0.1", "--port", str(port), "--ready-file", str(ready)]
    thread = threading.Thread(target=registry.main, args=(argv,), daemon=True)
    thread.start()
    common.wait_ready(str(ready), 5)
    return port, thread


def not_a_client(port, junk):
    """Connects, sends JUNK, says end of stream and reads until the server has closed its side (its handler
    returned)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(junk)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass


# Per kind: connections that are no client, or a client that breaks off; and a real client.
ONCE = {
    "bulk": ([b"", b"not json\n", b"5\n", b'{"op": "data", "token": "nobody"}\n', b'{"op": "bulk"}\n',
              b'{"op": "bulk", "token": "t", "flows": 1, "dirs": ["down"], "sample_ms": 10, "bytes": 1}\n'],
             lambda port: bulk.run_client(registry.validate({"kind": "bulk", "bytes": 1000}), "127.0.0.1", port, 1)),
    "reqrep": ([b"", b"\n", b'{"op": "reqrep", "sequence": [[5, 1]]}\n1'],
               lambda port: reqrep.run_client(registry.validate({"kind": "reqrep", "pairs": [[1, 1]], "count": 2,
                                                                 "connects": 2}), "127.0.0.1", port, 1)),
    "web": ([b"", web.HEADER.pack(3, 0), web.HEADER.pack(20, 5) + b"short"],
            lambda port: web.run_client(registry.validate({"kind": "web", "seconds": 0.2, "session_interval": 0.05,
                                                           "think_median": 0.01}), "127.0.0.1", port, 1)),
}


@pytest.mark.parametrize("kind", sorted(ONCE))
def test_a_once_server_ends_after_one_whole_client_and_not_before(tmp_path, kind):
    port, thread = serve_once(tmp_path, kind)
    junk, client = ONCE[kind]
    try:
        for j in junk:
            not_a_client(port, j)
        time.sleep(0.3)  # a server ending after one of them would be gone by now (it polls every 0.1 s)
        assert thread.is_alive(), "a connection that was no client ended the --once server"
        client(port)  # a client's several connections (set-up probes, data flows) are one client
    finally:
        bulk._report_dir = None
    thread.join(5)
    assert not thread.is_alive(), "the --once server outlived its client"


def test_once_is_for_servers_that_know_their_client():
    with pytest.raises(registry.UsageError, match="--once: the command workload's server is your command"):
        registry.main(["command", "--server", "--once", "--param", "server='true'"])
    with pytest.raises(registry.UsageError, match="--once is an option of --server"):
        registry.main(["reqrep", "--client", "--once"])
