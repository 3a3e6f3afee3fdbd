#!/usr/bin/env python3
# Measures what a daemon holds for Query answers nobody reads
# (docs/reliability.md, "Query calls whose answers the client never reads").
#
#   python3 scripts/unread-answers.py PORT CONNS STREAMS PID SECONDS
#
# Opens CONNS raw HTTP/2 connections to the daemon's gRPC port with a stream
# window of 0, each asking STREAMS GetLedger of ledgers 1..64 and reading
# nothing, then prints the daemon's RSS and peak RSS (kB, from /proc/PID) each
# second, the gRPC statuses seen so far, and how many reads found the
# connection closed. Needs the h2 package (Debian: python3-h2; or pip).
import socket, sys, time, random
import h2.connection, h2.config, h2.events, h2.settings
port, conns, streams, pid, secs = (int(a) for a in sys.argv[1:6])
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith(("VmRSS", "VmHWM")):
            yield l.split()[1]
cs = []
for _ in range(conns):
    s = socket.create_connection(("127.0.0.1", port))
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.local_settings = h2.settings.Settings(client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    c.initiate_connection()
    for i in range(streams):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
            (":path", "/ledgerstore.v1.Query/GetLedger"), ("content-type", "application/grpc"), ("te", "trailers")])
        seq = random.randint(1, 64)
        msg = bytes([0x08, seq])
        c.send_data(sid, bytes([0, 0, 0, 0, len(msg)]) + msg, end_stream=True)
    s.sendall(c.data_to_send())
    s.setblocking(False)
    cs.append((s, c))
st = {}
closed = 0
for t in range(secs):
    time.sleep(1)
    for s, c in cs:
        try:
            data = s.recv(1 << 20)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            closed += 1; continue
        try:
            evs = c.receive_data(data)
        except Exception:
            continue
        for e in evs:
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                for k, v in e.headers:
                    if k in (b"grpc-status", "grpc-status"):
                        st[v] = st.get(v, 0) + 1
        try: s.sendall(c.data_to_send())
        except OSError: pass
    print(t, "RSS/HWM kB", list(rss()), "statuses", st, "closed-reads", closed, flush=True)
