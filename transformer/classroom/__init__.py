"""A teacher's class: codes and keys, assignments and groups, built-in questions, the database that keeps it all,
and the board's data. UI-free: pages call these and draw the results."""

from .assignment import Assignment, Group
from .database import database_url
from .errors import ClassroomError, TooManyAttempts, UnknownClass, WrongKey
from .questions import QUESTIONS, Question
from .records import Caller, ClassInfo, Prediction, RunState, Snapshot, Student
from .store import ClassStore

__all__ = [
    "QUESTIONS",
    "Assignment",
    "Caller",
    "ClassInfo",
    "ClassStore",
    "ClassroomError",
    "Group",
    "Prediction",
    "Question",
    "RunState",
    "Snapshot",
    "Student",
    "TooManyAttempts",
    "UnknownClass",
    "WrongKey",
    "database_url",
]
