"""The submission validator: every rule prints its message, every accepted variant passes."""

from __future__ import annotations

import gzip
import io
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS
from competition.data.graphs import LayoutGraph, TileGraph, expected_from_data_dir, save_graph
from competition.errors import DataFormatError
from competition.submission import (
    RULES,
    Problem,
    RowError,
    ValidationResult,
    format_problems,
    parse_top_configs,
    validate_rows,
    validate_submission,
)

SETTINGS = settings(derandomize=True, deadline=None, max_examples=100)
TILE_COLLECTION = COLLECTION_BY_NAME["tile:xla"]
LAYOUT_COLLECTION = COLLECTION_BY_NAME["layout:xla:random"]

# A small test set: one of each shape of row. Lines: header 1, then one row per graph in this order.
TILE = "tile:xla:" + "a" * 32
TILE_SMALL = "tile:xla:" + "b" * 32  # fewer configs than the 5 a tile row lists
TILE_ONE = "tile:xla:" + "f" * 32
XLA = "layout:xla:default:" + "c" * 32
NLP = "layout:nlp:random:" + "d" * 32
EXPECTED = {TILE: 1234, TILE_SMALL: 3, TILE_ONE: 1, XLA: 10, NLP: 12}
LINE = {row_id: i + 2 for i, row_id in enumerate(EXPECTED)}
NEXT_LINE = len(EXPECTED) + 2  # the line of a row appended after the valid ones
XLA_ORDER = [3, 9, 0, 8, 1, 7, 2, 6, 4, 5]
CELLS = {
    TILE: "17;3;1200;0;5",
    TILE_SMALL: "2;0;1",
    TILE_ONE: "0",
    XLA: ";".join(map(str, XLA_ORDER)),
    NLP: ";".join(map(str, range(11, -1, -1))),
}
PARSED = {row_id: np.array([int(x) for x in cell.split(";")]) for row_id, cell in CELLS.items()}


def csv_bytes(lines: list[str], *, header: str = "ID,TopConfigs", newline: str = "\n",
              final: bool = True) -> bytes:
    return (newline.join([header, *lines]) + (newline if final else "")).encode("utf-8")


def good_lines(cells: dict[str, str] | None = None) -> list[str]:
    return [f"{row_id},{cell}" for row_id, cell in (cells or CELLS).items()]


def with_cell(row_id: str, cell: str) -> bytes:
    return csv_bytes(good_lines({**CELLS, row_id: cell}))


def with_line(row_id: str, line: str) -> bytes:
    return csv_bytes([line if r == row_id else f"{r},{c}" for r, c in CELLS.items()])


def plus(*lines: str) -> bytes:
    return csv_bytes([*good_lines(), *lines])


GOOD = csv_bytes(good_lines())
UTF16_TEXT = GOOD.decode("utf-8")

