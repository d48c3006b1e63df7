"""Tables in and out, in chunks: CSV (any delimiter/encoding, compressed or not), Parquet, Arrow IPC, stdin/stdout.

`open_table` reads a table of numeric columns (and optionally one subject-id column of any type) in record
batches, so a file of any size is read in O(chunk) memory; `TableWriter` writes released records as they
come, to a temporary file that is renamed into place only on success (an interrupted or failed run leaves
no partial output). Parsing is pyarrow's (C++, streaming); errors are reported as `InputError` with the
file, line and column and what to do, never as a traceback.

This module imports neither JAX nor the rest of jaxdp, so the CLI can check files before it starts JAX.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import signal
import sys
from collections.abc import Iterator

import numpy as np

__all__ = ["InputError", "TableReader", "TableWriter", "open_table", "detect_format", "FORMATS", "check_writable"]

FORMATS = ("csv", "parquet", "arrow")
_COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = [(b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd")]
_CHUNK_ROWS = 131_072
RESCAN_BYTES = 1 << 30  # how far an error path rescans a CSV to name a line


def _plain_id_type(t):
    """The type ids are written back in: a dictionary's value type, else the input's."""
    pa = _pyarrow()
    return t.value_type if pa.types.is_dictionary(t) else t


MISSING_ID_MARKERS = ("#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
                      "NA", "NULL", "NaN", "None", "n/a", "nan", "null", "NAN", "none", "Null", "na")
"""Text ids read as missing (refused, like an empty id): pandas' default missing-value markers and their usual
spellings, compared after trimming white space."""
_MISSING_ID_EXAMPLES = ("'NaN'", "'NA'", "'null'", "'None'", "'N/A'")


def id_values(ids) -> list:
    """An Arrow id column as exact, hashable Python values: temporal ids as their integer counts (found in review:
    nanosecond timestamps came back as microsecond datetimes, merged or misprinted), others as `to_pylist`."""
    pa = _pyarrow()
    t = _plain_id_type(ids.type)
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        plain = ids.dictionary_decode() if pa.types.is_dictionary(ids.type) else ids
        return plain.cast(_id_int(t)).to_pylist()
    return ids.to_pylist()  # (intervals: hashable MonthDayNano values)


def _id_int(t):
    """The integer type a temporal id type casts to: its own width (found in review: date32 and time32 ids could
    not be cast to int64 and ended in a traceback)."""
    pa = _pyarrow()
    return pa.int32() if t.bit_width == 32 else pa.int64()


def _id_array(values, id_type):
    """`id_values` back into an Arrow array of the input's type (found in review: the type was guessed, so uint64
    ids ≥ 2⁶³ overflowed and nanosecond timestamps were truncated)."""
    pa = _pyarrow()
    if id_type is None:
        return pa.array(values)
    t = _plain_id_type(id_type)
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        return pa.array(values, _id_int(t)).cast(t)
    return pa.array(values, type=t)


class InputError(Exception):
    """A problem with the user's input or options, reported with exit code 2 and a message saying what to fix."""


def _pyarrow():
    try:
        import pyarrow as pa
    except ImportError as err:  # pragma: no cover - pyarrow is a dependency
        raise InputError("reading and writing tables needs pyarrow: pip install pyarrow") from err
    return pa


_CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".tab", ".dat", ".psv")


