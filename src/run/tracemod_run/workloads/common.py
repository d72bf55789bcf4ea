"""What every workload shares: addresses, the ready handshake, JSON lines on a socket, TCP_INFO, servers."""
import json
import os
import signal
import socket
import socketserver
import struct
import sys
import threading
import time

from ..errors import RunError, UsageError

# struct tcp_info (include/uapi/linux/tcp.h): byte offset and format of the fields we read. Older kernels
# return a shorter struct; a field beyond the returned length reads as None.
TCP_INFO_FIELDS = {
    "state": (0, "B"),
    "retransmits": (2, "B"),  # unrecovered RTO timeouts now
    "rto_us": (8, "I"),
    "snd_mss": (16, "I"),
    "rcv_mss": (20, "I"),
    "unacked": (24, "I"),
    "lost": (32, "I"),
    "retrans": (36, "I"),  # segments retransmitted and not yet acknowledged
    "pmtu": (60, "I"),
    "rtt_us": (68, "I"),  # smoothed RTT
    "rttvar_us": (72, "I"),
    "snd_ssthresh": (76, "I"),
    "snd_cwnd": (80, "I"),
    "total_retrans": (100, "I"),  # segments retransmitted over the connection's life
    "bytes_acked": (120, "Q"),
    "bytes_received": (128, "Q"),
    "notsent_bytes": (144, "I"),
    "min_rtt_us": (148, "I"),
    "delivery_rate": (160, "Q"),  # bytes per second
    "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"),
}
TCP_INFO_SIZE = 232


def tcp_info(sock):
    """The fields of TCP_INFO_FIELDS for SOCK, read with getsockopt(IPPROTO_TCP, TCP_INFO)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE)
    out = {}
    for name, (offset, fmt) in TCP_INFO_FIELDS.items():
        size = struct.calcsize(fmt)
        out[name] = struct.unpack_from("=" + fmt, raw, offset)[0] if offset + size <= len(raw) else None
    return out


def now():
    return time.monotonic()


# ---------------------------------------------------------------------------------------------------------
# Where the server is, and when it listens


def server_host(explicit=None):
    """The server's address: --host, else $TM_RUN_SERVER, else $TM_BASE (the outermost shell's outside, where
    its --outside server runs), else loopback."""
    for value in (explicit, os.environ.get("TM_RUN_SERVER"), os.environ.get("TM_BASE")):
        if value:
            return value
    return "127.0.0.1"


def mark_ready(path):
    """Creates PATH once the server listens (a rename, so a waiting client never sees a partial file)."""
    if path:
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(tmp, path)


def beside(ready_file, name):
    """NAME beside a server's READY_FILE, where tm-run keeps the server's other files: server.out, server.err (its
    standard error), and server.status (its exit status, written by the line that starts it, once it exits)."""
    return os.path.join(os.path.dirname(ready_file), name)


def wait_ready(path, timeout=15.0):
    """Waits until the server has made PATH; raises RunError if it exits first (as its server.status says: the
    error gives its exit status and the end of its server.err) or after TIMEOUT seconds."""
    if not path:
        return
    status = beside(path, "server.status")
    deadline = now() + timeout
    while not os.path.exists(path):
        if os.path.exists(status):
            raise RunError(_exited(status, beside(path, "server.err")))
        if now() > deadline:
            raise RunError(f"the server did not become ready within {timeout:g} s ({path} never appeared)")
        time.sleep(0.002)


def check_server(path):
    """Raises RunError if the server of ready file PATH exited with a status other than 0 while the client ran:
    what the client measured was not what the run asked for."""
    status = beside(path, "server.status") if path else None
    if status and os.path.exists(status):
        with open(status) as f:
            if f.read().strip() != "0":
                raise RunError(_exited(status, beside(path, "server.err"), when="while the client ran"))


def _exited(status_file, err_file, lines=3, most=300, when="before it was ready"):
    """'the server exited with status N WHEN: LAST LINES OF ITS STDERR'."""
    with open(status_file) as f:
        status = f.read().strip()
    try:
        with open(err_file, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            tail = [l.strip() for l in f.read().decode(errors="replace").splitlines() if l.strip()][-lines:]
    except OSError:
        tail = []
    said = " | ".join(tail)
    said = said if len(said) <= most else "..." + said[-most:]
    return f"the server exited with status {status} {when}: {said or '(nothing on its stderr)'}"


def connect(host, port, timeout=30.0, nodelay=False):
    """A connected TCP socket and the seconds connect() took (the connection's set-up time)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    start = now()
    try:
        s.connect((host, port))
    except OSError as e:
        s.close()
        raise RunError(f"connect to {host} port {port}: {e.strerror or e}") from None
    took = now() - start
    s.settimeout(None)
    return s, took


def send_json(sock, obj):
    sock.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())


def recv_json(reader):
    """One JSON line from READER (a socket's makefile('rb')); None at end of stream."""
    line = reader.readline(1 << 20)
    if not line:
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        raise RunError(f"the peer sent a line that is not JSON: {line[:80]!r}") from None


def recv_exact(sock, n, buffer=None):
    """Reads exactly N bytes (discarding them); False if the stream ended first."""
    view = memoryview(buffer or bytearray(min(n, 1 << 16) or 1))
    left = n
    while left:
        got = sock.recv_into(view, min(left, len(view)))
        if not got:
            return False
        left -= got
    return True


_ZEROS = bytes(1 << 16)


def send_count(sock, n):
    left = n
    while left:
        sent = sock.send(_ZEROS[: min(left, len(_ZEROS))])
        left -= sent


# ---------------------------------------------------------------------------------------------------------
# Servers


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def listen_addresses(host):
    if host:
        return [host]
    return ["::", "0.0.0.0"] if socket.has_ipv6 else ["0.0.0.0"]


def serve(handler, port, host=None, ready_file=None, once=False):
    """Serves HANDLER(sock) on PORT (every address by default) until SIGTERM or SIGINT; writes READY_FILE
    once listening. HANDLER returns True when its connection completed a client's whole workload (a client may
    use several connections: data flows, connection set-up probes); with ONCE, the server returns after the
    first such client. A connection that fails or breaks the protocol is reported in one line and does not
    count: a port scan or a refused client does not end a --once server."""
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                whole = handler(self.request)
            except Exception as e:  # noqa: BLE001 - whatever a client sends, the server goes on
                print(f"tm-run workload server: a client from {self.client_address[0]}: {_reason(e)}",
                      file=sys.stderr)
                whole = False
            if once and whole is True:
                threading.Thread(target=self.server.shutdown, daemon=True).start()

    server = None
    for address in listen_addresses(host):
        cls = type("S", (_Server,), {"address_family": socket.AF_INET6 if ":" in address else socket.AF_INET})
        try:
            server = cls((address, port), Handler, bind_and_activate=False)
            if cls.address_family == socket.AF_INET6 and not host:
                server.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # IPv4 too
            server.server_bind()
            server.server_activate()
            break
        except OSError as e:
            if server:
                server.server_close()
            server = None
            error = e
    if server is None:
        raise RunError(f"listen on port {port}: {error.strerror or error}")
    stop = lambda *_: threading.Thread(target=server.shutdown, daemon=True).start()  # noqa: E731
    if threading.current_thread() is threading.main_thread():  # (tests serve from a thread)
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    mark_ready(ready_file)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()


def _reason(error):
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, (OSError, RunError)):
        return str(error)
    return f"broke the protocol ({type(error).__name__}: {error})"


def positive(value, what):
    if value <= 0:
        raise UsageError(f"{what} must be positive")
    return value
