"""A worker process, started by `worker_link.WorkerLink`: python -m transformer.serving FD TORCH_THREADS."""

import sys
from multiprocessing.connection import Connection

from .worker import serve

serve(Connection(int(sys.argv[1])), int(sys.argv[2]))