# (case id, file bytes, rule, line, message regex, validate_submission keyword arguments)
BAD_FILES = [
    # ---- file level
    ("empty", b"", "empty-file", None,
     r"the file is empty; expected the header 'ID,TopConfigs' and one row per "
     r"test graph \(5 rows\)", {}),
    ("bom-only", b"\xef\xbb\xbf", "empty-file", None, r"the file is empty", {}),
    ("newline-only", b"\n", "empty-file", None, r"the file is empty", {}),
    ("too-large", GOOD, "too-large", None, r"larger than the 100 bytes limit \(stopped reading there\); a "
     r"complete submission for these 5 test graphs is about", {"max_bytes": 100}),
    ("line-too-long", GOOD, "line-too-long", LINE[XLA],
     r"the line is longer than 70 bytes, more than any valid "
     r"row", {"max_line_bytes": 70}),
    ("cr-only-line-endings", GOOD.replace(b"\n", b"\r"), "line-too-long", 1,
     r"carriage returns but no newline: save the file with '\\n' or '\\r\\n' line endings",
     {"max_line_bytes": 100}),
    ("utf16-le-bom", UTF16_TEXT.encode("utf-16"), "encoding", None,
     r"encoded as UTF-16 \(little-endian\): it starts with that encoding's byte-order mark; save it as UTF-8",
     {}),
    ("utf16-be-bom", b"\xfe\xff" + UTF16_TEXT.encode("utf-16-be"), "encoding", None,
     r"UTF-16 \(big-endian\)", {}),
    ("utf32-bom", UTF16_TEXT.encode("utf-32"), "encoding", None, r"UTF-32 \(little-endian\)", {}),
    ("utf16-no-bom", UTF16_TEXT.encode("utf-16-le"), "encoding", None,
     r"looks like UTF-16 \(little-endian, without a byte-order mark\): every other byte is NUL", {}),
    ("latin1-row", with_line(TILE, f"{TILE},17;3;1200;0;5").replace(b"1200", b"1200\xe9"), "encoding",
     LINE[TILE], r"not valid UTF-8: byte 0xE9 at byte 52 cannot be decoded \(saved as Latin-1 or "
     r"Windows-1252\?\); save the file as UTF-8", {}),
    ("latin1-header", "ID,TopConfigsé\n".encode("latin-1"), "encoding", 1, r"not valid UTF-8: byte 0xE9", {}),
    ("nul-bytes", b"\x00\x01\x02\x03" * 8, "binary", None,
     r"contains NUL bytes \(the first at byte 1\): it is "
     r"binary", {}),
    ("zip", b"PK\x03\x04" + GOOD, "binary", None,
     r"the file is a zip archive .*; submit the plain, uncompressed "
     r"CSV", {}),
    ("gzip", gzip.compress(GOOD), "binary", None, r"the file is a gzip archive", {}),
    ("parquet", b"PAR1\x15\x04", "binary", None, r"a Parquet file", {}),
    ("control-char", with_cell(TILE, "17;3\x07;1200;0;5"), "binary", LINE[TILE],
     r"the line contains the control character 0x07 at column 47; a submission is plain text", {}),
    ("nul-mid-file", GOOD + b"x" * 6 + b"\x00\n", "binary", NEXT_LINE, r"the line contains a NUL byte at "
     r"column 7", {}),
    ("control-char-in-header", b"ID,Top\x1bConfigs\n", "binary", 1, r"control character 0x1B", {}),
    ("bare-carriage-return", with_cell(TILE, "17;3\r;1200;0;5"), "line-ending", LINE[TILE],
     r"carriage return \(\\r\) at column 47; lines end with '\\n' or '\\r\\n'", {}),
    # ---- CSV structure
    ("misspelt-header", csv_bytes(good_lines(), header="Id,TopConfigs"), "header", 1,
     r"the header is 'Id,TopConfigs'; expected 'ID,TopConfigs' \(these exact names, in either "
     r"order\): 'ID' is missing \(found 'Id'; names are exact and case-sensitive\)", {}),
    ("other-column-name", csv_bytes(good_lines(), header="ID,Predictions"), "header", 1,
     r"'TopConfigs' is missing \(column 2 is 'Predictions'\)$", {}),
    ("spaced-header", csv_bytes(good_lines(), header="ID, TopConfigs"), "header", 1,
     r"'TopConfigs' is missing \(found ' TopConfigs'", {}),
    ("no-header", csv_bytes(good_lines()[1:], header=good_lines()[0]), "header", 1,
     r"the first line is a data row, not the header; the file must start with the line 'ID,TopConfigs'", {}),
    ("no-header-three-fields", plus().replace(b"ID,TopConfigs\n", b",,tile:xla:x\n"), "header", 1,
     r"the first line is a data row", {}),
    ("semicolon-header", b"ID;TopConfigs\n", "header", 1,
     r"the header 'ID;TopConfigs' separates its columns with ';'; a submission is comma-separated", {}),
    ("tab-header", b"ID\tTopConfigs\n", "header", 1, r"separates its columns with tabs", {}),
    ("unknown-header", csv_bytes(good_lines(), header="a,b,c"), "header", 1,
     r"'ID' is missing \(column 1 is 'a'\); 'TopConfigs' is missing \(column 2 is 'b'\); it has 3 columns, "
     r"a submission exactly two", {}),
    ("one-column-header", csv_bytes(good_lines(), header="Predictions"), "header", 1,
     r"'ID' is missing \(column 1 is 'Predictions'\); 'TopConfigs' is missing \(the header has no column "
     r"for it\); it has 1 column, a submission exactly two", {}),
    ("extra-header-column",
     csv_bytes([f"{line},Public" for line in good_lines()], header="ID,TopConfigs,Usage"),
     "extra-column", 1,
     r"the header has 3 columns; a submission has exactly ID and TopConfigs \(extra: 'Usage'\)", {}),
    ("extra-field", with_line(TILE, f"{TILE},17;3;1200;0;5,x"), "extra-column", LINE[TILE],
     r"the row has 3 fields but the header has 2; quote a field that contains ','", {}),
    ("trailing-comma", with_line(TILE, f"{TILE},17;3;1200;0;5,"), "extra-column", LINE[TILE],
     r"the row has 3 fields but the header has 2 \(a trailing ','\?\)", {}),
    ("comma-separated-indices", with_line(TILE, f"{TILE},17,3,1200,0,5"), "extra-column", LINE[TILE],
     r"the row has 6 fields .*; separate config indices with ';', not ','", {}),
    ("missing-field", with_line(TILE, TILE), "missing-field", LINE[TILE],
     r"the row has 1 field but the header has 2; a row is <ID>,<TopConfigs>", {}),
    ("unterminated-quote", with_line(TILE, f'"{TILE},17;3;1200;0;5'), "quoting", LINE[TILE],
     r"unterminated quote: the quote at column 1 is never closed on this line", {}),
    ("text-after-quote", plus(f'"{TILE}"x,0;1;2;3;4'), "quoting", NEXT_LINE,
     r"unexpected text after the closing quote at column 43; a quoted field must be followed by ','", {}),
    ("stray-quote", plus('tile:xla:a"b,0;1;2;3;4'), "quoting", NEXT_LINE,
     r"a quote inside an unquoted field at column 11", {}),
    ("space-before-quote", plus(f'{TILE}, "0;1;2;3;4"'), "quoting", NEXT_LINE,
     r"quote the whole field \(with no space before the opening quote\)", {}),
    ("blank-line-in-middle", csv_bytes([*good_lines()[:2], "", *good_lines()[2:]]), "empty-row", 4,
     r"the line is blank; remove blank lines \(a single empty line is allowed only at the very end\)", {}),
    ("two-trailing-blank-lines", GOOD + b"\n\n", "empty-row", NEXT_LINE, r"the line is blank", {}),
    ("blank-line-before-header", b"\n" + GOOD, "empty-row", 1, r"the line is blank", {}),
    ("spaces-only-line", csv_bytes([*good_lines()[:2], "   ", *good_lines()[2:]]), "empty-row", 4,
     r"the line is blank", {}),
    ("empty-top-configs", with_cell(TILE, ""), "empty-row", LINE[TILE],
     r"TopConfigs is empty; expected at least 5 distinct config indices out of 0\.\.1233, fastest first", {}),
    ("empty-layout-cell", with_cell(XLA, "  "), "empty-row", LINE[XLA],
     r"TopConfigs is empty; expected a permutation of all config indices 0\.\.9", {}),
    ("comma-only-row", plus(","), "empty-row", NEXT_LINE, r"the row has neither an ID nor TopConfigs", {}),
    # ---- IDs
    ("missing-id", csv_bytes(good_lines()[:-1]), "missing-id", None,
     rf"1 of the 5 test graphs has no row \(1 layout:nlp:random\): {NLP}; a submission has exactly "
     r"one row per test graph", {}),
    ("duplicate-id", plus(f"{TILE},0;1;2;3;4"), "duplicate-id", NEXT_LINE,
     rf"duplicate ID: this graph already has a row on line {LINE[TILE]}; give each test graph exactly "
     r"one row", {}),
    ("unknown-stem", plus("tile:xla:" + "e" * 32 + ",0;1;2;3;4"), "unknown-id", NEXT_LINE,
     r"no test graph has the ID 'tile:xla:e{32}'; IDs name the test files \(tile:xla has 3 test "
     r"graphs, listed in sample_submission.csv\)$", {}),
    ("malformed-id", plus("foo,0;1;2;3;4"), "unknown-id", NEXT_LINE,
     r"ID 'foo' is not '<collection>:<file stem>' with a collection among tile:xla, layout:xla:default", {}),
    ("bare-stem", plus("a" * 32 + ",0;1;2;3;4"), "unknown-id", NEXT_LINE, rf"did you mean {TILE}\?", {}),
    ("wrong-collection", plus("layout:xla:random:" + "c" * 32 + ",0"), "unknown-id", NEXT_LINE,
     rf"no test graph has the ID .*\(did you mean {XLA}\?\)", {}),
    ("id-case", plus(TILE.upper().replace("TILE:XLA", "tile:xla") + ",0;1;2;3;4"), "unknown-id", NEXT_LINE,
     rf"IDs are case-sensitive: did you mean {TILE}\?", {}),
    ("id-spaces", plus(f" {TILE} ,0;1;2;3;4"), "unknown-id", NEXT_LINE,
     rf"remove the spaces around it: {TILE}\)", {}),
    ("id-invisible-char", plus(f"\ufeff{TILE},0;1;2;3;4"), "unknown-id", NEXT_LINE,
     r"invisible character U\+FEFF", {}),
    ("second-header", plus("ID,TopConfigs"), "unknown-id", NEXT_LINE, r"a second header line\? files "
     r"concatenated\?", {}),
    ("empty-id", plus(",0;1;2;3;4"), "unknown-id", NEXT_LINE,
     r"the ID is empty; expected '<collection>:<file "
     r"stem>'", {}),
    # ---- TopConfigs
    ("decimal", with_cell(TILE, "17;3.0;1200;0;5"), "not-integer", LINE[TILE],
     r"TopConfigs item 2 is '3\.0'; a config index is written in plain digits 0-9 \(no sign, decimal point, "
     r"exponent or hex\)$", {}),
    ("hex", with_cell(TILE, "0x11;3;1200;0;5"), "not-integer", LINE[TILE], r"item 1 is '0x11'", {}),
    ("plus-sign", with_cell(TILE, "17;+3;1200;0;5"), "not-integer", LINE[TILE], r"item 2 is '\+3'", {}),
    ("word", with_cell(TILE, "17;three;1200;0;5"), "not-integer", LINE[TILE], r"item 2 is 'three'", {}),
    ("space-separated", with_cell(TILE, "17 3 1200 0 5"), "not-integer", LINE[TILE],
     r"item 1 is '17 3 1200 0 5'; .*; separate indices with ';'$", {}),
    ("brackets", with_line(TILE, f'{TILE},"[17;3;1200;0;5]"'), "not-integer", LINE[TILE],
     r"item 1 is '\[17'; .*; write the indices without brackets, e\.g\. 0;1;2;3;4", {}),
    ("tab", with_cell(TILE, "17;\t3;1200;0;5"), "not-integer", LINE[TILE],
     r"item 2 is '\\t3'; .*; only spaces may surround an index, not tabs", {}),
    ("fullwidth-digit", with_cell(TILE, "17;\uff13;1200;0;5"), "not-integer", LINE[TILE],
     r"item 2 is '\uff13'", {}),
    ("negative", with_cell(TILE, "17;3;-1;0;5"), "negative-index", LINE[TILE],
     r"TopConfigs item 3 is -1; config indices are 0-based positions and never negative \(valid: 0\.\.1233\)",
     {}),
    ("one-based", with_cell(XLA, ";".join(str(i + 1) for i in XLA_ORDER)), "index-out-of-range", LINE[XLA],
     r"TopConfigs item 2 is config 10, out of range: this graph has 10 configs \(valid indices 0\.\.9\) "
     r"\(indices are 0-based\)", {}),
    ("out-of-range-tile", with_cell(TILE, "17;3;5000;0;5"), "index-out-of-range", LINE[TILE],
     r"item 3 is config 5000, out of range: this graph has 1234 configs \(valid indices 0\.\.1233\)$", {}),
    ("huge-number", with_cell(TILE, "17;3;" + "9" * 25 + ";0;5"), "index-out-of-range", LINE[TILE],
     r"item 3 is the 25-digit number '9{25}'; this graph has 1234 configs", {}),
    ("out-of-range-after-5th", with_cell(TILE, "17;3;1200;0;5;1234"), "index-out-of-range", LINE[TILE],
     r"item 6 is config 1234", {}),
    ("duplicate-index", with_cell(TILE, "17;3;1200;3;5"), "duplicate-index", LINE[TILE],
     r"TopConfigs lists config 3 twice \(items 2 and 4\); each config may appear only once", {}),
    ("duplicate-after-5th", with_cell(TILE, "17;3;1200;0;5;6;17"), "duplicate-index", LINE[TILE],
     r"lists config 17 twice \(items 1 and 7\)", {}),
    ("triple-index", with_cell(NLP, "0;1;0;2;0;3;4;5;6;7;8;9"), "duplicate-index", LINE[NLP],
     r"lists config 0 three times \(items 1 and 3\)", {}),
    ("layout-duplicate", with_cell(XLA, "3;9;0;8;1;7;2;6;4;4"), "duplicate-index", LINE[XLA],
     r"lists config 4 twice \(items 9 and 10\)", {}),
    ("too-short-tile", with_cell(TILE, "17;3;1200"), "too-short", LINE[TILE],
     r"tile row lists 3 configs; expected at least 5 \(the graph has 1234 configs\)", {}),
    ("too-short-small-tile", with_cell(TILE_SMALL, "2;0"), "too-short", LINE[TILE_SMALL],
     r"tile row lists 2 configs; expected at least 3 \(the graph has only 3 configs\)", {}),
    ("incomplete-permutation", with_cell(XLA, "3;9;0;8;1;2;6;4;5"), "incomplete-permutation", LINE[XLA],
     r"layout row must be a full permutation of 0\.\.9; 1 config is missing, e\.g\. 7$", {}),
    ("tile-style-layout-row", with_cell(NLP, "0;1;2;3;4"), "incomplete-permutation", LINE[NLP],
     r"full permutation of 0\.\.11; 7 configs are missing, e\.g\. 5", {}),
    ("too-long", with_cell(XLA, ";".join(map(str, [*XLA_ORDER, 0]))), "too-long", LINE[XLA],
     r"layout row lists 11 indices but the graph has 10 configs; list each of 0\.\.9 exactly once", {}),
    ("empty-item", with_cell(TILE, "17;3;;1200;0;5"), "empty-item", LINE[TILE],
     r"TopConfigs item 3 is empty \(two ';' in a row, or a ';' at the start or end\); separate "
     r"indices with a single ';'", {}),
    ("trailing-semicolon", with_cell(TILE, "17;3;1200;0;5;"), "empty-item", LINE[TILE],
     r"item 6 is empty", {}),
    ("leading-semicolon", with_cell(TILE, ";17;3;1200;0;5"), "empty-item", LINE[TILE],
     r"item 1 is empty", {}),
]


