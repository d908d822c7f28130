"""The one loop every settings dataclass validates itself with. No package imports: any module can use it."""


def require_all(*checks: tuple[bool, str]) -> None:
    """ValueError with the message of the first (condition, message) pair whose condition is false; else nothing."""
    for ok, message in checks:
        if not ok:
            raise ValueError(message)
