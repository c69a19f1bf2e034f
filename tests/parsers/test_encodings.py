"""Legacy single-byte encodings: text files in cp1251, KOI8-R and cp1252 read back exactly.

charset-normalizer's own pick read short or repetitive cp1251 as Korean cp949, KOI8-R as
Shift-JIS or EUC-JP and French cp1252 as Baltic cp1257; the reference here is the text that
was encoded.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from ragtools import parsers
from ragtools.parsers.encoding_guess import SAMPLE_BYTES, guess_encoding
from ragtools.parsers.text import decode_bytes

RUSSIAN = (
    "В начале лета мы поехали к бабушке в деревню. Там был большой сад с яблонями и "
    "вишнями, а за домом начинался густой лес. Каждое утро дедушка уходил на рыбалку к "
    "реке и возвращался только к обеду.\n\n"
    "Москва - столица России, крупнейший по численности населения город страны. Город "
    "расположен на реке Москве в центре Восточно-Европейской равнины. Летом здесь тепло, "
    "а зимой обычно идёт снег, и жители катаются на коньках в парках."
)
#: A log: one line repeated, as services write them.
RUSSIAN_LOG = "Ошибка: файл не найден\n" * 500
RUSSIAN_NOTE = "Привет, мир! Как дела?"
RUSSIAN_LOWER = "строка номер один\nстрока номер два\nпоследняя строка файла\n"
FRENCH = (
    "Café crème brûlée à la française, naïve façade, déjà vu. Les élèves étudient à "
    "l'école, puis ils goûtent une tarte aux pêches près de la fenêtre.\n"
)


@pytest.mark.parametrize("encoding", ["cp1251", "koi8_r"])
@pytest.mark.parametrize(
    "text",
    [RUSSIAN, RUSSIAN_LOG, RUSSIAN_NOTE, RUSSIAN_LOWER],
    ids=["paragraphs", "repetitive-log", "short-note", "lower-case-lines"],
)
def test_russian_in_a_legacy_code_page_is_read_exactly(
    tmp_path: Path, encoding: str, text: str
) -> None:
    path = tmp_path / "ru.txt"
    path.write_bytes(text.encode(encoding))
    (doc,) = parsers.load(path)
    assert doc.text == text.strip()
    assert decode_bytes(text.encode(encoding), path) == text


@pytest.mark.parametrize("repeat", [1, 200])
def test_french_in_cp1252_is_not_read_as_a_baltic_code_page(tmp_path: Path, repeat: int) -> None:
    data = (FRENCH * repeat).encode("cp1252")
    assert guess_encoding(data) == "cp1252"
    assert decode_bytes(data, tmp_path / "fr.txt") == FRENCH * repeat


def test_a_large_file_is_judged_on_a_bounded_sample(tmp_path: Path) -> None:
    data = (FRENCH * 30_000).encode("cp1252")  # ~4 MB
    assert len(data) > 100 * SAMPLE_BYTES
    tracemalloc.start()
    try:
        text = decode_bytes(data, tmp_path / "big.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text == FRENCH * 30_000
    # The decoded text itself is one byte a character; guessing adds only the sample's cost
    # (detection over the whole file used about 14 times the file's size).
    assert peak < 4 * len(data)


def test_the_evidence_past_an_ascii_preamble_is_found(tmp_path: Path) -> None:
    text = "# generated report\n" * 20_000 + RUSSIAN  # the first 300 KB are ASCII
    assert decode_bytes(text.encode("koi8_r"), tmp_path / "report.txt") == text
