"""The values users type, read as the tools read them (src/util/parse.hh): durations, rates, sizes, queue limits,
probabilities, ports. tm-run cannot link the C++ reader, so tests/data/values.tsv holds the cases both must read
alike, and tests/unit/test_parse.cc and tests/python/test_values.py check each reader against it. Keep this
module a line-by-line counterpart of util/parse.cc: the same grammar, the same bounds, the same integer arithmetic.

Numbers are decimal: digits with at most one point ("1.5", "1.", ".5"), at most 19 digits (more is out of range),
no sign, exponent or spaces; parse_double alone takes a sign and an exponent. Durations are integer nanoseconds,
rounded up (never shorter than asked); rates integer bit/s, to the nearest. A value outside its grammar raises
UsageError(why); one in the grammar but outside its bounds raises OutOfRange, a UsageError. named() adds the
option: "invalid OPTION 'TEXT': why".
"""
import re

from .errors import UsageError

MAX_DIGITS = 19
MAX_RATE = 1000 ** 4  # 1000 gbit
MAX_DURATION = 1000 * 3600 * 10 ** 9  # 1000 hours
MAX_DELAY = 3600 * 10 ** 9  # 1 hour
MAX_QUEUE_LIMIT = 1 << 62
NANOSECOND, MICROSECOND, MILLISECOND, SECOND = 1, 10 ** 3, 10 ** 6, 10 ** 9
PACKETS, BYTES = "packets", "bytes"

RATE_UNITS = {"bit": 1, "kbit": 10 ** 3, "mbit": 10 ** 6, "gbit": 10 ** 9, "kbps": 10 ** 3, "mbps": 10 ** 6,
              "gbps": 10 ** 9}
PACKET_UNITS = {"pkt": 1, "pkts": 1, "packet": 1, "packets": 1}
BYTE_UNITS = {"b": 1, "byte": 1, "bytes": 1, "kb": 1000, "kib": 1024, "mb": 10 ** 6, "mib": 1 << 20}
TIME_UNITS = {"ns": 1, "us": 10 ** 3, "ms": 10 ** 6, "s": 10 ** 9, "min": 60 * 10 ** 9, "h": 3600 * 10 ** 9}

# [0-9], not \d: Python's \d and float() also take other scripts' digits, which the tools refuse.
_LEADING = re.compile(r"([0-9]*)(?:(\.)([0-9]*))?")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _lower(text):
    """A-Z to a-z only, as C's tolower: str.lower() would also turn the Kelvin sign into a k."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class OutOfRange(UsageError):
    """A value in the grammar but outside its bounds: too large, zero where refused, more than 19 digits."""


class _Decimal:
    """"DIGITS[.DIGITS]" at the start of a text: its digits as one integer, 10^(digits after the point), and
    the rest of the text in lower case (the unit), as util/parse.cc's leading_decimal reads it."""

    def __init__(self, text):
        m = _LEADING.match(text)
        whole, point, frac = m.group(1), m.group(2), m.group(3) or ""
        self.digits = len(whole) + len(frac)
        self.point = point is not None
        self.mantissa = int((whole + frac)[:MAX_DIGITS] or "0")
        self.scale = 10 ** min(len(frac), max(0, MAX_DIGITS - len(whole)))
        self.used = m.end()
        self.unit = _lower(text[m.end():])

    @property
    def too_long(self):
        return self.digits > MAX_DIGITS

    @property
    def whole(self):
        return self.digits > 0 and not self.point


_EXPONENT = re.compile(r"[eE][+-]?[0-9]")


def _no_exponent(d, text):
    """'an exponent is not allowed: ' if TEXT goes on after D's digits with one ('1e30bit'), as util/parse.cc
    says it before what was expected."""
    return "an exponent is not allowed: " if d.digits and _EXPONENT.match(text, d.used) else ""


def quoted(text):
    shown = "".join(c if c.isprintable() and ord(c) < 128 else "?" for c in text[:40])
    return f"'{shown}...'" if len(text) > 40 else f"'{shown}'"


def named(option, text, parse, *args):
    """PARSE(TEXT, *ARGS), its error naming OPTION: "invalid OPTION 'TEXT': why" (its class kept)."""
    try:
        return parse(text, *args)
    except UsageError as e:
        raise type(e)(f"invalid {option} {quoted(text)}: {e}") from None


def _format_duration(t):
    for name, scale in reversed(TIME_UNITS.items()):
        if t % scale == 0:
            return f"{t // scale} {name}"


def parse_double(text):
    """TEXT as a finite decimal number, a sign and an exponent allowed; None if it is not one."""
    if not _DOUBLE.fullmatch(text):
        return None
    v = float(text)  # correctly rounded, as strtod; underflow gives 0 as there
    return v if v not in (float("inf"), float("-inf")) else None