def detect_format(path: str, fmt: str | None = None, *, output: bool = False) -> tuple[str, str | None]:
    """(format, compression) from an explicit `fmt` or the file name's suffixes ("-" is CSV). For an `output`
    whose suffix names no format jaxdp writes (e.g. ``.xlsx``, ``.json``), refuse rather than write CSV under it
    (found in review: ``-o out.xlsx`` wrote a CSV file silently); a name without a suffix is CSV."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"--{'output' if output else 'input'}-format must be one of {FORMATS}, got {fmt!r}.")
    name = os.path.basename(path).lower()
    compression = None
    for suffix, codec in _COMPRESSIONS.items():
        if name.endswith(suffix):
            compression, name = codec, name[: -len(suffix)]
            break
    if fmt is None:
        if name.endswith((".parquet", ".pq")):
            fmt = "parquet"
        elif name.endswith((".arrow", ".feather", ".ipc", ".arrows")):
            fmt = "arrow"
        else:
            suffix = os.path.splitext(name)[1]
            if output and path != "-" and suffix[1:].isalpha() and suffix not in _CSV_SUFFIXES:  # ("eps0.5" is CSV)
                raise InputError(f"{path}: jaxdp writes CSV ({', '.join(_CSV_SUFFIXES)}, optionally .gz/.bz2/.xz/.zst), "
                                 f"Parquet (.parquet) or Arrow (.arrow, .feather), not {suffix!r}: rename the output, "
                                 "or pass --output-format.")
            fmt = "csv"
    if compression and fmt != "csv":
        raise InputError(f"{path}: {compression} compression is for CSV files; Parquet and Arrow compress internally.")
    return fmt, compression


def _encoding_example(head: bytes) -> str:
    """The --encoding to suggest for text that did not decode: utf-16 where it starts with a UTF-16 byte-order mark
    (found in review: latin-1 was suggested for a UTF-16 file, and its header then read as 'ÿþa\\x00…')."""
    return "--encoding utf-16" if bytes(head[:2]) in (b"\xff\xfe", b"\xfe\xff") else "--encoding latin-1"


def _unicode_wide(encoding: str) -> bool:
    """Whether `encoding` is UTF-16 or UTF-32 (any byte order), which start with a byte-order mark FF FE / FE FF."""
    try:
        return codecs.lookup(encoding).name.startswith(("utf-16", "utf-32"))
    except LookupError:
        return False


def _sniff(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(8)


class _Utf8(io.RawIOBase):
    """A byte stream in `encoding`, re-encoded as UTF-8 as it is read, counting lines so that a byte that is not
    valid text is reported with its line. Used for stdin (found in review: a UTF-16 stdin was split at its first
    b"\\n" byte and refused, while the same file was read) and for the rescans that name an error's line."""

    def __init__(self, raw, encoding: str, name: str):
        try:
            self._dec = codecs.getincrementaldecoder(encoding)(errors="strict")
        except LookupError:
            raise InputError(f"--encoding {encoding!r} is not an encoding Python knows (try utf-8 or latin-1).") from None
        self._raw, self._enc, self._name = raw, encoding, name
        self._out, self._pos, self._eof, self._lines, self._cr = b"", 0, False, 0, False
        self.bytes_read = 0

    def _newlines(self, text: str) -> int:
        """Line ends in `text` as pyarrow counts them: CRLF, CR or LF (a CRLF split across chunks counts once).
        Found in review: only LF was counted, so errors in a file with CR line ends were put on line 1."""
        n = text.count("\n") + text.count("\r") - text.count("\r\n")
        return n - 1 if self._cr and text.startswith("\n") else n

    def readable(self):
        return True

    def readinto(self, b):
        while self._pos == len(self._out) and not self._eof:
            chunk = self._raw.read(1 << 20)
            self._eof = not chunk
            self.bytes_read += len(chunk)
            state = self._dec.getstate()
            try:
                text = self._dec.decode(chunk, final=self._eof)
            except UnicodeDecodeError as err:
                # the valid text before the bad byte, decoded in the byte order found so far (found in review:
                # a UTF-16 BE prefix after the first chunk was decoded as LE, and its lines were not counted)
                prefix = codecs.getincrementaldecoder(self._enc)(errors="replace")
                try:
                    prefix.setstate((b"", state[1]))
                except (TypeError, ValueError, IndexError):
                    pass
                line = self._lines + self._newlines(prefix.decode(err.object[: err.start])) + 1
                raise InputError(f"{self._name}, line {line}: not valid {self._enc} text; pass the file's "
                                 f"encoding, e.g. {_encoding_example(err.object)}.") from None  # fmt: skip  (no byte: data)
            self._lines += self._newlines(text)
            self._cr = text.endswith("\r") if text else self._cr
            self._out, self._pos = text.encode("utf-8"), 0
        n = min(len(b), len(self._out) - self._pos)
        b[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n


class _Prepend(io.RawIOBase):
    """`head` bytes, then the rest of `raw` (stdin after its header was read ahead)."""

    def __init__(self, head: bytes, raw):
        self._head, self._raw = memoryview(head), raw

    def readable(self):
        return True

    def readinto(self, b):
        if len(self._head):
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._raw.readinto(b)


MAX_HEADER_BYTES = 1 << 20  # stdin: the header row must end within this many bytes


def _header_end(data: bytes, eof: bool, delimiter: int = 0x2C):
    """``(blank lines before the header, start, end, after)`` of the header row in UTF-8 `data` — its bytes are
    ``data[start:end]`` and the records begin at ``after`` — or None if more data is needed. A row ends at CRLF,
    CR or LF outside double quotes, as pyarrow reads it (found in review: stdin's header was split at LF only,
    so a CR-only input and a header with a quoted line break ended in a traceback). A quote opens a quoted value
    only at the start of a field (after the row's start or a `delimiter` byte), and ``""`` inside one is a
    quote, as pyarrow and Python's csv read them (found in review: the header ``size 5",w`` opened a quote that
    never closed, the whole of stdin became the header, and the run released nothing with exit code 0).
    Raises `InputError` if the input ends inside a quoted header value."""
    blank, start, quoted, field_start, i, n = 0, 0, False, True, 0, len(data)
    while i < n:
        c = data[i]
        if quoted:
            if c == 0x22:
                if i + 1 == n and not eof:
                    return None  # a doubled quote may be split across reads
                if i + 1 < n and data[i + 1] == 0x22:
                    i += 1  # an escaped quote
                else:
                    quoted = False
        elif c == 0x22 and field_start:
            quoted, field_start = True, False
        elif c == delimiter:
            field_start = True
        elif c in (0x0A, 0x0D):
            after = i + 1
            if c == 0x0D:
                if after == n and not eof:
                    return None  # a CRLF may be split across reads
                if after < n and data[after] == 0x0A:
                    after += 1
            if i == start:  # a blank line before the header
                blank, start, i = blank + 1, after, after
                continue
            return blank, start, i, after
        else:
            field_start = False
        i += 1
    if eof and quoted:
        raise InputError("stdin: the header row opens a quoted value that never closes; check its quoting.")
    return (blank, start, n, n) if eof and start < n else None


class TableReader:
    """Numeric columns (and an optional id column) of a table, read in record batches.

    Attributes:
      path: the input ("-" for stdin). columns: names of the numeric columns, in file order.
      id_column: the id column's name or None. names: all column names in file order.
      rows: the number of data rows when known without reading the data (Parquet/Arrow), else None.
      float_types: the pyarrow float type of each float value column (Parquet/Arrow; empty for CSV).
    """

    def __init__(self, path, fmt, compression, *, id_column, delimiter, encoding, chunk_rows):
        self.path, self.fmt, self.compression = path, fmt, compression
        self.id_column, self.delimiter, self.encoding = id_column, delimiter, encoding
        self.chunk_rows = chunk_rows
        self.rows = None
        self._stream = None
        self._stdin_empty = False
        self._open_schema()

    # -- schema -------------------------------------------------------------------------------
    def _open_schema(self):
        pa = _pyarrow()
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            try:
                self._pq = pq.ParquetFile(self.path, pre_buffer=False)  # pre-buffering kept the whole file (1 GB at 1e7 rows)
            except (pa.ArrowInvalid, OSError) as err:
                raise InputError(f"{self.path} is not a readable Parquet file ({err}).") from None
            names = list(self._pq.schema_arrow.names)
            self.rows = self._pq.metadata.num_rows
            types = dict(zip(names, self._pq.schema_arrow.types))
        elif self.fmt == "arrow":
            try:
                self._ipc = pa.ipc.open_file(self.path)
                self.rows = sum(self._ipc.get_batch(i).num_rows for i in range(self._ipc.num_record_batches))
            except (pa.ArrowInvalid, OSError):
                try:
                    self._ipc = pa.ipc.open_stream(pa.OSFile(self.path))
                except (pa.ArrowInvalid, OSError) as err:
                    raise InputError(f"{self.path} is not a readable Arrow IPC file or stream ({err}).") from None
            names = list(self._ipc.schema.names)
            types = dict(zip(names, self._ipc.schema.types))
        else:
            names = self._csv_header()
            types = None
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise InputError(f"{self.path}: the header names {dup} more than once; give every column a distinct name.")
        if not names:
            raise InputError(f"{self.path} has no columns: expected a header row and numeric records.")
        if self.id_column is not None and self.id_column not in names:
            raise InputError(f"--ids-column {self.id_column!r} is not a column of {self.path} (columns: {names}).")
        self.names = names
        self.columns = [n for n in names if n != self.id_column]
        # the float type of each float value column (Parquet/Arrow): the writer keeps it (`TableWriter.float_types`)
        self.float_types = {} if types is None else {n: types[n] for n in self.columns if pa.types.is_floating(types[n])}
        if not self.columns:
            raise InputError(f"{self.path} has no numeric columns besides the ids.")
        if types is not None:
            for n in self.columns:
                t = types[n]
                if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
                    raise InputError(f"{self.path}, column {n!r} has type {t}, not a number (all columns but "
                                     "--ids-column must be numeric).")  # fmt: skip

    def _raw_stream(self):
        pa = _pyarrow()
        if self.path == "-":
            return pa.PythonFile(sys.stdin.buffer, mode="r")
        if not os.path.isfile(self.path):
            raise InputError(f"input file not found: {self.path}")
        if os.path.getsize(self.path) == 0:
            raise InputError(f"{self.path} is empty: expected a header row and numeric records.")
        magic = _sniff(self.path)
        codec = self.compression
        for prefix, name in _MAGIC:  # the content decides, whatever the file is called
            if magic.startswith(prefix):
                codec = name
        if codec is None and magic.startswith((b"\xff\xfe", b"\xfe\xff")) and not _unicode_wide(self.encoding):
            raise InputError(f"{self.path} starts with a UTF-16 byte-order mark: pass --encoding utf-16 (read as "
                             f"{self.encoding}, its header and values would be garbled).")  # (found in review)
        if magic.startswith(b"PAR1"):
            raise InputError(f"{self.path} is a Parquet file: name it .parquet (or pass --input-format parquet).")
        if magic.startswith(b"ARROW1"):
            raise InputError(f"{self.path} is an Arrow IPC file: name it .arrow (or pass --input-format arrow).")
        try:
            if codec == "xz":  # pyarrow has no xz codec: Python's lzma module
                import lzma

                return pa.PythonFile(lzma.open(self.path, "rb"), mode="r")
            return pa.input_stream(self.path, compression=codec)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError) as err:
            raise InputError(f"{self.path}: cannot open as {codec}-compressed CSV ({err}).") from None

    def _parse_options(self):
        """pyarrow's parse options. In a one-column file a blank line is a record whose value is missing (refused
        like any missing value), not nothing: found in review, pyarrow's default skipped it and lost the record
        silently. With more columns a blank line holds no values and is skipped, as CSV readers do."""
        import pyarrow.csv as pc

        one_column = len(getattr(self, "names", ())) == 1
        # newlines_in_values: a quoted value may span lines wherever it falls (found in review: one that crossed
        # pyarrow's 4 MiB block boundary was refused as a column-count error)
        return pc.ParseOptions(delimiter=self.delimiter, ignore_empty_lines=not one_column, newlines_in_values=True)

    def _csv_open(self, stream, column_types=None):
        import pyarrow.csv as pc

        pa = _pyarrow()
        read = pc.ReadOptions(block_size=1 << 22, encoding=self.encoding)
        parse = self._parse_options()
        conv = pc.ConvertOptions(column_types=column_types or {}, null_values=[], strings_can_be_null=False)
        try:
            return pc.open_csv(stream, read_options=read, parse_options=parse, convert_options=conv)
        except (pa.ArrowInvalid, UnicodeDecodeError, LookupError) as err:
            raise self._csv_error(err) from None
        except (OSError, EOFError) as err:
            raise self._corrupt(err) from None

    def _corrupt(self, err) -> InputError:
        return InputError(f"{self.path}: the file is truncated or corrupt ({type(err).__name__}); check that it was "
                          "copied completely, or decompress it by hand to find the damage.")

    def _csv_header(self):
        try:
            if self.path == "-":
                # stdin cannot be read twice: keep the reader opened for the header; every column is read as text
                # and cast per batch (found in review: inferred types read ids 001 and 1e1 as 1 and 10, merging
                # subjects, and a column of integers with a float late in the stream was refused)
                return self._open_stdin()
            reader = self._csv_open(self._raw_stream())
            names = list(reader.schema.names)
            if len(names) == 1:  # pyarrow skipped blank lines to find the header; the data pass will not
                first = next(self._rescan(), None)
                if first is not None and not first[1]:
                    raise _leading_blank(self.path, 1)
        except UnicodeDecodeError:  # a header in another encoding (found in review: a traceback)
            head = _sniff(self.path) if self.path != "-" and os.path.isfile(self.path) else b""
            raise InputError(f"{self.path}: the header is not valid {self.encoding} text; pass the file's encoding, "
                             f"e.g. {_encoding_example(head)}.") from None
        reader.close() if hasattr(reader, "close") else None
        return names

    def _open_stdin(self) -> list[str]:
        import pyarrow.csv as pc

        pa = _pyarrow()
        utf8 = _Utf8(sys.stdin.buffer, self.encoding, "stdin")  # any encoding -> UTF-8
        data, eof, chunk = b"", False, bytearray(1 << 20)
        delimiter = self.delimiter.encode("utf-8")
        delimiter = delimiter[0] if len(delimiter) == 1 else 0x2C
        while (found := _header_end(data, eof, delimiter)) is None and not eof:
            if len(data) > MAX_HEADER_BYTES:  # (found in review: an unclosed quote held and rescanned all of stdin)
                raise InputError(f"stdin: no end of the header row in its first {MAX_HEADER_BYTES:,} bytes; check its "
                                 "quoting (a quoted value must be closed) and --delimiter.")
            n = utf8.readinto(chunk)
            eof = n == 0
            data += bytes(chunk[:n])
        if found is None:
            raise InputError("stdin is empty: expected a header row and numeric records.")
        blank, start, end, after = found
        try:
            text = data[start:end].decode("utf-8").lstrip("\ufeff")
            names = next(csv.reader(io.StringIO(text, newline=""), delimiter=self.delimiter))
        except csv.Error as err:
            raise InputError(f"stdin: cannot read the header row as CSV ({err}); check --delimiter and quoting.") from None
        self.names = names
        if blank and len(names) == 1:
            raise _leading_blank("stdin", blank)
        if after == len(data) and not eof:  # is anything left after the header?
            n = utf8.readinto(chunk)
            eof = n == 0
            data += bytes(chunk[:n])
        if after == len(data) and eof:  # a header and no records: nothing to read
            self._stdin_empty = True
            return names
        buf = io.BufferedReader(_Prepend(data[after:], utf8), 1 << 20)
        read = pc.ReadOptions(block_size=1 << 22, encoding="utf-8", column_names=names)
        conv = pc.ConvertOptions(column_types={n: pa.string() for n in names}, null_values=[], strings_can_be_null=False)
        try:
            self._stream = pc.open_csv(pa.PythonFile(buf, mode="r"), read_options=read,
                                       parse_options=self._parse_options(), convert_options=conv)
        except (pa.ArrowInvalid, UnicodeDecodeError) as err:
            raise self._csv_error(err) from None
        except (OSError, EOFError) as err:
            raise self._corrupt(err) from None
        return names

    def count_rows(self) -> int:
        """The number of data rows (a pass over the file that converts no numbers; Parquet/Arrow: metadata)."""
        if self.rows is not None:
            return self.rows
        import pyarrow.csv as pc

        pa = _pyarrow()
        if self.fmt == "arrow":  # an IPC stream (a file has its count): one more pass over its batches
            try:
                with pa.ipc.open_stream(pa.OSFile(self.path)) as stream:
                    return sum(batch.num_rows for batch in stream)
            except (pa.ArrowInvalid, OSError, EOFError) as err:
                raise self._corrupt(err) from None
        first = self.names[0]
        reader = self._csv_open(self._raw_stream())
        reader.close() if hasattr(reader, "close") else None
        read = pc.ReadOptions(block_size=1 << 22, encoding=self.encoding)
        conv = pc.ConvertOptions(include_columns=[first], column_types={first: pa.string()}, null_values=[],
                                 strings_can_be_null=False)  # fmt: skip
        try:
            reader = pc.open_csv(self._raw_stream(), read_options=read, parse_options=self._parse_options(),
                                 convert_options=conv)  # fmt: skip
            return sum(batch.num_rows for batch in reader)
        except (pa.ArrowInvalid, UnicodeDecodeError) as err:
            raise self._csv_error(err) from None
        except (OSError, EOFError) as err:
            raise self._corrupt(err) from None

    # -- data ---------------------------------------------------------------------------------
    def batches(self) -> Iterator[tuple[np.ndarray, object, int]]:
        """Yield ``(records float64 [k, d], ids (pyarrow array or None), first data row index)``."""
        pa = _pyarrow()
        row = 0
        for batch in self._record_batches():
            values = []
            for n in self.columns:
                col = batch.column(batch.schema.get_field_index(n))
                arr = self._as_float(col, n, row)
                values.append(arr)
            x = np.stack(values, axis=1) if values else np.zeros((batch.num_rows, 0))
            bad = ~np.isfinite(x)
            if bad.any():
                r, c = np.argwhere(bad)[0]
                raise InputError(f"{self.where(row + r)}, column {self.columns[c]!r}: a value is not finite "
                                 "(NaN/inf): remove or impute it before anonymizing.")  # fmt: skip
            ids = None if self.id_column is None else batch.column(batch.schema.get_field_index(self.id_column))
            if ids is not None:
                empty = self._missing_ids(ids, row)
                if empty.any():
                    r = int(np.flatnonzero(empty)[0])
                    raise InputError(f"{self.where(row + r)}: the id in column {self.id_column!r} is empty or a "
                                     f"missing-value marker ({', '.join(_MISSING_ID_EXAMPLES)}, …): every record needs "
                                     "its subject's id. Fill it in (an id that really is such a word: rename it, e.g. "
                                     "'id_NA').")
            yield x, ids, row
            row += batch.num_rows
        del pa

    def _missing_ids(self, ids, row):
        """Which ids are missing: null, an empty text or binary value (whatever the encoding: plain, large, view or
        dictionary), or a float NaN. Found in review: only plain and large strings were checked, so empty ids of a
        dictionary-encoded (pandas Categorical), string_view or binary column merged their records into one
        subject, and NaN ids reached the anonymizer. A nested id (a list, a struct) is refused."""
        pa = _pyarrow()
        import pyarrow.compute as pac

        t = ids.type
        if pa.types.is_dictionary(t):
            ids, t = ids.dictionary_decode(), t.value_type
        if pa.types.is_nested(t):
            raise InputError(f"{self.where(row)}: the id column {self.id_column!r} holds {t} values; ids must be "
                             "numbers or text (one value per record).")
        empty = np.asarray(ids.is_null())
        if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":  # CSV: "" is missing,
            # and so are the usual missing-value markers (found in review: "NaN", "NA" and "null" ids were subjects, so
            # different people's records superseded one another silently)
            text = pac.utf8_trim_whitespace(ids.cast(pa.large_string()))
            empty = empty | (np.asarray(pac.utf8_length(text).fill_null(0)) == 0) \
                | np.asarray(pac.is_in(text, value_set=pa.array(MISSING_ID_MARKERS, pa.large_string())).fill_null(False))
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view":
            empty = empty | (np.asarray(pac.binary_length(ids.cast(pa.large_binary())).fill_null(0)) == 0)
        elif pa.types.is_floating(t):
            empty = empty | np.asarray(pac.is_nan(ids).fill_null(False))
        return empty

    def _record_batches(self):
        """The input's record batches; a truncated or corrupt file (a compressed stream, an Arrow IPC stream,
        Parquet pages) is an `InputError`, not a traceback (found in review)."""
        pa = _pyarrow()
        try:
            yield from self._record_batches_raw()
        except (pa.ArrowInvalid, OSError, EOFError) as err:  # a CSV's parse errors are handled where they arise
            raise self._corrupt(err) from None

    def _record_batches_raw(self):
        pa = _pyarrow()
        if self.fmt == "parquet":
            yield from self._pq.iter_batches(batch_size=self.chunk_rows, use_threads=False)
            return
        if self.fmt == "arrow":
            if isinstance(self._ipc, pa.ipc.RecordBatchFileReader):
                for i in range(self._ipc.num_record_batches):
                    yield self._ipc.get_batch(i)
            else:
                yield from self._ipc
            return
        if self._stdin_empty:  # stdin with a header and no records
            return
        if self._stream is not None:  # stdin: every column as text, cast per batch
            reader = self._stream
        else:
            types = {n: pa.float64() for n in self.columns}
            if self.id_column is not None:
                types[self.id_column] = pa.string()
            reader = self._csv_open(self._raw_stream(), types)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, UnicodeDecodeError) as err:
                raise self._csv_error(err) from None
            yield batch

    def _as_float(self, col, name, row):
        pa = _pyarrow()
        if pa.types.is_floating(col.type) or pa.types.is_integer(col.type) or pa.types.is_decimal(col.type):
            if col.null_count:
                r = int(np.flatnonzero(np.asarray(col.is_null()))[0])
                raise InputError(f"{self.where(row + r)}, column {name!r}: the value is missing; fill it in.")
            # integers beyond 2⁵³ (nanosecond epochs, 64-bit hashes) round to the nearest float64, as a CSV's text
            # does (found in review: the safe cast raised, a traceback quoting the cell)
            return np.asarray(col.cast(pa.float64(), safe=False), np.float64)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):  # stdin: read as text, cast here
            import pyarrow.compute as pac

            # spaces and tabs around a number are trimmed, as pyarrow's CSV reader does for a file (found in
            # review: " 5 " was read from a file and refused from stdin)
            col = pac.utf8_trim(col, characters=" \t")
            try:
                return np.asarray(col.cast(pa.float64()), np.float64)  # pyarrow's number syntax, as for files
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        vals = col.to_pylist()  # a cell that is not a number: find it (its place, never its value)
        for r, v in enumerate(vals):
            if not (isinstance(v, str) and _is_csv_number(v)):
                break
        else:
            r = 0
        raise InputError(f"{self.where(row + r)}, column {name!r}: " + _not_a_number(vals[r] if vals else None))

    def where(self, data_row: int) -> str:
        """Where data row `data_row` (0 = the first record after the header) is, for a message: a CSV file's
        line, found by a rescan on this error path (found in review: the line was computed as row + 2, wrong
        after blank lines or values quoted over several lines); stdin cannot be rescanned, so its record."""
        if self.fmt != "csv":
            return f"{self.path}, row {data_row + 1}"
        if self.path == "-":
            return f"stdin, record {data_row + 1} after the header"
        try:
            for i, (line, _) in enumerate(self._rescan_records()[1]):
                if i == data_row:
                    return f"{self.path}, line {line}"
        except (InputError, csv.Error, OSError, EOFError, ValueError):  # e.g. a field past csv's size limit
            pass
        return f"{self.path}, record {data_row + 1} after the header"

    def _csv_error(self, err) -> InputError:
        """Turn a pyarrow CSV error into a message with the line and column (rescanning the file)."""
        # pyarrow's messages quote the offending cell or row, and messages end up in logs: only the rescan's
        # finding (a position) or the shape of the problem is reported (found in review: a cell containing
        # "utf-8" was taken for an encoding error and quoted in the message)
        found = self._locate_bad_cell()
        if found:
            return InputError(found)
        text = str(err)
        name = "stdin" if self.path == "-" else self.path
        if isinstance(err, (UnicodeDecodeError, LookupError)) or "invalid UTF8" in text:
            head = _sniff(self.path) if self.path != "-" and os.path.isfile(self.path) else b""
            return InputError(f"{name} is not valid {self.encoding} text; pass the file's encoding, e.g. "
                              f"{_encoding_example(head)}.")  # fmt: skip
        return InputError(f"{name}: cannot read it as CSV ({_arrow_reason(text)}). Check --delimiter "
                          "and that every row has one value per header column.")  # fmt: skip

    def _rescan(self):
        """Yield ``(first line, cells)`` for every row, the header first, with Python's csv module over the file
        read again as a stream (only on an error path; O(1) memory whatever the file's size). Blank lines are
        yielded as empty rows. Raises `InputError` if the text is not valid in the encoding (naming the line).
        Stops after `RESCAN_BYTES` of the file (≈ 15 s at the measured ≈ 70 MB/s): an error further in is
        reported by its record, not its line, rather than after minutes of rescanning."""
        import pyarrow as pa

        codec = self._codec_for_rescan()
        if codec == "xz":
            import lzma

            raw = lzma.open(self.path, "rb")
        elif codec is None:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed below
        else:
            raw = pa.input_stream(self.path, compression=codec)
        try:
            utf8 = _Utf8(raw, self.encoding, self.path)
            text = io.TextIOWrapper(io.BufferedReader(utf8, 1 << 20), encoding="utf-8", newline="")
            reader = csv.reader(text, delimiter=self.delimiter)
            line = 0
            for cells in reader:
                if utf8.bytes_read > RESCAN_BYTES:
                    return
                yield line + 1, cells
                line = reader.line_num
        finally:
            raw.close()

    def _rescan_records(self):
        """``(header cells, rows)``: the header is the first row that is not blank (pyarrow skips blank lines
        before it), `rows` yields ``(line, cells)`` for what pyarrow reads as records: blank lines are skipped
        except in a one-column file."""
        rows = self._rescan()
        header = next((cells for _, cells in rows if cells), [])
        if header:
            header[0] = header[0].lstrip("\ufeff")
        one_column = len(header) == 1
        return header, ((line, cells) for line, cells in rows if cells or one_column)

    def _locate_bad_cell(self) -> str | None:
        """Rescan with Python's csv module (only after an error) to name the first bad line and column."""
        if self.path == "-":
            return None
        pa = _pyarrow()
        try:
            header, rows = self._rescan_records()
            for line_no, cells in rows:
                if not cells:  # a blank line in a one-column file
                    return (f"{self.path}, line {line_no}: the line is blank, which in a one-column file is a "
                            "missing value; fill it in or delete the line.")  # fmt: skip
                if len(cells) != len(header):
                    return (f"{self.path}, line {line_no}: {len(cells)} values, but the header has {len(header)} "
                            "columns (check --delimiter and quoting).")  # fmt: skip
                for name, cell in zip(header, cells):
                    if name != self.id_column and not _is_csv_number(cell):
                        return f"{self.path}, line {line_no}, column {name!r}: " + _not_a_number(cell)
        except InputError as err:
            return str(err)
        except (pa.ArrowInvalid, OSError, EOFError, ValueError, csv.Error):
            return None
        return None

    def _codec_for_rescan(self):
        magic = _sniff(self.path)
        for prefix, name in _MAGIC:
            if magic.startswith(prefix):
                return name
        return self.compression

    def close(self):
        for attr in ("_stream",):
            obj = getattr(self, attr, None)
            if obj is not None and hasattr(obj, "close"):
                obj.close()


