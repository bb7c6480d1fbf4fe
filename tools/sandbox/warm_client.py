"""Stands in for a sandboxed kernel's process: ``python -I warm_client.py SOCKET REQUEST``.

tools/sandbox/kernel.py starts this (standard library only, a few
milliseconds) in place of bubblewrap when a warm template (tools/sandbox/warm.py) can
run the kernel. It hands the request to the template, which forks the
sandboxed kernel, and waits: it exits with the kernel's exit status, as
bubblewrap would. When this process is killed (the kernel manager's shutdown
or kill), the template sees its connection close and kills the kernel and
everything it started.
"""

import json
import socket
import sys


def main(argv):
    sock_path, request_path = argv[1], argv[2]
    with open(request_path, "rb") as f:
        request = f.read().strip() + b"\n"
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sock_path)
    conn.sendall(request)
    reader = conn.makefile("rb")
    for line in reader:
        answer = json.loads(line)
        if "error" in answer:
            sys.stderr.write(f"warm template: {answer['error']}\n")
            return 125
        if "status" in answer:
            status = answer["status"]
            return 128 - status if status < 0 else status
    return 125  # the template went away


if __name__ == "__main__":
    sys.exit(main(sys.argv))