@pytest.mark.parametrize(
    ("data", "rule", "line", "message", "options"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_FILES],
)
def test_bad_submission_reports_its_rule(data, rule, line, message, options):
    result = validate_submission(data, EXPECTED, **options)
    assert not result.ok
    assert [p.rule for p in result.problems] == [rule], [str(p) for p in result.problems]
    problem = result.problems[0]
    assert problem.line == line
    assert re.search(message, problem.message), problem.message
    assert f"[{rule}]" in str(problem)
    # The same bytes through a file object give the same verdict.
    assert validate_submission(io.BytesIO(data), EXPECTED, **options).problems == result.problems


def test_every_rule_code_has_a_case_that_prints_it():
    assert {case[2] for case in BAD_FILES} == set(RULES)


def test_problems_name_the_line_and_the_id():
    result = validate_submission(with_cell(TILE, "17;3;1200;3;5"), EXPECTED)
    assert str(result.problems[0]) == (
        f"line {LINE[TILE]} (ID {TILE}): TopConfigs lists config 3 twice (items 2 and 4); each config may "
        f"appear only once [duplicate-index]"
    )
    assert str(Problem(None, None, "missing-id", "m")) == "m [missing-id]"
    assert str(Problem(3, None, "header", "m")) == "line 3: m [header]"
    assert str(Problem(None, TILE, "too-short", "m")) == f"ID {TILE}: m [too-short]"
    assert str(Problem(3, " x\u200b", "unknown-id", "m")) == "line 3 (ID ' x\\u200b'): m [unknown-id]"


