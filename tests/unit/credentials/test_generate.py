"""Generated passwords: length, characters, every class present, safe in a URL as they are."""

from __future__ import annotations

import string
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbuser_operator.credentials.generate import CHARACTER_CLASSES, SYMBOLS, generate_password


@given(length=st.integers(16, 128), character_set=st.sampled_from(sorted(CHARACTER_CLASSES)))
def test_length_characters_and_classes(length: int, character_set: str) -> None:
    password = generate_password(length, character_set)
    assert len(password) == length
    classes = CHARACTER_CLASSES[character_set]
    assert set(password) <= set("".join(classes))
    assert all(set(password) & set(members) for members in classes)
    assert quote(password, safe="") == password  # nothing to escape in a URL, a shell word, a DSN


def test_the_character_sets() -> None:
    alphanumeric = generate_password(128, "Alphanumeric")
    assert set(alphanumeric) <= set(string.ascii_letters + string.digits)
    assert set("".join(CHARACTER_CLASSES["AlphanumericSymbols"])) == set(
        string.ascii_letters + string.digits + SYMBOLS
    )


def test_passwords_differ() -> None:
    assert len({generate_password(16, "Alphanumeric") for _ in range(1000)}) == 1000


def test_symbols_occur_about_as_often_as_the_alphabet_says() -> None:
    drawn = "".join(generate_password(128, "AlphanumericSymbols") for _ in range(200))
    share = sum(drawn.count(symbol) for symbol in SYMBOLS) / len(drawn)
    assert 0.04 < share < 0.08  # 4 of 66 characters: 6 %


@pytest.mark.parametrize(
    ("length", "character_set"), [(15, "Alphanumeric"), (129, "Alphanumeric"), (32, "Hex")]
)
def test_refused(length: int, character_set: str) -> None:
    with pytest.raises(ValueError, match=r"generated password|character set"):
        generate_password(length, character_set)
