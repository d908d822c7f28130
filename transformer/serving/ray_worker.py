"""A training worker on a Ray cluster: `TrainingActor` runs the worker loop (`worker.serve`) on a node the cluster
picks, and a proxy process on the server relays the worker protocol's bytes between its pipe to the server and the
actor, without reading them.

    server --pipe--> proxy (this module's main, a Ray driver) --Ray--> TrainingActor --in-process pipe--> serve

The server talks to the proxy exactly as to a local worker process (`WorkerLink`), so the queue, the controls, the
caps and a lost worker's end are the same on both transports. The proxy, not the server, is the Ray driver: a
driver whose cluster goes away is ended by Ray a minute later, and the server must outlive its cluster. The proxy
ends when its pipe closes, when the actor dies (its node died, or it was killed), or when the cluster cannot be
reached; the server sees its pipe close, as when a worker process dies.

    python -m transformer.serving.ray_worker FD TORCH_THREADS ADDRESS NAME  # the proxy of one training slot
    python -m transformer.serving.ray_worker --cpus ADDRESS                # prints the cluster's CPUs
"""

import os
import socket
import sys
import threading
from multiprocessing import Pipe
from multiprocessing.connection import Connection

import ray
from ray.exceptions import RayError

import transformer

NAMESPACE = "transformer-lab"
CONNECT_TIMEOUT_S = 5.0  # a cluster whose address takes no connection in this long is unreachable


@ray.remote(num_cpus=1, max_restarts=0, concurrency_groups={"reports": 1, "controls": 1})
class TrainingActor:
    """One training slot on the cluster: `worker.serve` on a thread of its own, over a pipe inside this process.
    `reports` streams what the worker sends; `send` hands it what the server sends, one message at a time (each
    concurrency group has one thread, so a control reaches the worker while `reports` is streaming)."""

    def __init__(self, torch_threads: int):
        from .worker import serve  # imports torch: on the cluster's node, never in the proxy

        self.conn, theirs = Pipe()
        threading.Thread(target=serve, args=(theirs, torch_threads), name="training-worker", daemon=True).start()

    @ray.method(concurrency_group="reports")
    def reports(self):
        """Every message the worker sends, as its bytes, until the worker ends."""
        while True:
            try:
                yield self.conn.recv_bytes()
            except (EOFError, OSError):
                return

    @ray.method(concurrency_group="controls")
    def send(self, data: bytes) -> None:
        self.conn.send_bytes(data)


def reachable(address: str) -> bool:
    """Whether the cluster's address takes a connection within CONNECT_TIMEOUT_S ("auto": the node's own cluster,
    which Ray finds itself). Ray's own connect retries for minutes."""
    if address == "auto":
        return True
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), CONNECT_TIMEOUT_S).close()
        return True
    except (OSError, ValueError):
        return False


def connect(address: str) -> None:
    """Join the cluster as a driver that ships this package to it, so the actor runs the server's own code."""
    if not reachable(address):
        raise ConnectionError(f"no Ray cluster answers at {address}")
    runtime_env = {"py_modules": [transformer], "excludes": ["__pycache__"]}
    ray.init(address, namespace=NAMESPACE, runtime_env=runtime_env, log_to_driver=False, logging_level="ERROR")


def relay(conn: Connection, torch_threads: int, name: str) -> None:
    """Start a TrainingActor called `name` (`ray list actors` shows which server started it) and relay bytes both
    ways until the pipe closes or the actor ends."""
    actor = TrainingActor.options(name=name).remote(torch_threads)
    threading.Thread(target=forward_controls, args=(conn, actor), name="controls", daemon=True).start()
    try:
        for ref in actor.reports.options(num_returns="streaming").remote():
            conn.send_bytes(ray.get(ref))
    except RayError as err:  # the actor or its node died: the server's log says why, the server sees the pipe close
        print(f"training actor {name} ended: {first_line(err)}", file=sys.stderr)
    except OSError:  # the server closed the pipe
        pass


def forward_controls(conn: Connection, actor: "ray.actor.ActorHandle") -> None:
    """What the server sends, to the actor in order (each waits for the one before); the proxy ends with the pipe."""
    try:
        while True:
            ray.get(actor.send.remote(conn.recv_bytes()))
    except (EOFError, OSError, RayError):
        ray.kill(actor)
        os._exit(0)  # the main thread may be waiting on the actor's stream: end the driver, and Ray its actor


def first_line(err: Exception) -> str:
    """An error in one line, for the server's log (Ray's own messages run to many)."""
    return str(err).partition("\n")[0] or repr(err)


def main(argv: list[str]) -> int:
    """Print the cluster's CPUs (`--cpus ADDRESS`), or be a slot's proxy (`FD TORCH_THREADS ADDRESS NAME`); 1, with
    the reason on stderr, when the cluster cannot be reached (a proxy's server then sees its pipe close)."""
    asking = argv[0] == "--cpus"
    conn = None if asking else Connection(int(argv[0]))
    try:
        connect(argv[1] if asking else argv[2])
    except (ConnectionError, RayError, ValueError) as err:
        print(first_line(err), file=sys.stderr)
        return 1
    if asking:
        print(int(ray.cluster_resources().get("CPU", 0)))
    else:
        relay(conn, int(argv[1]), argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