def test_every_problem_of_a_bad_file_is_reported_in_file_order():
    lines = [
        f"{TILE},17;3;1200;3;5",  # 2 duplicate-index
        "",  # 3 blank
        f"{TILE_SMALL},2;0",  # 4 too-short
        "nope,1",  # 5 unknown
        f"{XLA},1;2;3",  # 6 incomplete
        f"{XLA},0",  # 7 duplicate ID (its first row was already wrong)
    ]
    result = validate_submission(csv_bytes(lines), EXPECTED)
    assert [(p.line, p.rule) for p in result.problems] == [
        (2, "duplicate-index"), (3, "empty-row"), (4, "too-short"), (5, "unknown-id"),
        (6, "incomplete-permutation"), (7, "duplicate-id"), (None, "missing-id"),
    ]
    assert re.search(rf"2 of the 5 test graphs have no row \(1 tile:xla, 1 layout:nlp:random\): {TILE_ONE}, "
                     rf"{NLP};", result.problems[-1].message)
    assert result.rows == {}
    assert not result.problems_truncated


def test_missing_ids_are_listed_capped_with_their_count():
    expected = {f"tile:xla:{i:032x}": 5 for i in range(12)}
    result = validate_submission(csv_bytes([f"tile:xla:{0:032x},0;1;2;3;4"]), expected)
    (problem,) = result.problems
    assert problem.rule == "missing-id"
    assert problem.message.startswith("11 of the 12 test graphs have no row (11 tile:xla): ")
    assert problem.message.count("tile:xla:0") == 5 and ", ...;" in problem.message


def test_broken_lines_still_count_their_id_as_present():
    # An undecodable or mis-split row names its graph: it must not be reported missing as well.
    lines = [*good_lines()[:-2], f"{XLA},0;1;2\x00", f"{NLP},0;1,2"]
    result = validate_submission(csv_bytes(lines), EXPECTED)
    assert [(p.rule, p.row_id) for p in result.problems] == [("binary", XLA), ("extra-column", NLP)]


def test_a_junk_id_is_clipped_in_the_problem():
    result = validate_submission(plus("x" * 5000 + ",0"), EXPECTED)
    assert result.problems[0].row_id == "x" * 200 + "..."
    assert len(str(result.problems[0])) < 400


