"""A user's uploaded file: its name made safe to show, and an uploaded checkpoint read with its label."""

import re

from .checkpoint import Checkpoint, load_checkpoint


def read_upload(filename: str, data: bytes) -> tuple[Checkpoint, str]:
    """An uploaded checkpoint and its label, "uploaded: <filename>"; CheckpointError if the file is not one."""
    return load_checkpoint(data), f"uploaded: {shown_name(filename)}"


def shown_name(filename: str, limit: int = 60) -> str:
    """A user's file name made safe to show: letters, digits, spaces and . - _ only, at most `limit` characters."""
    name = re.sub(r"[^\w. -]", "_", filename).strip() or "file"
    return name if len(name) <= limit else name[: limit - 3] + "..."
