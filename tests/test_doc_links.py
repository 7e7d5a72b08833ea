"""The reference pages hold together: links resolve, the README keeps its size, no page dates itself.

- Every relative link in README.md, BENCHMARKS.md, CHANGELOG.md, notebooks/README.md and docs/ (the
  journal included) names a file or folder that exists, and its ``#anchor``, if any, is a heading of
  that page as GitHub slugs it (or an explicit ``<a id=...>`` / ``<a name=...>``).
- The README stays a five-minute read (issue 50): at most 250 lines and 1,800 words, its quick start at
  most 300 words, at most 40 decimal figures outside the demo's printed table.
- The reference pages say what is, not when it changed: no "since <date>", no numbered sessions or
  rounds of work. The journal (docs/journal/) is where dates belong.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
JOURNAL = ROOT / "docs" / "journal"


def linked_pages() -> list[Path]:
    pages = [ROOT / name for name in ("README.md", "BENCHMARKS.md", "CHANGELOG.md", "notebooks/README.md")]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in pages if p.exists()]


def reference_pages() -> list[Path]:
    """The pages that say what is: every linked page but the journal and the changelog."""
    return [p for p in linked_pages() if JOURNAL not in p.parents and p.name != "CHANGELOG.md"]


FENCE = re.compile(r"^(```|~~~)")


def prose_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, text) of the lines outside fenced code blocks, inline code spans blanked."""
    out, fenced = [], False
    for number, line in enumerate(markdown.splitlines(), start=1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, re.sub(r"`[^`]*`", "``", line)))
    return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation removed, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.strip().lower()
    kept = [c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN"]
    return "".join(kept).replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = github_slug(heading.group(1))
            count = seen.get(slug, 0)
            anchors.add(slug if count == 0 else f"{slug}-{count}")
            seen[slug] = count + 1
        anchors.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return anchors


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def broken_links(page: Path) -> list[str]:
    problems = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path_part, _, anchor = target.partition("#")
            where = f"{page.relative_to(ROOT)}:{number}: {target}"
            destination = (page.parent / path_part).resolve() if path_part else page
            if not destination.exists():
                problems.append(f"{where} (no such file)")
                continue
            if anchor and destination.suffix == ".md" and anchor not in anchors_of(destination):
                problems.append(f"{where} (no heading with that anchor in {destination.relative_to(ROOT)})")
    return problems


def test_github_slugs():
    assert github_slug("Real data (`make bench-real`)") == "real-data-make-bench-real"
    assert github_slug("Full-size rehearsal (`python -m benchmarks.bench_fullscale`)") == \
        "full-size-rehearsal-python--m-benchmarksbench_fullscale"
    assert github_slug("gbdt: design choices") == "gbdt-design-choices"
    assert github_slug("The [link](x.md) and **bold**") == "the-link-and-bold"


def test_the_checker_finds_a_broken_link_and_anchor(tmp_path, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# Title\n\n## A section\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#a-section) [gone](c.md) [bad](a.md#nowhere) [web](https://x.org)\n"
                    "```\n[in code](nowhere.md)\n```\n", encoding="utf-8")
    assert [p.split(": ", 1)[1] for p in broken_links(page)] == [
        "c.md (no such file)", "a.md#nowhere (no heading with that anchor in a.md)"]


@pytest.mark.parametrize("page", linked_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    assert broken_links(page) == []


# -- the README's size (issue 50) ---------------------------------------------------------------------

DECIMAL = re.compile(r"(?<![\w.])[-+]?\d+\.\d+(?![\w.])")


def words(text: str) -> int:
    return len(text.split())


def section(markdown: str, title_prefix: str) -> str:
    match = re.search(rf"^## {re.escape(title_prefix)}.*?$(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert match, f"README.md has no section starting '## {title_prefix}'"
    return match.group(1)


def without_printed_output(markdown: str) -> str:
    """The markdown without its fenced blocks that have no language: the demo's printed table, which
    shows what the program prints rather than figures the README states."""
    kept, inside, printed = [], False, False
    for line in markdown.splitlines():
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and not inside:
            inside, printed = True, fence.group(1) == ""
        elif fence:
            inside = False
            if printed:
                continue
        if not (inside and printed) and not (fence and printed):
            kept.append(line)
    return "\n".join(kept) + "\n"


def test_the_readme_is_a_five_minute_read():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert words(text) <= 1800
    assert words(without_printed_output(section(text, "Quick start"))) <= 300
    decimals = DECIMAL.findall(without_printed_output(text))
    assert len(decimals) <= 40, decimals


def test_the_decimal_count_skips_versions_and_printed_output():
    text = "scores 0.44 and -0.02, torch 2.13.0 and 127.0.0.1 are not figures\n```\n0.5 0.6\n```\n"
    assert DECIMAL.findall(without_printed_output(text)) == ["0.44", "-0.02"]


# -- reference pages say what is ------------------------------------------------------------------------

DATED = re.compile(
    r"\bsince\s+(?:\d{4}-\d{2}-\d{2}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d{1,2})"
    r"|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\s+"
    r"(?:session|round)\b"
    r"|\bsession\s+\d+\b",
    re.I)


def test_the_pattern_finds_dates_and_numbered_rounds():
    for dated in ("since 2026-11-27", "Since Nov 26", "the ninth session", "session 3", "the 4th round"):
        assert DATED.search(dated), dated
    for fine in ("since version 4", "a web session", "rounds of boosting", "from round 100 to 300"):
        assert not DATED.search(fine), fine


@pytest.mark.parametrize("page", reference_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_reference_pages_do_not_date_themselves(page):
    found = [f"{page.relative_to(ROOT)}:{n}: {m.group(0)}" for n, line in prose_lines(page.read_text("utf-8"))
             for m in DATED.finditer(line)]
    assert found == [], "history goes to docs/journal/ (or git):\n" + "\n".join(found)


# -- the journal -----------------------------------------------------------------------------------------

def journal_entries() -> list[Path]:
    return sorted(p for p in JOURNAL.glob("*.md") if p.name != "README.md")


def test_journal_entries_are_dated_and_say_question_protocol_result_decision():
    assert journal_entries(), "docs/journal/ holds no entry"
    for entry in journal_entries():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9.-]+\.md", entry.name), entry.name
        text = entry.read_text(encoding="utf-8")
        missing = [part for part in ("Question", "Protocol", "Result", "Decision")
                   if not re.search(rf"\*\*{part}s?\.?\*\*|^#+ {part}", text, re.M)]
        assert missing == [], f"{entry.relative_to(ROOT)} lacks {missing}"


def test_the_journal_index_lists_every_entry():
    index = (JOURNAL / "README.md").read_text(encoding="utf-8")
    unlisted = [e.name for e in journal_entries() if f"]({e.name})" not in index]
    assert unlisted == [], f"docs/journal/README.md does not list {unlisted}"