def _leading_blank(name: str, blank: int) -> InputError:
    """Found in review: in a one-column file, where blank lines are read as missing values, a blank first line
    became the header (a traceback, or the header released as a record)."""
    return InputError(f"{name} starts with {blank} blank line(s) before the header: in a one-column file a blank "
                      "line is a missing value, so the header must be the first line; delete the blank lines.")


def _arrow_reason(text: str) -> str:
    """What went wrong, from a pyarrow CSV error, without the cells it quotes (pyarrow's messages include the
    offending value or row, and messages end up in logs): only the shape of the problem is kept."""
    first = text.splitlines()[0] if text else ""
    m = re.search(r"Expected \d+ columns, got \d+", first)
    if m:
        return m.group(0)
    m = re.search(r"In CSV column #(\d+): CSV conversion error to (\w+)", first)
    if m:
        return f"a value in column #{m.group(1)} (from 0) is not a {m.group(2)}"
    return "pyarrow's CSV reader rejected it"


def _not_a_number(cell) -> str:
    """Why a cell is not read as a number and what to do, without quoting it (messages end up in logs)."""
    if cell is None or not str(cell).strip(" \t"):
        return "the value is missing; fill it in (every column but --ids-column needs a number in every record)."
    return ("the value is not a number (all columns but --ids-column must be numeric; write numbers like 1000 or "
            "1.5e3, without separators such as 1_000 or 1,000).")


