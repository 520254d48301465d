"""serve_h2drain.py: an HTTP/2 stream in flight while strata serve drains.

    python3 tests/serve_h2drain.py http://127.0.0.1:PORT PATH BODY SPLIT

Speaks HTTP/2 with prior knowledge on a plain socket (no HTTP/2 library:
the frames are written by hand, headers as HPACK literals).  Opens one
stream, a PUT of BODY to PATH, and sends the first SPLIT bytes of BODY;
then waits (at most 30 s) for the server's GOAWAY, which it sends once it
is told to stop (tests/serve.sh sends SIGTERM meanwhile).  Checks that the
GOAWAY says NO_ERROR and names this stream as the last one it will serve,
then sends the rest of BODY and checks that the answer is 200 (HPACK's
static entry for ":status: 200", 0x88) with the JSON of a document
operation.  Prints one line per failed check and "h2drain: N passed, M
failed"; the exit status is 1 when any failed.
"""
import json
import socket
import struct
import sys
import urllib.parse

from pycheck import check, fail, finish, set_suite

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY = 0x0, 0x1, 0x4, 0x7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1

url = urllib.parse.urlparse(sys.argv[1])
path, body, split = sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
set_suite("h2drain")


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    """A header as an HPACK literal without indexing, new name, no Huffman
    (names and values here are under 127 bytes)."""
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("the server closed the connection")
        buf += chunk
    return buf


def read_frame(sock):
    head = read_exact(sock, 9)
    length = struct.unpack(">I", b"\0" + head[:3])[0]
    stream = struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
    return head[3], head[4], stream, read_exact(sock, length)


sock = socket.create_connection((url.hostname, url.port), timeout=30)
block = literal(":method", "PUT") + literal(":scheme", "http") + \
    literal(":path", path) + literal(":authority", url.netloc) + \
    literal("content-length", str(len(body)))
sock.sendall(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block) +
             frame(DATA, 0, 1, body[:split]))
goaway = None
status = None
answer = b""
try:
    while goaway is None:
        ftype, flags, stream, payload = read_frame(sock)
        if ftype == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif ftype == GOAWAY:
            goaway = struct.unpack(">II", payload[:8])
    check("GOAWAY last stream and error code", (goaway[0] & 0x7FFFFFFF, goaway[1]), (1, 0))
    sock.sendall(frame(DATA, END_STREAM, 1, body[split:]))
    done = False
    while not done:
        ftype, flags, stream, payload = read_frame(sock)
        if stream != 1:
            continue
        if ftype == HEADERS:
            status = payload[:1]
        elif ftype == DATA:
            answer += payload
        done = bool(flags & END_STREAM) or ftype == 0x3  # RST_STREAM
except (EOFError, OSError) as e:
    fail(str(e))
check("status 200", status, b"\x88")
try:
    check("answer id", json.loads(answer.decode()).get("pathId"), path.split("?")[0])
except ValueError:
    check("answer is JSON", answer, "JSON")
finish()
