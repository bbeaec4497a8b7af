"""The one bounded way to read a file someone else may have made: a run
directory from a fleet host or a shared folder, a trace, an index.

read_bytes reads a regular file only (never a device, FIFO or socket, which
could block or never end: it opens without blocking and checks), and at
most a limit of bytes. read_json parses JSON no deeper than MAX_DEPTH
(Python's decoder recurses: a document nested 200,000 deep raised
RecursionError), checked before the decoder runs by a scan of the brackets
outside strings. Both raise ValueError with the path and the fault."""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

MAX_DEPTH = 64               # results.json nests 6 deep; a campaign or fleet index less
MAX_BYTES = 1 << 30          # a results.json of a full run is a few MB (its samples are in samples/)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


def open_regular(path: Path):
    """path opened for reading in binary if it is a regular file (opened without blocking, then checked:
    a FIFO's open never waits for a writer); ValueError if it is anything else, OSError if it cannot be
    opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file (a device, FIFO or socket is never read)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes, at most limit of them (ValueError beyond, or for anything but a regular
    file, or when it cannot be read)."""
    try:
        with open_regular(path) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes: not a file osmeter reads")
    return data


def depth(raw: bytes | str) -> int:
    """How deep raw's arrays and objects nest (brackets inside strings not counted)."""
    b = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b'""', b))
    level = top = 0
    for c in brackets:
        level += 1 if c in b"[{" else -1
        top = max(top, level)
    return top


def loads(raw: bytes | str, where: object, max_depth: int = MAX_DEPTH):
    """raw parsed as JSON, no deeper than max_depth; ValueError (json.JSONDecodeError for bad JSON, as
    json.loads) names where."""
    d = depth(raw)
    if d > max_depth:
        raise ValueError(f"{where}: JSON nested {d} deep, more than {max_depth}: not a file osmeter wrote")
    try:
        return json.loads(raw)
    except RecursionError:  # cannot happen below max_depth; kept as the last bound
        raise ValueError(f"{where}: JSON nested too deep to read") from None


def read_json(path: Path, limit: int = MAX_BYTES, max_depth: int = MAX_DEPTH):
    """A regular file of JSON, bounded in size and depth; every fault a ValueError naming path."""
    raw = read_bytes(path, limit)
    try:
        return loads(raw, path, max_depth)
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a JSON text (not UTF-8)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e.msg} at line {e.lineno}") from None
