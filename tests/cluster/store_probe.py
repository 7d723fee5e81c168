#!/usr/bin/env python3
"""A client of the rendezvous store that is not one of the job's ranks, for the security test.

  store_probe.py HOST PORT no-secret       answers the challenge without a proof
  store_probe.py HOST PORT wrong-secret    answers it with the HMAC of a guessed secret
  store_probe.py HOST PORT flood N         opens N connections at once and holds them

Prints what the store answered (core/launch/store_handshake.hpp is the protocol): for the first
two, the store's verdict ("refused: <reason>" or "accepted"); for the flood, how many connections
the store greeted and how many it closed without a word."""
import hashlib
import hmac
import socket
import struct
import sys
import time

TIMEOUT_S = 5


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def recv_frame(sock):
    (size,) = struct.unpack("!I", recv_exact(sock, 4))
    return recv_exact(sock, size)


def send_frame(sock, body):
    sock.sendall(struct.pack("!I", len(body)) + body)


def handshake(host, port, proof):
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        hello = recv_frame(sock)
        challenge = hello[2:]
        if proof is None:
            send_frame(sock, b"\x00")
        else:
            send_frame(sock, b"\x01" + hmac.new(proof, challenge, hashlib.sha256).digest())
        verdict = recv_frame(sock)
        return "accepted" if verdict[0] == 0 else "refused: " + verdict[1:].decode(errors="replace")


def flood(host, port, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=TIMEOUT_S)
        socks.append(s)
    greeted = closed = 0
    deadline = time.monotonic() + TIMEOUT_S
    for s in socks:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            recv_frame(s)
            greeted += 1
        except (ConnectionError, OSError):
            closed += 1
    for s in socks:
        s.close()
    return f"greeted {greeted} closed {closed}"


def main():
    host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "no-secret":
        print(handshake(host, port, None))
    elif mode == "wrong-secret":
        print(handshake(host, port, b"a guess"))
    elif mode == "flood":
        print(flood(host, port, int(sys.argv[4])))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
