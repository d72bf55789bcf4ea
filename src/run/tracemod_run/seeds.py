"""Seeds: every random choice of a run follows from the experiment's base seed and the run's identity."""
import hashlib


def derive(base, *parts):
    """A 63-bit seed from BASE and PARTS (strings or numbers): the same inputs always give the same seed, and
    a run's seed does not depend on its position in the run list or in a shard."""
    text = "\0".join(str(p) for p in (base, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1
