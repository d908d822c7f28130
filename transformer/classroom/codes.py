"""Class codes and teacher keys: drawing them, and checking a key against its stored hash.

A class code reads like `amber-otter-7351`: one of 100 adjectives, one of 100 animals and four digits, so there are
100 x 100 x 10,000 = 100,000,000 codes. A server holds at most `MAX_CLASSES` (200) classes, so one guessed code
finds a class with probability 200 / 10^8 = 1 in 500,000: about 500,000 page loads per class found, more than a
day of a server's full capacity at the few page loads a second a classroom server answers. A code only lets its
holder join as a student; the class's board and settings also need the teacher key.

A rejoin code, which a teacher gives a student to take their name to another browser (`ClassStore.let_rejoin`), is
six letters and digits that cannot be misread for each other, 31^6 (about 887 million) of them, for one name in one
class until it is used or replaced; the store keeps its SHA-256.

A teacher key is `secrets.token_urlsafe(16)`: 128 random bits, shown once, never stored. The store keeps
scrypt(key, a per-class 16-byte salt) and compares in constant time. Every scrypt of the process runs on one
thread (`_HASHER`): its 16 MiB buffer is freed into that thread's malloc arena, so a burst of checks from many
threads holds one check's memory, not one per thread.
"""

import hashlib
import hmac
import secrets
from concurrent.futures import ThreadPoolExecutor

ADJECTIVES = tuple(
    """
    amber azure bold brave breezy bright brisk calm candid cheery civic clever cobalt cosmic crisp
    curly dapper daring dusky eager early earnest fancy fast fern fierce fluffy frosty gentle giddy
    glad golden grand happy hazel hearty honest humble icy indigo ivory jade jolly keen kind lavish
    lemon lively lucky lunar magic mellow merry misty modest mossy noble nimble oaken olive opal peach
    perky plucky polar proud quick quiet rapid rosy ruby rustic sandy scarlet silent silver sleek snowy
    solar sunny swift tawny teal tidy tiny topaz trusty upbeat velvet vivid warm wavy wild windy wise
    witty woolly young zesty zippy
    """.split()
)
ANIMALS = tuple(
    """
    alpaca badger bat bear beaver bison bobcat camel caribou cat cheetah crab crane cricket crow deer
    dingo dolphin dove duck eagle eel egret elk emu falcon ferret finch fox frog gecko gibbon goat
    goose gopher heron hippo horse ibex ibis iguana jackal jaguar kiwi koala lemur leopard lion llama
    lynx magpie marmot mink mole moose newt ocelot okapi orca osprey otter owl panda parrot pelican
    penguin pika puffin puma quail rabbit raven robin salmon seal shark sloth snail sparrow squid stork
    swan tapir tiger toad toucan trout turtle vole walrus weasel whale wolf wombat wren yak zebra
    marten hare lark
    """.split()
)
CODE_COUNT = len(ADJECTIVES) * len(ANIMALS) * 10_000
MAX_CODE_CHARS = 32  # longer than any code drawn here

_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "maxmem": 64 * 2**20, "dklen": 32}  # about 16 MiB and 50 ms per check
_HASHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="teacher-key")  # one thread for every scrypt


def new_class_code() -> str:
    """A random class code such as `amber-otter-7351`."""
    return f"{secrets.choice(ADJECTIVES)}-{secrets.choice(ANIMALS)}-{secrets.randbelow(10_000):04d}"


def new_teacher_key() -> str:
    """A random teacher key of 128 bits, URL-safe text."""
    return secrets.token_urlsafe(16)


REJOIN_SYMBOLS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read out in a classroom, typed from a projector
REJOIN_CODE_CHARS = 6


def new_rejoin_code() -> str:
    """A random rejoin code such as `K7P4QX`."""
    return "".join(secrets.choice(REJOIN_SYMBOLS) for _ in range(REJOIN_CODE_CHARS))


def rejoin_digest(student_id: int, rejoin_code: str) -> str:
    """What the store keeps of the student's `rejoin_code`: its SHA-256 with their id, the code read as typed, in any
    case, with spaces and dashes left out."""
    typed = "".join(ch for ch in rejoin_code.upper() if ch not in " -")
    return hashlib.sha256(f"{student_id}:{typed}".encode()).hexdigest()


def new_salt() -> bytes:
    """A fresh per-class salt for the key's hash."""
    return secrets.token_bytes(16)


def key_hash(key: str, salt: bytes) -> bytes:
    """scrypt of `key` with `salt`: what the store keeps instead of the key (computed on `_HASHER`'s thread)."""
    return _HASHER.submit(hashlib.scrypt, key.encode(), salt=salt, **_SCRYPT).result()


def key_matches(key: str, salt: bytes, stored: bytes) -> bool:
    """Whether `key` hashes to `stored`, compared in constant time."""
    return hmac.compare_digest(key_hash(key, salt), stored)
