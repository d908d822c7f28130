"""Training on a Ray cluster: a server's gateway (this module's main, the server's one Ray driver) and the Ray task
that trains each run.

    server --a socket per run--> gateway --Ray--> train_runs, a task on a node with a free CPU
                                    `--controls--> Mailbox --controls--'   (an actor on the gateway's node)

For each run the server opens a link to the gateway (a socket, passed over the gateway's control socket) and speaks
the worker protocol over it as to a worker process (`WorkerLink`). The gateway starts a `train_runs` task for the
link and relays the protocol's bytes between them, without reading them: the task's reports stream back as Ray
yields them, and what the server sends (StartRuns, then Controls) reaches the task through the Mailbox, since a
running task takes no calls. The task runs `worker.serve` on a thread over a pipe of its own, as a worker process
does, and asks for one CPU only while it trains: Ray queues it until a node has one, so servers share the cluster.
Ray keeps a task's process for the next task, so torch is imported and warmed up once per process; the gateway warms
as many processes as the server has slots when it starts, so the first Start finds one ready.

The gateway, not the server, is the Ray driver: Ray ends a driver whose cluster has been gone for a minute, and the
server must outlive its cluster. The gateway ends when the server closes its control socket, or when the cluster's
head stops taking connections (checked every WATCH_S); Ray then ends its tasks, and the server sees every link
close, as when a worker process dies. A link whose task ends (done, or its node died) closes.

    python -m transformer.serving.ray_worker FD TORCH_THREADS ADDRESS SLOTS   # a server's gateway
"""

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import transformer

NAMESPACE = "transformer-lab"
CONNECT_TIMEOUT_S = 5.0  # a cluster whose address takes no connection in this long is unreachable
WATCH_S = 5.0  # how often the gateway checks that the cluster's head still takes connections
END_GRACE_S = 10.0  # how long a task waits for its worker thread to end after its link closed


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class Mailbox:
    """What the server sends each run's task, by the task's name, in order; None ends the task's worker. Ray starts
    it again, empty, on another node when its own dies, and the calls waiting on it go to the new one: the runs that
    start after that get their settings."""

    def __init__(self):
        self.boxes: dict[str, asyncio.Queue] = {}

    async def put(self, name: str, data: bytes | None) -> None:
        self.boxes.setdefault(name, asyncio.Queue()).put_nowait(data)

    async def take(self, name: str) -> bytes | None:
        data = await self.boxes.setdefault(name, asyncio.Queue()).get()
        if data is None:
            del self.boxes[name]
        return data

    def drop(self, name: str) -> None:
        self.boxes.pop(name, None)


@ray.remote(num_cpus=1, max_retries=0)
def train_runs(torch_threads: int, mailbox: "ray.actor.ActorHandle", name: str) -> Iterator[bytes]:
    """One link's worker on the cluster: `worker.serve` on a thread, fed from the mailbox; yields every message the
    worker sends, as its bytes, until the worker ends."""
    mine, workers = socket.socketpair()
    conn = Connection(os.dup(mine.fileno()))
    worker = threading.Thread(target=serve_then_close, args=(Connection(workers.detach()), torch_threads), daemon=True)
    worker.start()
    threading.Thread(target=deliver, args=(mailbox, name, conn, mine), name="controls", daemon=True).start()
    try:
        while True:
            yield conn.recv_bytes()
    except (EOFError, OSError):
        return
    finally:
        shut(mine)
        worker.join(END_GRACE_S)  # the next task in this process does not share its CPU with this one's worker
        conn.close()
        mine.close()


@ray.remote(num_cpus=1, max_retries=0)
def warm_up(torch_threads: int) -> None:
    """Import torch and pay a first step's costs in a process of the cluster's, which Ray keeps for `train_runs`."""
    from transformer.serving.worker import prepare_process

    prepare_process(torch_threads)


def serve_then_close(conn: Connection, torch_threads: int) -> None:
    """The worker's loop (it imports torch: on the cluster's node, never in the gateway), then its end of the pipe
    closed, which ends the task's stream."""
    from transformer.serving.worker import serve

    try:
        serve(conn, torch_threads)
    finally:
        conn.close()


def deliver(mailbox: "ray.actor.ActorHandle", name: str, conn: Connection, mine: socket.socket) -> None:
    """What the server sends this task, from the mailbox to the worker in order, until the server closes the link;
    then the worker reads the end of its pipe and ends."""
    try:
        while (data := ray.get(mailbox.take.remote(name))) is not None:
            conn.send_bytes(data)
    except (OSError, RayError):  # the worker has ended, or the mailbox with its gateway
        pass
    shut(mine, socket.SHUT_WR)


def shut(sock: socket.socket, how: int = socket.SHUT_RDWR) -> None:
    """Shut a socket down, which wakes a thread reading it; one already closed is left as it is."""
    try:
        sock.shutdown(how)
    except OSError:
        pass