def other_competition_lines(count: int) -> list[str]:
    """Rows of a submission made for other test files: well-formed IDs, none of them ours."""
    return [f"tile:xla:{i:032x},0;1;2;3;4" for i in range(count)]


# (case id, file bytes, the problems' rule codes, the first message's regex): files whose every ID misses.
NO_ID_MATCHES = [
    ("other-competition", csv_bytes(other_competition_lines(60)), ["unknown-id", "missing-id"],
     r"^none of the 60 IDs in the file names a test graph of these test files \(the first is "
     r"'tile:xla:0{32}'\); these test files' IDs look like tile:xla:a{32}\. Is the submission for "
     r"other data, or for another seed of the embedded competition\?$"),
    ("columns-swapped-values", csv_bytes([f"{c},{r}" for r, c in CELLS.items()]),
     ["unknown-id", "missing-id"],
     r"^none of the 5 values in the ID column is an ID '<collection>:<file stem>' \(the first is "
     r"'17;3;1200;0;5'\); are the columns swapped, or shifted by an extra field\?$"),
    ("a-single-unknown-id", csv_bytes(other_competition_lines(1)), ["unknown-id", "missing-id"],
     r"^no test graph has the ID 'tile:xla:0{32}'; IDs name the test files"),
]


@pytest.mark.parametrize(("data", "rules", "message"),
                         [pytest.param(*case[1:], id=case[0]) for case in NO_ID_MATCHES])
def test_a_file_whose_ids_all_miss_says_so_once(data, rules, message):
    result = validate_submission(data, EXPECTED)
    assert [p.rule for p in result.problems] == rules, [str(p) for p in result.problems]
    assert re.search(message, result.problems[0].message), result.problems[0].message
    assert result.problems[0].line == 2


def test_unknown_ids_before_the_first_known_one_are_listed_in_file_order():
    lines = [*other_competition_lines(2), *good_lines()[:2], "junk,1", *good_lines()[2:]]
    result = validate_submission(csv_bytes(lines), EXPECTED)
    assert [(p.line, p.rule) for p in result.problems] == [(2, "unknown-id"), (3, "unknown-id"),
                                                           (6, "unknown-id")]


def test_unknown_ids_and_broken_lines_before_the_first_known_id_keep_file_order():
    lines = [*other_competition_lines(1), f"{other_competition_lines(1)[0][:-1]}\x07", *good_lines()]
    result = validate_submission(csv_bytes(lines), EXPECTED)
    assert [(p.line, p.rule) for p in result.problems] == [(2, "unknown-id"), (3, "binary")]


@pytest.mark.parametrize("first_column", ["", "Unnamed: 0"])
def test_pandas_index_column_gets_the_index_false_hint(first_column):
    lines = [f"{i},{line}" for i, line in enumerate(good_lines())]
    result = validate_submission(csv_bytes(lines, header=f"{first_column},ID,TopConfigs"), EXPECTED)
    assert [p.rule for p in result.problems] == ["extra-column"]
    assert result.problems[0].message.endswith(
        "it looks like pandas' index column: write the file with to_csv(..., index=False)")


# --------------------------------------------------------------------------------------------------
# What Kaggle accepts

SHUFFLED = [good_lines()[i] for i in (3, 0, 4, 2, 1)]
VALID_FILES = [
    ("plain", GOOD, {}),
    ("crlf", csv_bytes(good_lines(), newline="\r\n"), {}),
    ("utf8-bom", b"\xef\xbb\xbf" + GOOD, {}),
    ("bom-crlf-no-final-newline", b"\xef\xbb\xbf" + csv_bytes(good_lines(), newline="\r\n", final=False), {}),
    ("no-final-newline", csv_bytes(good_lines(), final=False), {}),
    ("one-trailing-empty-line", GOOD + b"\n", {}),
    ("one-trailing-empty-crlf-line", csv_bytes(good_lines(), newline="\r\n") + b"\r\n", {}),
    ("shuffled-rows", csv_bytes(SHUFFLED), {}),
    ("quoted-fields", csv_bytes([f'"{r}","{c}"' for r, c in CELLS.items()], header='"ID","TopConfigs"'), {}),
    ("some-quoted",
     csv_bytes([f'"{r}",{c}' if i % 2 else f'{r},"{c}"' for i, (r, c) in enumerate(CELLS.items())]), {}),
    ("swapped-columns", csv_bytes([f"{c},{r}" for r, c in CELLS.items()], header="TopConfigs,ID"), {}),
    ("long-tile-row", with_cell(TILE, "17;3;1200;0;5;6;7;8;9;10;1233"),
     {TILE: [17, 3, 1200, 0, 5, 6, 7, 8, 9, 10, 1233]}),
    ("full-ranking-tile-row", with_cell(TILE, ";".join(map(str, range(1233, -1, -1)))),
     {TILE: list(range(1233, -1, -1))}),
    ("short-rows-on-small-graphs", with_cell(TILE_SMALL, "1;2;0"), {TILE_SMALL: [1, 2, 0]}),
    ("spaces-around-indices", with_cell(TILE, " 17 ; 3;1200 ;  0;5  "), {}),
    ("leading-zeros", with_cell(TILE, "017;003;1200;0;005"), {}),
]


@pytest.mark.parametrize(("data", "changed"), [pytest.param(*case[1:], id=case[0]) for case in VALID_FILES])
def test_valid_variants_are_accepted(data, changed):
    result = validate_submission(data, EXPECTED)
    assert result.ok, [str(p) for p in result.problems]
    want = {**PARSED, **{row_id: np.array(v) for row_id, v in changed.items()}}
    assert result.rows.keys() == want.keys()
    for row_id, indices in want.items():
        assert result.rows[row_id].dtype == np.int64
        np.testing.assert_array_equal(result.rows[row_id], indices)


