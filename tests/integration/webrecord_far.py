"""The far side of test_webrecord.py's any-port tests: what a developer's command meets besides web sites on 80
and 443, and the client that meets it. Run with python3 -c SOURCE (the unprivileged user may not read the tree):

    serve CERTDIR ADDRESS...    listens on every ADDRESS, then returns, a child serving on (until the shell's pid
                                namespace ends):
        3000  a dev server, plain HTTP/1.1 (keep-alive): GET /NAME is 200 with body(NAME), /missing is 404
        8443  the same over TLS (CERTDIR/server.pem and server.key), ALPN http/1.1
        7000  echo: every byte back, the client's end passed on as one
        2525  speaks first: "220 far ready", then "221 bye WHAT-IT-GOT" and closes (as SMTP does)
        53    TCP: says the address of the peer as it sees it, and closes (DNS over TCP is not intercepted)
    probe ADDRESS SELF          meets them: the echo (ECHO_BYTES both ways), the banner, the peer on 53, and a
                                connection straight to SELF (the recorder's address:port), which it must close
                                at once: a line each

The expected bodies come from body() and answer(), which the tests import."""
import hashlib
import os
import random
import socket
import ssl
import sys
import threading

HTTP, HTTPS, ECHO, BANNER, DNS = 3000, 8443, 7000, 2525, 53
ECHO_BYTES = 300_000


def body(path):
    """The dev server's body for PATH: deterministic bytes, 4 KB (325 KB for /big)."""
    lines = 5000 if path == "/big" else 64
    return b"".join(hashlib.sha256(f"{path}/{i}".encode()).hexdigest().encode() + b"\n" for i in range(lines))


def answer(path):
    """(status, body) for a GET of PATH."""
    return (404, b"not here\n") if path == "/missing" else (200, body(path))


def http(conn):
    f = conn.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            return
        method, path, _ = line.decode().split(" ", 2)
        while f.readline() not in (b"\r\n", b"\n", b""):
            pass
        status, data = answer(path)
        head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(data)}\r\n\r\n")
        conn.sendall(head.encode() + (b"" if method == "HEAD" else data))


def echo(conn):
    while True:
        data = conn.recv(65536)
        if not data:
            conn.shutdown(socket.SHUT_WR)
            return
        conn.sendall(data)


def banner(conn):
    conn.sendall(b"220 far ready\r\n")
    got = conn.recv(100)
    conn.sendall(b"221 bye " + got.strip() + b"\r\n")


def peer(conn):
    conn.sendall(conn.getpeername()[0].encode() + b"\n")


def accept_all(listener, handle, context=None):
    while True:
        conn, _ = listener.accept()

        def run(conn=conn):
            try:
                if context:
                    conn = context.wrap_socket(conn, server_side=True)
                handle(conn)
            except OSError:
                pass
            finally:
                conn.close()

        threading.Thread(target=run, daemon=True).start()


def serve(certdir, addresses):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(certdir, "server.pem"), os.path.join(certdir, "server.key"))
    context.set_alpn_protocols(["http/1.1"])
    handlers = {HTTP: (http, None), HTTPS: (http, context), ECHO: (echo, None), BANNER: (banner, None),
                DNS: (peer, None)}
    listeners = []
    for address in addresses:
        for port, (handle, ctx) in handlers.items():
            s = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((address, port))
            s.listen(64)
            listeners.append((s, handle, ctx))
    if os.fork():
        return  # listening: the caller goes on
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    threads = [threading.Thread(target=accept_all, args=l, daemon=True) for l in listeners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def probe_echo(address):
    data = random.Random(7).randbytes(ECHO_BYTES)
    with socket.create_connection((address, ECHO), timeout=10) as s:
        def send():
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        sender.start()
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        sender.join()
    print("echo", "ok" if got == data else f"got {len(got)} bytes of {len(data)}")


def probe_banner(address):
    with socket.create_connection((address, BANNER), timeout=10) as s:
        f = s.makefile("rb")
        first = f.readline().decode().strip()
        s.sendall(b"QUIT\r\n")
        print("banner", first, "/", f.readline().decode().strip())


def probe_dns(address):
    with socket.create_connection((address, DNS), timeout=10) as s:
        print("dns peer", s.makefile("rb").readline().decode().strip())


def probe_self(self_address):
    """Sends nothing: were the connection taken for one to relay, the recorder would wait for its first bytes
    (and the origin's, itself) and this would time out."""
    host, port = self_address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        print("self", "closed" if s.recv(100) == b"" else "answered")


def main(argv):
    if argv[0] == "serve":
        serve(argv[1], argv[2:])
        return
    address, self_address = argv[1], argv[2]
    for probe in (probe_echo, probe_banner, probe_dns):
        probe(address)
    probe_self(self_address)


if __name__ == "__main__":
    main(sys.argv[1:])