def reachable(address: str) -> bool:
    """Whether `host:port` takes a connection within CONNECT_TIMEOUT_S ("auto": the node's own cluster, which Ray
    finds itself). Ray's own connect retries for minutes."""
    if address == "auto":
        return True
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), CONNECT_TIMEOUT_S).close()
        return True
    except (OSError, ValueError):
        return False


def connect(address: str) -> None:
    """Join the cluster as a driver that ships this package to it, so its tasks run the server's own code."""
    if not reachable(address):
        raise ConnectionError(f"no Ray cluster answers at {address}")
    runtime_env = {"py_modules": [transformer], "excludes": ["__pycache__"]}
    ray.init(address, namespace=NAMESPACE, runtime_env=runtime_env, log_to_driver=False, logging_level="ERROR")


def relay(sock: socket.socket, name: str, mailbox: "ray.actor.ActorHandle", torch_threads: int) -> None:
    """Start a `train_runs` task called `name` (`ray list tasks` shows which server started it) for the link
    `sock`, and relay bytes both ways until the link or the task ends; then close the link."""
    conn = Connection(os.dup(sock.fileno()))
    started = threading.Event()
    task = train_runs.options(name=name).remote(torch_threads, mailbox, name)
    controls = threading.Thread(target=forward, args=(conn, mailbox, name, task, started), daemon=True)
    controls.start()
    try:
        for ref in task:
            conn.send_bytes(ray.get(ref))
            started.set()
    except RayError as err:  # the task or its node died: the server's log says why, and the server sees the link close
        print(f"training task {name} ended: {first_line(err)}", file=sys.stderr)
    except OSError:  # the server closed the link
        pass
    finally:
        shut(sock)
        controls.join()
        conn.close()
        sock.close()


def forward(
    conn: Connection,
    mailbox: "ray.actor.ActorHandle",
    name: str,
    task: "ray.ObjectRefGenerator",
    started: threading.Event,
) -> None:
    """What the server sends on the link, into the task's mailbox in order (each waits for the one before), until the
    server closes the link; then the task ends, or, not yet started, is cancelled and frees its place in Ray's queue."""
    try:
        while True:
            ray.get(mailbox.put.remote(name, conn.recv_bytes()))
    except (EOFError, OSError, RayError):
        pass
    try:
        if started.is_set():
            mailbox.put.remote(name, None)
        else:
            ray.cancel(task)
            mailbox.drop.remote(name)
    except RayError:  # the cluster has gone: the watch ends the gateway
        pass


def say_warm(control: socket.socket, warming: list["ray.ObjectRef"]) -> None:
    """Say "warm" on the control socket once the processes warming up have (or could not: the runs warm their own)."""
    try:
        ray.get(warming)
    except RayError:
        pass
    try:
        control.sendall(b"warm\n")
    except OSError:  # the server has gone
        pass


def watch(head: str) -> None:
    """End the gateway once the cluster's head takes no connection: its links close, and the server trains on."""
    while reachable(head):
        time.sleep(WATCH_S)
    print(f"the Ray cluster's head at {head} is gone", file=sys.stderr)
    os._exit(1)


def first_line(err: Exception) -> str:
    """An error in one line, for the server's log (Ray's own messages run to many)."""
    return str(err).partition("\n")[0] or repr(err)


def main(argv: list[str]) -> int:
    """Be a server's gateway (`FD TORCH_THREADS ADDRESS SLOTS`): join the cluster, say its CPUs on the control socket
    FD (or, when it cannot be joined, why: the line's text is not a number), warm up to SLOTS of its processes (and
    say "warm" when they are), and relay each link the server passes."""
    control = socket.socket(fileno=int(argv[0]))
    torch_threads, address, slots = int(argv[1]), argv[2], int(argv[3])
    try:
        connect(address)
        cpus = int(ray.cluster_resources().get("CPU", 0))
    except (ConnectionError, RayError, ValueError) as err:
        control.sendall(f"{first_line(err)}\n".encode())
        return 1
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
    mailbox = Mailbox.options(scheduling_strategy=here).remote()
    threading.Thread(target=watch, args=(ray.get_runtime_context().gcs_address,), daemon=True).start()
    control.sendall(f"{cpus}\n".encode())
    warming = [warm_up.remote(torch_threads) for _ in range(min(slots, cpus))]
    threading.Thread(target=say_warm, args=(control, warming), daemon=True).start()
    while True:
        try:
            name, fds, _, _ = socket.recv_fds(control, 256, 1)
        except OSError:
            break
        if not name or not fds:  # the server closed its socket
            break
        link = socket.socket(fileno=fds[0])
        threading.Thread(target=relay, args=(link, name.decode(), mailbox, torch_threads), daemon=True).start()
    os._exit(0)  # Ray ends this driver's tasks and its mailbox


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
