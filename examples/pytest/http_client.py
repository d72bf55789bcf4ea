#!/usr/bin/python3
"""The application under test in these examples: fetches URL and prints the body (or, with --discard, its size
and the seconds it took). Each attempt waits --timeout seconds at most; a failed one is tried again --retries
times, half a second apart."""
import argparse
import sys
import time
import urllib.request


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--timeout", type=float, default=5)
    p.add_argument("--retries", type=int, default=0)
    p.add_argument("--discard", action="store_true")
    args = p.parse_args()
    started = time.monotonic()
    for attempt in range(args.retries + 1):
        try:
            with urllib.request.urlopen(args.url, timeout=args.timeout) as r:
                body = r.read()
            break
        except OSError as e:
            print(f"attempt {attempt + 1}: {e}", file=sys.stderr)
            if attempt == args.retries:
                return 1
            time.sleep(0.5)
    if args.discard:
        print(f"{len(body)} bytes in {time.monotonic() - started:.3f} s")
    else:
        sys.stdout.write(body.decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