def parse_rate(text):
    """'12mbit' -> 12000000 bit/s, rounded to the nearest; a unit required, 1 bit/s to 1000 gbit."""
    d = _Decimal(text)
    if d.digits == 0 or d.unit not in RATE_UNITS:
        raise UsageError(f"invalid rate {quoted(text)}: {_no_exponent(d, text)}expected a number and a unit: bit, "
                         "kbit, mbit, gbit, kbps, mbps or gbps (e.g. 12mbit)")
    if d.too_long:
        raise OutOfRange(f"invalid rate {quoted(text)}: more than 19 digits")
    bits = (d.mantissa * RATE_UNITS[d.unit] + d.scale // 2) // d.scale
    if bits == 0:
        raise OutOfRange(f"invalid rate {quoted(text)}: must be at least 1 bit/s")
    if bits > MAX_RATE:
        raise OutOfRange(f"invalid rate {quoted(text)}: above the largest rate, 1000gbit")
    return bits


def parse_duration(text, bare_unit=0, max=MAX_DURATION, min=0):  # noqa: A002 - the C++ names
    """'200ms' -> 200000000 ns, rounded up; a bare number is in BARE_UNIT ns (refused if 0); MIN to MAX ns."""
    d = _Decimal(text)
    scale = TIME_UNITS.get(d.unit) if d.unit else bare_unit
    if d.digits == 0 or not scale:
        raise UsageError(_no_exponent(d, text) + "expected a duration" +
                         (" (a unit is optional)" if bare_unit else " and a unit") +
                         ": ns, us, ms, s, min or h (e.g. 200ms or 1.5s)")
    if d.too_long:
        raise OutOfRange("more than 19 digits")
    ns = -(-(d.mantissa * scale) // d.scale)  # rounded up: never shorter than asked
    if ns > max:
        raise OutOfRange(f"longer than the largest allowed, {_format_duration(max)}")
    if ns < min:
        raise OutOfRange(f"shorter than the smallest allowed, {_format_duration(min)}")
    return ns


def parse_delay(text):
    """Mahimahi's milliseconds ('40', '2.007') or a duration with a unit, 0 to 1 h, in ns."""
    return parse_duration(text, MILLISECOND, MAX_DELAY)


def parse_probability(text):
    """'0.01' or '1%' -> 0.01; from 0 to 1."""
    expected = "expected a probability from 0 to 1, or a percentage (e.g. 0.01 or 1%)"
    percent = text.endswith("%")
    v = parse_double(text[:-1] if percent else text)
    if v is None:
        raise UsageError(expected)
    if not 0 <= v <= (100 if percent else 1):
        raise OutOfRange(expected)
    return v / 100 if percent else v


def _range_text(low, high):
    return f" from {low} to {'2^62' if high == MAX_QUEUE_LIMIT else high}"


def _scaled_whole(d, scale, low, high, why):
    n = d.mantissa * scale
    if d.too_long or not low <= n <= high:
        raise OutOfRange(why)
    return n


def parse_whole_number(text, low, high, unit="a whole number"):
    """Digits only, LOW to HIGH."""
    why = f"expected {unit}{_range_text(low, high)}"
    d = _Decimal(text)
    if not d.whole or d.unit:
        raise UsageError(why)
    return _scaled_whole(d, 1, low, high, why)


def parse_port(text):
    return parse_whole_number(text, 1, 65535, "a port")


def _limit_scale(unit, kind):
    """The scale of UNIT as a limit of KIND: 1 for a bare number, 0 for a unit of the other kind."""
    if not unit:
        return 1
    return (PACKET_UNITS if kind == PACKETS else BYTE_UNITS).get(unit, 0)


def parse_bytes(text, low, high):
    """'1500', '1500B', '64KiB': a whole number of bytes, LOW to HIGH."""
    d = _Decimal(text)
    why = f"{_no_exponent(d, text)}expected bytes{_range_text(low, high)}, a unit optional: B, kB, KiB, MB or MiB"
    scale = _limit_scale(d.unit, BYTES)
    if not d.whole or not scale:
        raise UsageError(why)
    return _scaled_whole(d, scale, low, high, why)


def parse_queue_limit(text, kind):
    """A limit of KIND (PACKETS or BYTES) where the key names the kind: '1000' or '1000pkts', '150kB'; 0: none."""
    d = _Decimal(text)
    scale = _limit_scale(d.unit, kind)
    if not d.whole or not scale:
        raise UsageError("expected a whole number of packets (e.g. 100 or 100pkts)" if kind == PACKETS else
                         "expected a whole number of bytes (e.g. 150000, 150000B or 150kB)")
    return _scaled_whole(d, scale, 0, MAX_QUEUE_LIMIT, "a queue limit must be at most 2^62")


def parse_queue_size(text):
    """'7pkts', '150000B', '7pkts,150000B' or 'unlimited' -> (packets, bytes), 0 where there is no limit."""
    expected = ("expected packets or bytes, or both joined by a comma (e.g. 7pkts, 150000B or 7pkts,150000B), "
                "or unlimited")
    limits = {PACKETS: 0, BYTES: 0}
    if _lower(text) == "unlimited":
        return 0, 0
    for term in text.split(","):
        d = _Decimal(term)
        kind = PACKETS if d.unit in PACKET_UNITS else BYTES
        scale = _limit_scale(d.unit, kind) if d.unit else 0
        if not d.whole or not scale or limits[kind]:
            raise UsageError(expected)
        limits[kind] = _scaled_whole(d, scale, 1, MAX_QUEUE_LIMIT,
                                     "a queue limit must be" + _range_text(1, MAX_QUEUE_LIMIT))
    return limits[PACKETS], limits[BYTES]


# ---------------------------------------------------------------------------------------------------------
# tm-run's keys: a number is in the unit the key names (seconds = 5, sample_ms = 10, as ever); a string is read
# by the grammar above, a bare number in that same unit ("5", "500ms", "2min").


def seconds(text):
    """A duration string in seconds (float), bare seconds or with a unit."""
    return parse_duration(text, SECOND) / SECOND


def milliseconds(text):
    """A duration string in milliseconds (float), bare milliseconds or with a unit."""
    return parse_duration(text, MILLISECOND) / MILLISECOND


def byte_count(text):
    """A size string in bytes, bare or with a unit."""
    return parse_bytes(text, 0, MAX_QUEUE_LIMIT)


def port(text):
    """A port string: 1 to 65535."""
    return parse_port(text)