def test_path_and_binary_file_sources(tmp_path):
    path = tmp_path / "submission.csv"
    path.write_bytes(GOOD)
    assert validate_submission(path, EXPECTED).ok
    assert validate_submission(str(path), EXPECTED).ok
    with open(path, "rb") as fh:
        assert validate_submission(fh, EXPECTED).ok
    with pytest.raises(FileNotFoundError):
        validate_submission(tmp_path / "absent.csv", EXPECTED)
    with open(path) as fh, pytest.raises(TypeError, match="binary mode"):
        validate_submission(fh, EXPECTED)
    with pytest.raises(TypeError, match="path, bytes or a binary file object"):
        validate_submission(12, EXPECTED)


def test_bad_expected_mapping_is_a_host_error():
    with pytest.raises(ValueError, match="at least one config"):
        validate_submission(GOOD, {TILE: 0})
    with pytest.raises(ValueError, match="expected IDs: ID 'nope'"):
        validate_submission(GOOD, {"nope": 3})


@SETTINGS
@given(order=st.permutations(range(len(CELLS))))
def test_row_order_never_changes_the_rows(order):
    lines = good_lines()
    result = validate_submission(csv_bytes([lines[i] for i in order]), EXPECTED)
    assert result.ok
    assert list(result.rows) == [list(CELLS)[i] for i in order]
    for row_id, indices in PARSED.items():
        np.testing.assert_array_equal(result.rows[row_id], indices)


# --------------------------------------------------------------------------------------------------
# The per-row rule on its own


@st.composite
def layout_permutations(draw):
    n = draw(st.integers(1, 300))
    return draw(st.permutations(range(n)))


@SETTINGS
@given(order=layout_permutations(), data=st.data())
def test_any_layout_permutation_passes_and_any_one_change_fails(order, data):
    n = len(order)
    cell = ";".join(map(str, order))
    np.testing.assert_array_equal(parse_top_configs(cell, LAYOUT_COLLECTION, n), order)

    position = data.draw(st.integers(0, n - 1), label="position")
    removed = order[:position] + order[position + 1:]
    with pytest.raises(RowError) as info:
        parse_top_configs(";".join(map(str, removed)), LAYOUT_COLLECTION, n)
    assert info.value.rule == ("empty-row" if n == 1 else "incomplete-permutation")
    if n > 1:
        assert f"e.g. {order[position]}" in str(info.value)

    duplicated = [*order[:position], order[position], *order[position:]]
    with pytest.raises(RowError) as info:
        parse_top_configs(";".join(map(str, duplicated)), LAYOUT_COLLECTION, n)
    assert info.value.rule == "too-long"

    if n > 1:
        other = data.draw(st.integers(0, n - 1).filter(lambda i: i != position), label="other")
        replaced = list(order)
        replaced[other] = order[position]
        with pytest.raises(RowError) as info:
            parse_top_configs(";".join(map(str, replaced)), LAYOUT_COLLECTION, n)
        assert info.value.rule == "duplicate-index"
        assert f"lists config {order[position]} twice" in str(info.value)


def reference_row_rule(cell: str, is_tile: bool, n: int) -> str | list[int]:
    """The per-row rule written the slow, obvious way: a rule code, or the parsed indices."""
    if cell.strip(" ") == "":
        return "empty-row"
    values = []
    for item in cell.split(";"):
        value = item.strip(" ")
        if value == "":
            return "empty-item"
        if all(ch in "0123456789" for ch in value):
            if len(value) > 18:
                return "index-out-of-range"
            values.append(int(value))
        elif value[0] == "-" and len(value) > 1 and all(ch in "0123456789" for ch in value[1:]):
            return "negative-index"
        else:
            return "not-integer"
    if any(v >= n for v in values):
        return "index-out-of-range"
    if not is_tile and len(values) > n:
        return "too-long"
    if len(set(values)) != len(values):
        return "duplicate-index"
    if len(values) < (min(5, n) if is_tile else n):
        return "too-short" if is_tile else "incomplete-permutation"
    return values


NEAR_VALID_CELLS = st.lists(
    st.tuples(st.sampled_from(["", " ", "  "]), st.integers(-2, 14), st.sampled_from(["", " ", "  "])),
    max_size=14,
).map(lambda items: ";".join(f"{a}{v}{b}" for a, v, b in items))
JUNK_CELLS = st.text(alphabet="0123456789; -+.\t,x\u0663e", max_size=24)


@SETTINGS
@given(cell=st.one_of(NEAR_VALID_CELLS, JUNK_CELLS), is_tile=st.booleans(), n=st.integers(1, 12))
def test_fast_row_rule_agrees_with_the_reference(cell, is_tile, n):
    collection = TILE_COLLECTION if is_tile else LAYOUT_COLLECTION
    want = reference_row_rule(cell, is_tile, n)
    try:
        got = parse_top_configs(cell, collection, n)
    except RowError as exc:
        assert exc.rule == want, str(exc)
    else:
        assert isinstance(want, list), f"accepted a row the reference refuses with {want}"
        assert got.dtype == np.int64 and got.tolist() == want


@pytest.mark.parametrize(
    ("cell", "collection", "n", "want"),
    [
        ("4;0; 2;1;3", "tile:xla", 7, [4, 0, 2, 1, 3]),
        (7, "tile:xla", 8, "too-short"),
        (np.int64(0), "tile:xla", 1, [0]),
        (0.0, "layout:nlp:default", 1, [0]),  # pandas upcasts an int column with an empty cell to float
        (float("nan"), "tile:xla", 3, "empty-row"),
        (None, "tile:xla", 3, "empty-row"),
        (True, "tile:xla", 3, "not-integer"),
        (1.5, "tile:xla", 3, "not-integer"),
    ],
)
def test_dataframe_cells(cell, collection, n, want):
    if isinstance(want, str):
        with pytest.raises(RowError) as info:
            parse_top_configs(cell, collection, n)
        assert info.value.rule == want
    else:
        np.testing.assert_array_equal(parse_top_configs(cell, COLLECTION_BY_NAME[collection], n), want)