def _is_csv_number(cell: str) -> bool:
    """A plain decimal number as pyarrow's CSV reader accepts it: ASCII only, spaces and tabs around it
    trimmed (not Python-only syntax such as '1_000', non-breaking spaces or other scripts' digits)."""
    s = cell.strip(" \t")
    if not s or "_" in s or not s.isascii() or s != s.strip():
        return False
    try:
        float(s)
    except ValueError:
        return False
    return True


def open_table(path: str, *, fmt: str | None = None, id_column: str | None = None, delimiter: str = ",",
               encoding: str = "utf-8", chunk_rows: int = _CHUNK_ROWS) -> TableReader:
    """Open a table for reading in batches (see `TableReader`). Raises `InputError` with a fix."""
    if len(delimiter) != 1 or not delimiter.isascii():
        raise InputError(f"--delimiter must be one ASCII character, got {delimiter!r}.")
    if path != "-" and not os.path.exists(path):
        raise InputError(f"input file not found: {path}")
    if path != "-" and os.path.isdir(path):
        raise InputError(f"{path} is a folder, not a file.")
    fmt, compression = detect_format(path, fmt)
    return TableReader(path, fmt, compression, id_column=id_column, delimiter=delimiter, encoding=encoding,
                       chunk_rows=chunk_rows)  # fmt: skip


