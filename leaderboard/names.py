"""Team names as a person sees them: two names that look the same are the same name.

Characters that render as nothing or as a blank are refused outright (``invisible``): Unicode's
Default_Ignorable_Code_Point (variation selectors, the combining grapheme joiner, zero-width spaces and
joiners, soft hyphen, Mongolian free variation selectors, Khmer inherent vowels, the Hangul fillers,
tag characters), the Braille blank U+2800, the halfwidth Hangul filler, the Khitan filler, and
unassigned code points (a font draws them as nothing or a box). A name holding one would look like the
name without it while being another string. Then:

``name_key`` is what uniqueness is checked on (a unique column of the team table):

1. Unicode NFKC (full-width and other compatibility forms become their plain letters: "ＡＢ" is "AB");
2. whitespace collapsed to single spaces and trimmed ("Team  B" is "Team B");
3. the confusable characters mapped to their prototype, Unicode TR39's *skeleton* (Cyrillic "А" and
   Greek "Α" are Latin "A", "rn" and "m" look alike), computed by ICU's spoof checker (PyICU), the
   reference implementation of TR39 with Unicode's own confusables table;
4. case-folded, and the skeleton taken once more, so that a capital that only looks like another
   capital (Cyrillic "В" and Latin "B") still meets it after folding.

>>> name_key("Team  B") == name_key("team b") == name_key("Team \u0412")
True
>>> name_key("Team A") == name_key("Team \u0410")  # Cyrillic A
True
>>> name_key("Team A") == name_key("Team B")
False
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

MAX_TEAM_NAME = 100


def displayed(name: str) -> str:
    """The name as stored and shown: NFKC, whitespace collapsed and trimmed."""
    return " ".join(unicodedata.normalize("NFKC", name).split())


# Blank-rendering characters: U+2800 and U+16FE4 are not Default_Ignorable_Code_Point; the Hangul fillers
# are, and are listed for the reader.
_BLANK_GLYPHS = "\\u2800\\u3164\\u115F\\u1160\\uFFA0\\U00016FE4"


@lru_cache(maxsize=1)
def _invisible_set():
    import icu

    found = icu.UnicodeSet(f"[[:Default_Ignorable_Code_Point:][:Cn:]{_BLANK_GLYPHS}]")
    found.freeze()  # read-only from here: safe to share between threads
    return found


def invisible(text: str) -> str | None:
    """The first character of ``text`` that renders as nothing or as a blank, or None."""
    found = _invisible_set()
    return next((ch for ch in text if found.contains(ch)), None)


@lru_cache(maxsize=1)
def _spoof_checker():
    import icu  # PyICU: imported when a name is first checked, never by help or settings

    return icu.SpoofChecker()


def skeleton(text: str) -> str:
    """Unicode TR39's skeleton of ``text`` (NFD, confusables mapped to their prototype, NFD)."""
    return _spoof_checker().getSkeleton(0, text)


def name_key(name: str) -> str:
    """What two team names are compared on: equal keys look alike to a person."""
    return skeleton(skeleton(displayed(name)).casefold())


def check_team_name(name: str) -> str:
    """The name to store (see ``displayed``); ValueError for an empty, over-long or multi-line one, or one
    with a character that renders as nothing or as a blank (``invisible``)."""
    from leaderboard.service.competition import breaks_the_line

    if any(breaks_the_line(ch) for ch in name):  # format characters (zero-width ones) included
        raise ValueError("a team name cannot contain control characters or line separators")
    shown = displayed(name)
    hidden = invisible(name) or invisible(shown)
    if hidden is not None:
        raise ValueError(f"a team name cannot contain U+{ord(hidden):04X} "
                         f"({unicodedata.name(hidden, 'an unassigned code point')}): it renders as nothing "
                         "or as a blank, so the name would look like another")
    if not shown:
        raise ValueError("a team name cannot be empty")
    if len(shown) > MAX_TEAM_NAME:
        raise ValueError(f"a team name has at most {MAX_TEAM_NAME} characters, got {len(shown)}")
    return shown