def test_row_rule_refuses_a_graph_without_configs():
    with pytest.raises(ValueError, match="at least one config"):
        parse_top_configs("0", TILE_COLLECTION, 0)


def test_validate_rows_is_the_dataframe_path():
    # pandas reads a one-index cell as a number when the column allows it.
    cells = [0 if row_id == TILE_ONE else cell for row_id, cell in CELLS.items()]
    frame = pd.DataFrame({"ID": list(CELLS), "TopConfigs": cells}, dtype=object)
    result = validate_rows(zip(frame.ID, frame.TopConfigs, strict=True), EXPECTED)
    assert result.ok and result.rows.keys() == PARSED.keys()

    bad = pd.DataFrame({"ID": [TILE, TILE, "nope", NLP, float("nan"), True, XLA],
                        "TopConfigs": ["0;1;2;3;4", "0;1;2;3;4", "0", None, None, "0", False]}, dtype=object)
    result = validate_rows(zip(bad.ID, bad.TopConfigs, strict=True), EXPECTED)
    assert [(p.line, p.row_id, p.rule) for p in result.problems] == [
        (None, TILE, "duplicate-id"), (None, "nope", "unknown-id"), (None, NLP, "empty-row"),
        (None, None, "empty-row"), (None, "True", "unknown-id"), (None, XLA, "not-integer"),
        (None, None, "missing-id"),
    ]
    assert "already has a row earlier in the submission" in result.problems[0].message
    assert str(result.problems[2]).startswith(f"ID {NLP}: TopConfigs is empty")


# --------------------------------------------------------------------------------------------------
# Bounded reading and problem caps