class TableWriter:
    """Writes record batches to `path` through a temporary file, renamed into place by `commit()`.

    `abort()` (or leaving the `with` block by an exception, SIGTERM included) removes the temporary file,
    so a failed or interrupted run never leaves a partial output behind. "-" writes CSV to stdout.
    """

    def __init__(self, path: str, names: list[str], *, id_column: str | None, fmt: str | None = None,
                 delimiter: str = ","):
        self.path = path
        self.names, self.id_column = names, id_column
        self.fmt, self.compression = detect_format(path, fmt, output=True)
        self.delimiter = delimiter
        self._writer = None
        self._sink = None
        self._tmp = None
        self.rows = 0
        if path != "-":
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise InputError(f"the output folder {folder} does not exist: create it first.")
            if os.path.isdir(path):
                raise InputError(f"{path} is a folder: give a file name for the output.")
            if not _special(path):  # a device or a pipe is written directly (see `_special`)
                self._tmp = partial_path(path)

    def _open(self, schema):
        pa = _pyarrow()
        target = self._tmp if self._tmp is not None else self.path
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(target, schema)
        elif self.fmt == "arrow":
            self._sink = pa.OSFile(target, "wb")
            self._writer = pa.ipc.new_file(self._sink, schema)
        else:
            import pyarrow.csv as pc

            if self.path == "-":
                self._sink = pa.PythonFile(sys.stdout.buffer, mode="w")
            elif self.compression == "xz":  # pyarrow has no xz codec: Python's lzma module
                import lzma

                self._sink = pa.PythonFile(lzma.open(target, "wb"), mode="w")
            elif self.compression:
                self._sink = pa.CompressedOutputStream(target, self.compression)
            else:
                self._sink = pa.OSFile(target, "wb")
            self._writer = pc.CSVWriter(self._sink, schema, write_options=self._csv_options(pc))

    def _csv_options(self, pc):
        """Header names unquoted when they need no quotes (like most CSV writers), values quoted only if needed."""
        plain = all(not any(ch in n for ch in (self.delimiter, '"', "\n", "\r")) for n in self.names)
        try:
            return pc.WriteOptions(delimiter=self.delimiter, batch_size=65_536,
                                   quoting_header="none" if plain else "needed")  # fmt: skip
        except TypeError:  # pyarrow without quoting_header: names are quoted
            return pc.WriteOptions(delimiter=self.delimiter, batch_size=65_536)

    id_type = None  # the input's id type, set by the caller: ids are written back in it (`id_values`)
    float_types: dict = {}  # the input's float column types, set by the caller: a column is written in its type or wider

    def write(self, records: np.ndarray, ids=None):
        """Append released records ``[k, d]`` (float32/float64) and their ids (any pyarrow array, or a list of
        `id_values`, written in `id_type` when it is set)."""
        pa = _pyarrow()
        cols = []
        j = 0
        for name in self.names:
            if name == self.id_column:
                cols.append(ids if isinstance(ids, (pa.Array, pa.ChunkedArray)) else _id_array(ids, self.id_type))
            else:
                col = np.ascontiguousarray(records[:, j])
                t = self.float_types.get(name)
                if t is not None and t.bit_width > 8 * col.dtype.itemsize:  # found in review: a float64 column came
                    col = col.astype(np.float64)  # back as float32; kept (a cast: post-processing), never narrowed
                cols.append(pa.array(col))
                j += 1
        batch = pa.RecordBatch.from_arrays(cols, names=self.names)
        if self._writer is None:
            self._open(batch.schema)
        if batch.num_rows:
            self._writer.write(batch) if self.fmt != "parquet" else self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def commit(self, empty_records: np.ndarray | None = None, empty_ids=None):
        """Close and move the file into place (an empty table gets its header)."""
        if self._writer is None:
            self.write(np.zeros((0, len(self.names) - (self.id_column is not None))) if empty_records is None
                       else empty_records, empty_ids if empty_ids is not None else [])  # fmt: skip
        self._writer.close()
        if self._sink is not None and self.path != "-":
            self._sink.close()
        if self._tmp is not None:
            os.replace(self._tmp, self.path)
            self._tmp = None

    def abort(self):
        try:
            if self._writer is not None:
                self._writer.close()
        except Exception:  # noqa: BLE001 - closing a half-written file may fail; it is removed anyway
            pass
        if self._tmp is not None and os.path.exists(self._tmp):
            os.remove(self._tmp)
        self._tmp = None

    # SIGTERM and SIGINT only set a flag that `check()` turns into an exception at a safe point (the caller
    # checks between batches and before `commit()`): raised from the handler itself, the exception could land in
    # a callback that Python ignores (found in review: JAX's garbage-collector callback swallowed it, and an
    # interrupted run finished and exited 0).
    _SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __enter__(self):
        self.interrupted = None
        self._previous = {}
        for sig in self._SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread: signals stay as they are
                pass
        return self

    def _on_signal(self, signum, frame):
        self.interrupted = signum

    def check(self):
        """Raise KeyboardInterrupt (SIGINT) or SystemExit(128 + signal) if a signal arrived."""
        if self.interrupted == signal.SIGINT:
            raise KeyboardInterrupt
        if self.interrupted is not None:
            raise SystemExit(128 + self.interrupted)

    def __exit__(self, exc_type, exc, tb):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        if exc_type is None and self.interrupted is not None and self._tmp is not None:  # not committed yet
            self.abort()
            self.check()
        if exc_type is not None:
            self.abort()
        return False


