"""What the class store refuses: each error carries a message for the person who asked."""


class ClassroomError(ValueError):
    """A request the store refuses, with a message for the person who made it."""


class UnknownClass(ClassroomError):
    """No class has this code (or it has expired, or was deleted)."""


class WrongKey(ClassroomError):
    """No class has this code, or the teacher key does not match: one error for both, so that the Teacher form does
    not tell which codes exist."""


class WrongRejoin(ClassroomError):
    """The rejoin code does not match the one the teacher gave for this name: counted against the browser."""


class TooManyAttempts(ClassroomError):
    """Too many attempts of one kind from one person lately (a rate limit of `transformer.limits`)."""