class CountingReader(io.RawIOBase):
    """A binary file object that counts the bytes handed out by read()."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self._data.read(size)
        self.bytes_read += len(chunk)
        return chunk


class TrickleReader(CountingReader):
    """Hands out one byte per read(), like a slow pipe."""

    def read(self, size: int = -1) -> bytes:
        return super().read(1)


@pytest.mark.parametrize("data",
                         [b"\xef\xbb\xbf" + GOOD, csv_bytes(good_lines(), newline="\r\n", final=False)])
def test_reads_that_return_little_data_change_nothing(data):
    result = validate_submission(TrickleReader(data), EXPECTED)
    assert result.ok and result.rows.keys() == PARSED.keys()


def test_a_file_over_the_size_cap_is_refused_without_reading_it_all():
    expected = {f"tile:xla:{i:032x}": 5 for i in range(42_000)}
    data = csv_bytes([f"{row_id},0;1;2;3;4" for row_id in expected])
    assert len(data) > 2 * 2**20
    reader = CountingReader(data)
    result = validate_submission(reader, expected, max_bytes=2**20)
    assert [p.rule for p in result.problems] == ["too-large"]
    assert "larger than the 1 MiB limit" in result.problems[0].message
    assert "about 2.1 MiB" in result.problems[0].message
    assert reader.bytes_read <= 2**20 + 1
    assert validate_submission(data, expected).ok  # the same file is fine under the default cap


def test_a_path_over_the_size_cap_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.csv"
    path.write_bytes(b"junk\x00" * 1000)
    result = validate_submission(path, EXPECTED, max_bytes=1000)
    assert [p.rule for p in result.problems] == ["too-large"]


def test_an_overlong_line_is_refused_as_soon_as_the_cap_is_crossed():
    reader = CountingReader(b"ID,TopConfigs\n" + b"7;" * 2**20)
    result = validate_submission(reader, EXPECTED)
    assert [(p.rule, p.line) for p in result.problems] == [("line-too-long", 2)]
    assert reader.bytes_read < 200_000  # the default cap for these graphs is ~14 KB, read in 64 KiB chunks


def test_max_problems_truncates_and_stops():
    data = plus(*(f"tile:xla:{i:032x},0;1;2;3;4" for i in range(10)))
    result = validate_submission(data, EXPECTED, max_problems=3)
    assert len(result.problems) == 3 and result.problems_truncated and not result.ok
    assert [p.line for p in result.problems] == [NEXT_LINE, NEXT_LINE + 1, NEXT_LINE + 2]
    report = format_problems(result, source_name="sub.csv")
    assert report.splitlines()[-2] == "sub.csv: ... and more problems (validation stopped after the first 3)"
    assert report.splitlines()[-1] == "sub.csv: INVALID submission, 3+ problems (3 unknown-id)"
    with pytest.raises(ValueError, match="max_problems"):
        validate_submission(GOOD, EXPECTED, max_problems=0)


def test_format_problems():
    ok = format_problems(validate_submission(GOOD, EXPECTED), source_name="sub.csv")
    assert ok == "sub.csv: valid submission, 5 rows (3 tile:xla, 1 layout:xla:default, 1 layout:nlp:random)"
    bad = format_problems(validate_submission(with_cell(TILE, "1;1;2;3;4"), EXPECTED), source_name="sub.csv")
    assert bad.splitlines() == [
        f"sub.csv: line {LINE[TILE]} (ID {TILE}): TopConfigs lists config 1 twice (items 1 and 2); "
        f"each config may appear only once [duplicate-index]",
        "sub.csv: INVALID submission, 1 problem (1 duplicate-index)",
    ]
    assert format_problems(ValidationResult(), source_name="x").startswith("x: valid submission, 0 rows")


CSV_PIECES = ["ID", "TopConfigs", ",", ";", '"', '""', "\n", "\r\n", "\r", "0", "12", "1233", " ", "\t", "-",
              "9" * 20, TILE, XLA, TILE_ONE, "tile:xla:", ":", "\x00", "\xe9", "\ufeff"]
CSV_JUNK = st.lists(st.sampled_from(CSV_PIECES), max_size=50).map("".join)


@settings(derandomize=True, deadline=None, max_examples=400)
@given(data=st.one_of(
    st.binary(max_size=300),
    CSV_JUNK.map(str.encode),
    CSV_JUNK.map(lambda text: text.encode("latin-1", "replace")),
    CSV_JUNK.map(lambda text: b"ID,TopConfigs\n" + text.encode()),
))
def test_never_a_traceback(data):
    result = validate_submission(data, EXPECTED, max_line_bytes=200)
    assert result.ok or result.problems
    for problem in result.problems:
        assert problem.rule in RULES and str(problem)


# --------------------------------------------------------------------------------------------------
# Expected IDs from a data directory


def make_tile(c: int) -> TileGraph:
    return TileGraph(
        node_feat=np.zeros((2, 140), dtype=np.float32),
        node_opcode=np.ones(2, dtype=np.uint8),
        edge_index=np.array([[1, 0]], dtype=np.int64),
        config_runtime=np.zeros(c, dtype=np.int64),  # test files carry zero runtimes
        config_feat=np.zeros((c, 24), dtype=np.float32),
        config_runtime_normalizers=np.zeros(c, dtype=np.int64),
    )


def make_layout(c: int) -> LayoutGraph:
    return LayoutGraph(
        node_feat=np.zeros((2, 140), dtype=np.float32),
        node_opcode=np.ones(2, dtype=np.uint8),
        edge_index=np.array([[1, 0]], dtype=np.int64),
        config_runtime=np.zeros(c, dtype=np.int64),
        node_config_feat=np.zeros((c, 1, 18), dtype=np.float32),
        node_config_ids=np.array([1], dtype=np.int64),
        node_splits=np.array([[0]], dtype=np.int64),
    )


@pytest.fixture
def data_dir(tmp_path):
    root = tmp_path / "predict-ai-model-runtime"
    for i, collection in enumerate(COLLECTIONS):
        folder = root / collection.npz_subdir
        make = make_tile if collection.task.name == "tile" else make_layout
        save_graph(make(3 + i), folder / "test" / f"{i:032x}.npz")
        save_graph(make(9), folder / "train" / "resnet50.4x4.fp16.npz")  # not a test graph
    save_graph(make_tile(2), root / "npz_all/npz/tile/xla/test" / ("e" * 32 + ".npz"))
    return root


def test_expected_from_data_dir(data_dir):
    expected = expected_from_data_dir(data_dir)
    assert expected == {
        "tile:xla:" + "0" * 32: 3,
        "tile:xla:" + "e" * 32: 2,
        "layout:xla:default:" + "0" * 31 + "1": 4,
        "layout:xla:random:" + "0" * 31 + "2": 5,
        "layout:nlp:default:" + "0" * 31 + "3": 6,
        "layout:nlp:random:" + "0" * 31 + "4": 7,
    }
    # The npz/ folder of the upstream mirror works the same way.
    assert expected_from_data_dir(data_dir / "npz_all" / "npz") == expected
    sample = csv_bytes([f"{r},{';'.join(map(str, range(n)))}" for r, n in expected.items()])
    assert validate_submission(sample, expected).ok


def test_expected_from_data_dir_names_what_is_missing(data_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        expected_from_data_dir(tmp_path / "absent")
    for npz in (data_dir / "npz_all/npz/layout/nlp/default/test").glob("*.npz"):
        npz.unlink()
    held = ("this folder holds test graphs of: tile:xla, layout:xla:default, layout:xla:random, "
            "layout:nlp:random; name the collections a submission covers with --collection, e.g. "
            "--collection tile:xla")
    with pytest.raises(FileNotFoundError,
                       match=r"no test graphs of layout:nlp:default \(looked in .*layout/nlp/"
                             r"default/test\); " + re.escape(held)):
        expected_from_data_dir(data_dir)
    (data_dir / "npz_all/npz/layout/nlp/default/test").rmdir()
    with pytest.raises(FileNotFoundError, match=re.escape(held)):
        expected_from_data_dir(data_dir)
    # A partial tree is fine for the collections it holds.
    assert expected_from_data_dir(data_dir, [COLLECTION_BY_NAME["tile:xla"]])


def test_expected_from_data_dir_refuses_a_graph_without_configs(data_dir):
    save_graph(make_tile(0), data_dir / "npz_all/npz/tile/xla/test" / ("f" * 32 + ".npz"))
    with pytest.raises(DataFormatError, match="f{32}.npz: the graph has no configs"):
        expected_from_data_dir(data_dir)


# --------------------------------------------------------------------------------------------------
# A Kaggle-sized submission


def test_kaggle_sized_submission_validates():
    rng = np.random.default_rng(0)
    expected = {f"tile:xla:{rng.bytes(16).hex()}": int(n) for n in rng.integers(2, 10_000, size=844)}
    for collection, count in zip(COLLECTIONS[1:], (8, 8, 17, 17), strict=True):
        expected.update({collection.row_id(rng.bytes(16).hex()): 1000 for _ in range(count)})
    lines = [
        f"{row_id},{';'.join(map(str, rng.permutation(n)[: 5 if row_id.startswith('tile') else n]))}"
        for row_id, n in expected.items()
    ]
    result = validate_submission(csv_bytes(lines), expected)
    assert result.ok and len(result.rows) == 894
    assert sum(len(v) for v in result.rows.values()) == 844 * 5 + 50 * 1000