def _special(path: str) -> bool:
    """An existing target that is not a regular file (``/dev/null``, a FIFO): written directly. Found in review:
    the temporary file renamed over it replaced the device itself with a regular file (as root, /dev/null)."""
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def partial_path(path: str) -> str:
    """The temporary name an output is written under until the run succeeds (then renamed to `path`)."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.join(folder, f".{os.path.basename(path)}.jaxdp-partial-{os.getpid()}")


def check_writable(path: str, what: str) -> None:
    """Create and remove `path`'s temporary file, so a file that cannot be written is found before any work.

    Found in review: a name too long for the file system, a folder that only looks writable (``os.access`` is True
    for root under /proc and /sys) ended the run after all its work in an `OSError` traceback. A device or a pipe
    (`_special`) is written directly and not probed; "-" is stdout.

    Raises:
      InputError: the temporary file cannot be created (the reason from the operating system).
    """
    if path == "-" or _special(path):
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"the {what.removeprefix('the ')} folder {folder} does not exist: create it first.")
    tmp = partial_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as err:
        raise InputError(f"cannot write {what} {path}: {err.strerror or err} (its temporary file "
                         f"{os.path.basename(tmp)} could not be created there); choose another name or folder.") from None
    os.close(fd)
    os.unlink(tmp)


def atomic_write_text(path: str, text: str):
    """Write a small text file (the JSON report) through a temporary name."""
    if _special(path):
        with open(path, "w") as f:
            f.write(text)
        return
    tmp = partial_path(path)
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
